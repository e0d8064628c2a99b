/**
 * Tool-argument cast check: the embedded servers' handlers (src/servers) get their arguments typed
 * from schemas/tools and validated before they run (src/gateway/embedded.ts), so no `as` or
 * `<T>` assertion under src/servers may apply to them. A finding is an assertion whose operand
 * (through parentheses, property and element accesses, `!` and `?.`) starts at a variable named
 * `args`, the handlers' argument parameter by convention. Prints each finding and exits 1 when
 * there is any.
 */
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { sourceFiles } from './check-params.js';

export interface CastFinding {
  file: string;
  line: number;
  text: string;
}

/** The variable an expression reads from, through accesses, parentheses and non-null assertions. */
function rootOf(expr: ts.Expression): ts.Expression {
  let e = expr;
  for (;;) {
    if (ts.isParenthesizedExpression(e) || ts.isNonNullExpression(e)) e = e.expression;
    else if (ts.isPropertyAccessExpression(e) || ts.isElementAccessExpression(e)) e = e.expression;
    else if (ts.isAsExpression(e) || ts.isTypeAssertionExpression(e) || ts.isSatisfiesExpression(e)) e = e.expression;
    else return e;
  }
}

/** The findings in one source text. */
export function checkCasts(file: string, text: string): CastFinding[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const findings: CastFinding[] = [];
  const visit = (node: ts.Node): void => {
    const parent = node.parent as ts.Node | undefined;
    const outer = !parent || !(ts.isAsExpression(parent) || ts.isTypeAssertionExpression(parent));
    if ((ts.isAsExpression(node) || ts.isTypeAssertionExpression(node)) && outer) {
      const root = rootOf(node.expression);
      if (ts.isIdentifier(root) && root.text === 'args') {
        const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
        findings.push({ file, line, text: node.getText(sf).slice(0, 120) });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return findings;
}

function main(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const findings = sourceFiles(join(root, 'src', 'servers')).flatMap((path) =>
    checkCasts(relative(root, path), readFileSync(path, 'utf8')),
  );
  for (const f of findings) console.log(`${f.file}:${f.line} ${f.text}`);
  if (findings.length > 0) {
    console.log(
      `${findings.length} cast(s) of tool arguments: use the handler's typed arguments (src/servers/README.md)`,
    );
    process.exitCode = 1;
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
