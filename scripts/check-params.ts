/**
 * Parameter-list check (DESIGN.md section 5): a function, method, constructor or arrow under src/
 * takes at most four positional parameters and never a boolean flag; beyond that, one options object.
 * Callbacks whose shape a library dictates are listed in EXEMPT by file and name.
 * Prints each finding and exits 1 when there is any.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const MAX_POSITIONAL = 4;

export interface Finding {
  file: string;
  line: number;
  name: string;
  reason: string;
}

/**
 * Signatures a library or the platform fixes, as `file:name`, where the parameter list is not ours:
 * - dots.ts `DotsFn`: the export of the compiled WebAssembly scan module (generated/wasm/scan.js);
 * - script-task.ts `markReady`: the resolve function of a `Promise<boolean>`.
 */
export const EXEMPT = new Set<string>(['src/servers/sidekick/dots.ts:DotsFn', 'src/browser/script-task.ts:markReady']);

function nameOf(node: ts.SignatureDeclaration): string {
  if (ts.isConstructorDeclaration(node)) {
    const cls = node.parent;
    return `${cls.name?.text ?? '<class>'}.constructor`;
  }
  if (node.name && (ts.isIdentifier(node.name) || ts.isPrivateIdentifier(node.name) || ts.isStringLiteral(node.name)))
    return node.name.text;
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (parent && ts.isPropertyAssignment(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (parent && ts.isPropertyDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (parent && ts.isTypeAliasDeclaration(parent)) return parent.name.text;
  return '<anonymous>';
}

function isBooleanParam(p: ts.ParameterDeclaration): boolean {
  if (p.type && p.type.kind === ts.SyntaxKind.BooleanKeyword) return true;
  if (p.type && ts.isUnionTypeNode(p.type)) {
    const kinds = p.type.types.filter(
      (t) =>
        t.kind !== ts.SyntaxKind.UndefinedKeyword &&
        !(ts.isLiteralTypeNode(t) && t.literal.kind === ts.SyntaxKind.NullKeyword),
    );
    if (kinds.length === 1 && kinds[0]!.kind === ts.SyntaxKind.BooleanKeyword) return true;
  }
  const init = p.initializer;
  return !!init && (init.kind === ts.SyntaxKind.TrueKeyword || init.kind === ts.SyntaxKind.FalseKeyword);
}

/** The findings in one source text. */
export function checkSource(file: string, text: string, exempt: ReadonlySet<string> = EXEMPT): Finding[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const findings: Finding[] = [];
  const visit = (node: ts.Node): void => {
    if (
      ts.isFunctionDeclaration(node) ||
      ts.isFunctionExpression(node) ||
      ts.isArrowFunction(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isConstructorDeclaration(node) ||
      ts.isMethodSignature(node) ||
      ts.isFunctionTypeNode(node) ||
      ts.isCallSignatureDeclaration(node)
    ) {
      const name = nameOf(node);
      if (!exempt.has(`${file}:${name}`)) {
        const params = node.parameters.filter((p) => !(ts.isIdentifier(p.name) && p.name.text === 'this'));
        const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
        if (params.length > MAX_POSITIONAL)
          findings.push({ file, line, name, reason: `${params.length} positional parameters` });
        for (const p of params)
          if (isBooleanParam(p)) findings.push({ file, line, name, reason: `boolean parameter ${p.name.getText(sf)}` });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return findings;
}

/** The TypeScript sources below `dir` (declaration files left out). */
export function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (/\.(ts|mts)$/.test(entry) && !entry.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

function main(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const findings = sourceFiles(join(root, 'src')).flatMap((path) =>
    checkSource(relative(root, path), readFileSync(path, 'utf8')),
  );
  for (const f of findings) console.log(`${f.file}:${f.line} ${f.name}: ${f.reason}`);
  if (findings.length > 0) {
    console.log(`${findings.length} parameter-list finding(s): use one options object (DESIGN.md section 5)`);
    process.exitCode = 1;
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
