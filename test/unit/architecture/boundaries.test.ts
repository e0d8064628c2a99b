/**
 * The layering of src/ (.dependency-cruiser.cjs, also run by `npm run lint`): the real tree has
 * no violation, and a small tree laid out like src/ (test/fixtures/architecture) with a deep
 * cross-context import, a kernel file importing a context, the composition root past an index.ts
 * and the Services bag outside the handler edge has exactly those violations, each named by its
 * rule.
 */
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
      'context-through-index: src/triggers/call.ts -> src/runs/runs.ts',
      'services-type-at-handler-edge: src/triggers/target.ts -> src/services.ts',
      'top-through-index: src/app.ts -> src/runs/runs.ts',
    ]);
  });
});
