/**
 * Playwright's protocol as the installed playwright-core describes it. The npm package ships no
 * protocol.yml; its validator is bundled in lib/coreBundle.js as `scheme.<Interface>Initializer
 * = …`, `scheme.<Interface><Method>Params = …`, `scheme.<Name> = …` (shared types). The
 * interfaces are exactly the names that have an Initializer; each Params name splits at the
 * longest interface prefix that leaves a capitalised method name. The validator expressions
 * (tObject({…}), tOptional(…), tArray(…), tType("Name"), …) are read by a small parser, not run.
 * Also the CDP commands of the types Playwright ships (types/protocol.d.ts).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export type SchemeNode =
  | { k: 'object'; fields: Map<string, SchemeNode> }
  | { k: 'wrap'; of: SchemeNode }
  | { k: 'ref'; name: string }
  | { k: 'leaf' };

export interface PlaywrightProtocol {
  interfaces: string[];
  /** `<Interface>.<method>` → its Params scheme. */
  methods: Map<string, SchemeNode>;
  /** Every `scheme.<Name>`, for tType references. */
  types: Map<string, SchemeNode>;
}

const PW = path.dirname(createRequire(import.meta.url).resolve('playwright-core/package.json'));

/** Tokens of a validator expression: names, strings and punctuation. */
function tokenize(text: string): string[] {
  return text.match(/"(?:[^"\\]|\\.)*"|[A-Za-z_$][\w$]*|[(){}[\],:]|-?\d+(?:\.\d+)?/g) ?? [];
}

function parse(tokens: string[]): SchemeNode {
  let i = 0;
  const next = () => tokens[i++]!;
  const expect = (t: string) => {
    const got = next();
    if (got !== t) throw new Error(`protocol parser: expected ${t}, got ${got} at ${i}`);
  };
  const skipBalanced = () => {
    let depth = 0;
    do {
      const t = next();
      if (t === '(' || t === '[' || t === '{') depth++;
      if (t === ')' || t === ']' || t === '}') depth--;
    } while (depth > 0);
  };
  const expr = (): SchemeNode => {
    const name = next();
    if (tokens[i] !== '(') return { k: 'leaf' };
    if (name === 'tObject') {
      expect('(');
      expect('{');
      const fields = new Map<string, SchemeNode>();
      while (tokens[i] !== '}') {
        const key = next().replace(/^"|"$/g, '');
        expect(':');
        fields.set(key, expr());
        if (tokens[i] === ',') i++;
      }
      expect('}');
      expect(')');
      return { k: 'object', fields };
    }
    if (name === 'tOptional' || name === 'tArray') {
      expect('(');
      const of = expr();
      expect(')');
      return { k: 'wrap', of };
    }
    if (name === 'tType') {
      expect('(');
      const ref = JSON.parse(next()) as string;
      expect(')');
      return { k: 'ref', name: ref };
    }
    skipBalanced(); // tEnum([...]), tChannel([...]) and other leaves with arguments
    return { k: 'leaf' };
  };
  return expr();
}

let cached: PlaywrightProtocol | undefined;

export function playwrightProtocol(): PlaywrightProtocol {
  if (cached) return cached;
  const text = readFileSync(path.join(PW, 'lib', 'coreBundle.js'), 'utf8');
  const from = text.indexOf('// packages/protocol/src/validator.ts');
  const to = text.indexOf('\n// packages/', from + 1);
  if (from < 0 || to < 0) throw new Error('protocol parser: no validator section in coreBundle.js');
  const bundle = text.slice(from, to);
  const types = new Map<string, SchemeNode>();
  for (const m of bundle.matchAll(/^\s*scheme\.(\w+) = ([\s\S]*?);\n(?=\s*scheme\.|\s*}\n)/gm))
    types.set(m[1]!, parse(tokenize(m[2]!)));
  const interfaces = [...types.keys()].filter((n) => n.endsWith('Initializer')).map((n) => n.slice(0, -11));
  if (interfaces.length < 20) throw new Error('protocol parser: found too few interfaces in coreBundle.js');
  const methods = new Map<string, SchemeNode>();
  for (const [name, node] of types) {
    if (!name.endsWith('Params')) continue;
    const base = name.slice(0, -6);
    const iface = interfaces
      .filter((n) => base.startsWith(n) && /^[A-Z]/.test(base.slice(n.length)))
      .sort((a, b) => b.length - a.length)[0];
    if (!iface) throw new Error(`protocol parser: no interface for ${name}`);
    const rest = base.slice(iface.length);
    methods.set(`${iface}.${rest[0]!.toLowerCase()}${rest.slice(1)}`, node);
  }
  cached = { interfaces, methods, types };
  return cached;
}

/**
 * The dotted paths of every field of `node` whose name matches `pattern`, at any depth
 * (arrays and optionals looked through, named types followed once per path).
 */
export function fieldsNamed(
  node: SchemeNode,
  pattern: RegExp,
  types: Map<string, SchemeNode>,
  prefix = '',
  seen: ReadonlySet<string> = new Set(),
): string[] {
  if (node.k === 'wrap') return fieldsNamed(node.of, pattern, types, prefix, seen);
  if (node.k === 'ref') {
    const target = types.get(node.name);
    if (!target || seen.has(node.name)) return [];
    return fieldsNamed(target, pattern, types, prefix, new Set([...seen, node.name]));
  }
  if (node.k !== 'object') return [];
  const found: string[] = [];
  for (const [key, value] of node.fields) {
    const at = prefix ? `${prefix}.${key}` : key;
    if (pattern.test(key)) found.push(at);
    found.push(...fieldsNamed(value, pattern, types, at, seen));
  }
  return found;
}

/** The CDP commands (`Domain.method`) of playwright-core/types/protocol.d.ts. */
export function cdpCommands(): Set<string> {
  const dts = readFileSync(path.join(PW, 'types', 'protocol.d.ts'), 'utf8');
  const start = dts.indexOf('export interface CommandParameters {');
  const end = dts.indexOf('}', start);
  if (start < 0 || end < 0) throw new Error('protocol.d.ts: no CommandParameters');
  return new Set([...dts.slice(start, end).matchAll(/^\s*"(\w+\.\w+)":/gm)].map((m) => m[1]!));
}

/** Whether a dotted path names a field of `node` (arrays, optionals and named types looked through). */
export function hasField(node: SchemeNode, keys: readonly string[], types: Map<string, SchemeNode>): boolean {
  if (keys.length === 0) return true;
  if (node.k === 'wrap') return hasField(node.of, keys, types);
  if (node.k === 'ref') {
    const target = types.get(node.name);
    return target !== undefined && hasField(target, keys, types);
  }
  if (node.k !== 'object') return false;
  const field = node.fields.get(keys[0]!);
  return field !== undefined && hasField(field, keys.slice(1), types);
}
