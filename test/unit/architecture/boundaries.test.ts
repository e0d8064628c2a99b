/**
 * The layering of src/ (.dependency-cruiser.cjs, also run by `npm run lint`): the real tree has
 * no violation, and a small tree laid out like src/ (test/fixtures/architecture) with a deep
 * cross-context import, a kernel file importing a context, the composition root past an index.ts,
 * the Services bag outside the handler edge, and a lower context importing a higher one that
 * closes a loop has exactly those violations, each named by its rule. The context layers checked
 * are the numbered lines of src/README.md's diagram.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { cruise, type ICruiseResult, type IViolation } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const fixture = path.join(root, 'test/fixtures/architecture');

/** Cruises `src` below `baseDir` with the repository's rules; the violations as "rule: from -> to". */
async function violations(baseDir: string): Promise<string[]> {
  const options = await extractDepcruiseOptions(path.join(root, '.dependency-cruiser.cjs'));
  const tsConfig = extractTSConfig(path.join(root, 'tsconfig.json'));
  const { output } = await cruise(['src'], { ...options, baseDir }, {}, { tsConfig });
  const found = (output as ICruiseResult).summary.violations;
  return found.map((v: IViolation) => `${v.rule.name}: ${v.from} -> ${v.to}`).sort();
}

describe('context boundaries (dependency-cruiser)', function () {
  this.timeout(60_000);

  it('src/ has no violation of the layering', async () => {
    expect(await violations(root)).to.deep.equal([]);
  });

  it('reports each kind of crossing in a tree laid out like src/, by its rule, and nothing else', async () => {
    expect(await violations(fixture)).to.deep.equal([
      'bottom-imports-no-context: src/kernel/leak.ts -> src/runs/index.ts',
      'context-layers: src/runs/polling.ts -> src/triggers/index.ts',
      'context-through-index: src/triggers/call.ts -> src/runs/runs.ts',
      'no-circular: src/runs/index.ts -> src/runs/polling.ts',
      'services-type-at-handler-edge: src/triggers/target.ts -> src/services.ts',
      'top-through-index: src/app.ts -> src/runs/runs.ts',
    ]);
  });

  it('checks the layers drawn in src/README.md, one rule per numbered line, bottom first', async () => {
    const readme = readFileSync(path.join(root, 'src/README.md'), 'utf8');
    const diagram = /## Layers[\s\S]*?```text\n([\s\S]*?)```/.exec(readme)![1]!;
    const drawn = diagram
      .split('\n')
      .map((l) => /^(\d+)\s+(.+)$/.exec(l.trim()))
      .filter((m) => m !== null)
      .sort((a, b) => Number(a[1]) - Number(b[1]))
      .map((m) => m[2]!.split(',').map((c) => c.trim().replace(/\*$/, '[^/]+')));
    const options = await extractDepcruiseOptions(path.join(root, '.dependency-cruiser.cjs'));
    const checked = (options.ruleSet?.forbidden ?? [])
      .filter((r) => r.name === 'context-layers')
      .map((r) => /^\^src\/\((.*)\)\/$/.exec(String((r.from as { path: string }).path))![1]!.split('|'));
    expect(drawn.length).to.be.greaterThan(3);
    expect(checked).to.deep.equal(drawn);
  });
});
