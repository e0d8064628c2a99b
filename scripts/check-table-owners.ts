/**
 * Table ownership check (DESIGN.md section 3, src/storage/tables.ts): a file of one context names
 * in SQL only the tables its context owns. It reads every .ts file under src/ and finds the table
 * names of query builder calls (`db('x')`, `trx('x')`, `.from('x')`, `.into('x')`, `.table('x')`,
 * `.join('x', …)`, `.hasTable('x')`, `batch.insertLater('x', …)`, `x as alias` too) and of raw
 * SQL strings (`select … from x`, `insert into x`, `update x set`, `delete from x`, `join x`).
 * A known table named outside its owner, or a builder call naming a table the map does not know,
 * is a finding. The migrations (src/storage/migrations) create every table and are exempt.
 * Prints each finding and exits 1 when there is any.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { OWNER_OF } from '../src/storage/tables.js';

export interface TableFinding {
  /** Path relative to the scanned src/ folder's parent, with `/` separators. */
  file: string;
  line: number;
  table: string;
  /** The context of the file: `<folder>`, `servers/<name>`, or `top` for files directly under src/. */
  context: string;
  /** The owning context, or undefined for a table no context owns. */
  owner: string | undefined;
}

/** Callees whose first argument names a table: knex instances, transactions and builder methods. */
const BUILDER_CALLEES = new Set([
  'db',
  'trx',
  'tx',
  'knex',
  'from',
  'into',
  'table',
  'join',
  'innerJoin',
  'leftJoin',
  'leftOuterJoin',
  'rightJoin',
  'rightOuterJoin',
  'fullOuterJoin',
  'crossJoin',
  'hasTable',
  'hasColumn',
  'createTable',
  'alterTable',
  'dropTable',
  'dropTableIfExists',
  'insertLater',
]);

/** Array.prototype.join(sep) and friends take one argument; knex's joins take two or more (or a callback). */
const JOIN_CALLEES = /^(?:join|innerJoin|leftJoin|leftOuterJoin|rightJoin|rightOuterJoin|fullOuterJoin|crossJoin)$/;
/** Names that hold a knex instance or transaction when passed to a helper (`failedPrecondition(trx, 'x', …)`). */
const STORE_ARG = /^(?:db|trx|tx|knex)$/;

const TABLE_ARG = /^([A-Za-z_]\w*)(?:\s+as\s+\w+)?$/i;
/** A string that is SQL, not prose: a statement shape, not a lone keyword. */
const SQL_SHAPE =
  /\bselect\b[\s\S]*\bfrom\b|\binsert\s+into\b|\bupdate\s+"?\w+"?\s+(?:as\s+\w+\s+|\w+\s+)?set\b|\bdelete\s+from\b|\b(?:create|alter|drop)\s+table\b/i;
const SQL_TABLE = /\b(?:from|into|update|join|table(?:\s+if\s+(?:not\s+)?exists)?)\s+"?([A-Za-z_]\w*)"?/gi;

/** The context a file belongs to, from its path relative to src/; undefined when exempt. */
export function contextOf(pathInSrc: string): string | undefined {
  const parts = pathInSrc.split('/');
  if (parts[0] === 'storage' && parts[1] === 'migrations') return undefined;
  if (parts.length === 1) return 'top';
  if (parts[0] === 'servers' && parts.length > 2) return `servers/${parts[1]}`;
  return parts[0];
}

function calleeName(expr: ts.Expression): string | undefined {
  if (ts.isIdentifier(expr)) return expr.text;
  if (ts.isPropertyAccessExpression(expr)) {
    // `Buffer.from('…')`, `Array.from(…)`: a class's static method, not a query builder.
    if (ts.isIdentifier(expr.expression) && /^[A-Z]/.test(expr.expression.text)) return undefined;
    return expr.name.text;
  }
  return undefined;
}

function isStoreArg(node: ts.Expression): boolean {
  const name = ts.isIdentifier(node) ? node.text : ts.isPropertyAccessExpression(node) ? node.name.text : '';
  return STORE_ARG.test(name);
}

function literalText(node: ts.Node): string | undefined {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isTemplateExpression(node))
    return [node.head.text, ...node.templateSpans.map((s) => s.literal.text)].join(' ? ');
  return undefined;
}

/** The tables one source text names, each with its line (`file` only labels the result). */
export function tablesIn(
  file: string,
  text: string,
  known: ReadonlySet<string> = new Set(OWNER_OF.keys()),
): { line: number; table: string; builder: boolean }[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: { line: number; table: string; builder: boolean }[] = [];
  const lineOf = (node: ts.Node): number => sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && node.arguments.length > 0) {
      const name = calleeName(node.expression);
      const arg = node.arguments[0]!;
      const argText = ts.isStringLiteral(arg) || ts.isNoSubstitutionTemplateLiteral(arg) ? arg.text : undefined;
      const builder =
        name !== undefined && BUILDER_CALLEES.has(name) && !(JOIN_CALLEES.test(name) && node.arguments.length < 2);
      const m = builder && argText !== undefined ? TABLE_ARG.exec(argText) : null;
      if (m) found.push({ line: lineOf(arg), table: m[1]!, builder: true });
      // A helper handed the store and a table name (`orgStamp(db, 'x', …)`): a known table counts.
      else if (node.arguments.some(isStoreArg))
        for (const a of node.arguments)
          if ((ts.isStringLiteral(a) || ts.isNoSubstitutionTemplateLiteral(a)) && known.has(a.text))
            found.push({ line: lineOf(a), table: a.text, builder: false });
    }
    const sql = literalText(node);
    if (sql !== undefined && SQL_SHAPE.test(sql)) {
      for (const m of sql.matchAll(SQL_TABLE)) found.push({ line: lineOf(node), table: m[1]!, builder: false });
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** The crossings in one file: tables of another context, and builder calls on unknown tables. */
export function checkFile(
  pathInSrc: string,
  text: string,
  owners: ReadonlyMap<string, string> = OWNER_OF,
): TableFinding[] {
  const context = contextOf(pathInSrc);
  if (context === undefined) return [];
  const findings: TableFinding[] = [];
  for (const { line, table, builder } of tablesIn(pathInSrc, text, new Set(owners.keys()))) {
    const owner = owners.get(table);
    // A raw SQL string also names CTEs, aliases and VALUES lists: only known tables count there.
    if (owner === undefined && !builder) continue;
    if (owner === context) continue;
    findings.push({ file: `src/${pathInSrc}`, line, table, context, owner });
  }
  return findings;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (/\.(ts|mts)$/.test(entry) && !entry.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** Every finding under `srcDir` (a folder laid out like src/). */
export function checkTree(srcDir: string, owners: ReadonlyMap<string, string> = OWNER_OF): TableFinding[] {
  return sourceFiles(srcDir).flatMap((path) =>
    checkFile(relative(srcDir, path).split(sep).join('/'), readFileSync(path, 'utf8'), owners),
  );
}

export function describeFinding(f: TableFinding): string {
  return f.owner === undefined
    ? `${f.file}:${f.line} names table ${f.table}, which no context owns (src/storage/tables.ts)`
    : `${f.file}:${f.line} (${f.context}) names table ${f.table} of ${f.owner}`;
}

function main(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const findings = checkTree(join(root, 'src'));
  for (const f of findings) console.log(describeFinding(f));
  if (findings.length > 0) {
    console.log(
      `${findings.length} table crossing(s): use the owning context's index.ts (src/storage/tables.ts, DESIGN.md section 3)`,
    );
    process.exitCode = 1;
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
