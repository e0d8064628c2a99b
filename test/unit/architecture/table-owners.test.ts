/**
 * One owner per table (DESIGN.md section 3, src/storage/tables.ts): no file of src/ names in SQL
 * a table of another context, and a small tree laid out like src/ (test/fixtures/table-owners)
 * with a crossing of each kind — a builder call, a join, a helper handed the store and a table
 * name, a raw SQL string, a table no context owns — is reported exactly there.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { checkFile, checkTree, contextOf, describeFinding } from '../../../scripts/check-table-owners.js';
import { OWNER_OF, TABLE_OWNERS } from '../../../src/storage/tables.js';
import { createTestStore } from '../../helpers/store.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

describe('table ownership (scripts/check-table-owners.ts)', () => {
  it('src/ names no table of another context', () => {
    expect(checkTree(path.join(root, 'src')).map(describeFinding)).to.deep.equal([]);
  });

  it('reports each kind of crossing in a tree laid out like src/, and nothing else', () => {
    const found = checkTree(path.join(root, 'test/fixtures/table-owners/src')).map(
      (f) => `${f.file}:${f.line} ${f.context} -> ${f.table} (${f.owner ?? 'no owner'})`,
    );
    expect(found.sort()).to.deep.equal([
      'src/engine/workflows.ts:5 engine -> triggers (triggers)',
      'src/queues/batches.ts:10 queues -> runs (runs)',
      'src/queues/batches.ts:6 queues -> agent_channels (agents)',
      'src/queues/batches.ts:7 queues -> scratch_rows (no owner)',
      'src/triggers/target.ts:6 triggers -> workflows (engine)',
    ]);
  });

  it('reads the context of a path: servers/<name> is a context, files directly under src/ are the top', () => {
    expect(contextOf('servers/sidekick/usage-store.ts')).to.equal('servers/sidekick');
    expect(contextOf('app.ts')).to.equal('top');
    expect(contextOf('cli/main.ts')).to.equal('cli');
    expect(contextOf('storage/migrations/001_initial.ts')).to.equal(undefined);
    expect(checkFile('app.ts', "await db('runs').first();").map((f) => f.owner)).to.deep.equal(['runs']);
  });

  it('the map names every table the migrations create, each once', async () => {
    const store = await createTestStore('sqlite');
    try {
      const rows = (await store.db.raw(
        "select name from sqlite_master where type = 'table' and name not like 'sqlite_%' and name not like 'knex_%'",
      )) as { name: string }[];
      const created = rows.map((r) => r.name).sort();
      const mapped = Object.values(TABLE_OWNERS).flat();
      expect(mapped.length, 'no table listed twice').to.equal(OWNER_OF.size);
      expect([...OWNER_OF.keys()].sort()).to.deep.equal(created);
    } finally {
      await store.close();
    }
  });
});
