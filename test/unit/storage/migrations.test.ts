import { expect } from 'chai';
import { createTestStore, storeKinds } from '../../helpers/store.js';
import { migrate } from '../../../src/storage/db.js';
import { migrations } from '../../../src/storage/migrations/index.js';

const kinds = await storeKinds();

for (const kind of kinds) {
  describe(`storage migrations (${kind})`, () => {
    it('creates every aggregate table and is idempotent', async () => {
      const store = await createTestStore(kind);
      try {
        for (const table of ['organizations', 'credentials', 'signing_keys', 'api_keys', 'workflows',
          'workflow_versions', 'triggers', 'runs', 'run_steps', 'files', 'connections', 'app_servers']) {
          expect(await store.db.schema.hasTable(table), table).to.equal(true);
        }
        expect(await migrate(store.db)).to.deep.equal([]);
      } finally {
        await store.close();
      }
    });

    it('rolls back to an empty schema and forward again', async () => {
      const store = await createTestStore(kind);
      try {
        for (const m of [...migrations].reverse()) await m.down(store.db);
        expect(await store.db.schema.hasTable('organizations')).to.equal(false);
        for (const m of migrations) await m.up(store.db);
        expect(await store.db.schema.hasTable('organizations')).to.equal(true);
      } finally {
        await store.close();
      }
    });
  });
}
