/**
 * Tools generated from an OpenAPI 3.0 or 3.1 document (spec section 7: application servers
 * may be HTTP APIs described by an API description). One tool per operation; the mapping
 * (names, argument shape) is ours and documented on AppServerUpstream in
 * openapi/management.yaml:
 * - name: operationId, characters outside [A-Za-z0-9_-] replaced by `_`, at most 64
 *   characters; `<method>_<path>` without an operationId; repeats get `_2`, `_3` …;
 * - arguments: path, query and header parameters as top-level properties (a name used twice
 *   becomes `<in>_<name>`), the JSON request body under `body`;
 * - local `$ref`s are inlined (a cycle becomes `{}`), OpenAPI 3.0 `nullable` becomes a type
 *   union, so every inputSchema is self-contained JSON Schema.
 */
import type { JsonSchemaObject, ToolDef } from '../types.js';

type Json = Record<string, unknown>;
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'] as const;
/** OpenAPI: header parameters with these names "SHALL be ignored". */
const IGNORED_HEADERS = new Set(['accept', 'content-type', 'authorization']);
const MAX_NAME = 64;
const MAX_DEPTH = 40;
/** Schema nodes produced per parameter or body at most. */
const MAX_NODES = 20_000;

export interface OperationArg {
  /** Argument name in the tool's input. */
  arg: string;
  /** Name on the wire. */
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  /** Arrays and objects in query strings spread into repeated keys (form, explode). */
  explode: boolean;
}

export interface Operation {
  method: string;
  path: string;
  params: OperationArg[];
  body: { required: boolean; mediaType: string } | undefined;
  /** Every accepted argument name. */
  args: Set<string>;
  required: string[];
}

export interface OpenapiCatalogue {
  tools: ToolDef[];
  operations: Map<string, Operation>;
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Resolves a local JSON pointer (`#/components/schemas/Pet`). */
function pointer(doc: Json, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let cur: unknown = doc;
  for (const raw of ref.slice(2).split('/')) {
    const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObject(cur) && !Array.isArray(cur)) return undefined;
    cur = (cur as Json)[part];
  }
  return cur;
}

/**
 * A copy with local refs inlined and 3.0 `nullable` rewritten; cycles, foreign refs and
 * anything past the depth or size budget (inlining can grow a document a lot) become `{}`.
 */
function inline(
  doc: Json,
  value: unknown,
  {
    budget = { nodes: MAX_NODES },
    seen = [],
    depth = 0,
  }: { budget?: { nodes: number }; seen?: readonly string[]; depth?: number } = {},
): unknown {
  if (depth > MAX_DEPTH || --budget.nodes < 0) return {};
  if (Array.isArray(value)) return value.map((v) => inline(doc, v, { budget, seen, depth: depth + 1 }));
  if (!isObject(value)) return value;
  if (typeof value.$ref === 'string') {
    const ref = value.$ref;
    if (seen.includes(ref)) return {};
    const target = pointer(doc, ref);
    return target === undefined ? {} : inline(doc, target, { budget, seen: [...seen, ref], depth: depth + 1 });
  }
  const out: Json = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === 'nullable' || k === 'example' || k === 'xml' || k === 'externalDocs' || k === 'discriminator') continue;
    out[k] = inline(doc, v, { budget, seen, depth: depth + 1 });
  }
  if (value.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  return out;
}

function deref(doc: Json, v: unknown): Json | undefined {
  for (let i = 0; i < 10 && isObject(v) && typeof v.$ref === 'string'; i++) v = pointer(doc, v.$ref);
  return isObject(v) ? v : undefined;
}

export function sanitizeName(raw: string): string {
  const name = raw
    .replace(/[^A-Za-z0-9_-]/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_+|_+$/g, '');
  return (name || 'operation').slice(0, MAX_NAME);
}

function uniqueName(base: string, taken: Set<string>): string {
  let name = base;
  for (let i = 2; taken.has(name); i++) name = `${base.slice(0, MAX_NAME - String(i).length - 1)}_${i}`;
  taken.add(name);
  return name;
}

function jsonMediaType(content: unknown): string | undefined {
  if (!isObject(content)) return undefined;
  return Object.keys(content).find((m) => /^application\/(?:[\w.+-]+\+)?json(?:;|$)/i.test(m));
}

function describe(op: Json, method: string, path: string): string {
  const parts = [op.summary, op.description].filter((s): s is string => typeof s === 'string' && s.trim() !== '');
  return parts.length ? parts.join('\n\n') : `${method.toUpperCase()} ${path}`;
}

/** Path-level parameters, overridden by operation-level ones with the same name and location. */
function parametersOf(doc: Json, item: Json, op: Json): Json[] {
  const byKey = new Map<string, Json>();
  for (const list of [item.parameters, op.parameters]) {
    if (!Array.isArray(list)) continue;
    for (const raw of list) {
      const p = deref(doc, raw);
      if (p && typeof p.name === 'string' && typeof p.in === 'string') byKey.set(`${p.in}\0${p.name}`, p);
    }
  }
  return [...byKey.values()];
}

function buildOperation(
  doc: Json,
  item: Json,
  op: Json,
  { method, path }: { method: string; path: string },
): { op: Operation; schema: JsonSchemaObject } | undefined {
  const properties: Json = {};
  const required: string[] = [];
  const params: OperationArg[] = [];
  for (const p of parametersOf(doc, item, op)) {
    const where = p.in as string;
    const name = p.name as string;
    if (where !== 'path' && where !== 'query' && where !== 'header') continue; // cookies: not offered
    if (where === 'header' && IGNORED_HEADERS.has(name.toLowerCase())) continue;
    const arg = name in properties || name === 'body' || name === 'PCID' ? `${where}_${name}` : name;
    const rawSchema =
      p.schema ?? (isObject(p.content) ? (Object.values(p.content)[0] as Json | undefined)?.schema : undefined);
    const schema = isObject(rawSchema) ? (inline(doc, rawSchema) as Json) : { type: 'string' };
    properties[arg] = typeof p.description === 'string' ? { ...schema, description: p.description } : schema;
    const isRequired = where === 'path' || p.required === true;
    if (isRequired) required.push(arg);
    const style = typeof p.style === 'string' ? p.style : 'form';
    params.push({ arg, name, in: where, required: isRequired, explode: style === 'form' && p.explode !== false });
  }
  let body: Operation['body'];
  const rb = deref(doc, op.requestBody);
  if (rb && isObject(rb.content) && Object.keys(rb.content).length > 0) {
    const mediaType = jsonMediaType(rb.content);
    if (!mediaType) return undefined; // only JSON bodies are offered
    const rawSchema = (rb.content[mediaType] as Json | undefined)?.schema;
    const schema = isObject(rawSchema) ? (inline(doc, rawSchema) as Json) : {};
    properties.body = typeof rb.description === 'string' ? { ...schema, description: rb.description } : schema;
    body = { required: rb.required === true, mediaType };
    if (body.required) required.push('body');
  }
  const inputSchema: JsonSchemaObject = { type: 'object', properties, required, additionalProperties: false };
  return {
    op: { method: method.toUpperCase(), path, params, body, args: new Set(Object.keys(properties)), required },
    schema: inputSchema,
  };
}

/** The tools of a document; operations that cannot be offered are left out. */
export function buildCatalogue(doc: Json): OpenapiCatalogue {
  const tools: ToolDef[] = [];
  const operations = new Map<string, Operation>();
  const taken = new Set<string>();
  const paths = isObject(doc.paths) ? doc.paths : {};
  for (const [path, rawItem] of Object.entries(paths)) {
    const item = deref(doc, rawItem);
    if (!item) continue;
    for (const method of METHODS) {
      const op = item[method];
      if (!isObject(op)) continue;
      const built = buildOperation(doc, item, op, { method, path });
      if (!built) continue;
      const base = sanitizeName(
        typeof op.operationId === 'string' && op.operationId !== '' ? op.operationId : `${method}_${path}`,
      );
      const name = uniqueName(base, taken);
      const def: ToolDef = { name, description: describe(op, method, path), inputSchema: built.schema };
      if (typeof op.summary === 'string') def.title = op.summary;
      if (method === 'get' || method === 'head') def.annotations = { readOnlyHint: true };
      tools.push(def);
      operations.set(name, built.op);
    }
  }
  return { tools, operations };
}
