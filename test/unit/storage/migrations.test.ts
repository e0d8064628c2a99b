import { expect } from 'chai';
import { createTestStore, storeKinds } from '../../helpers/store.js';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { migrate, openStore } from '../../../src/storage/db.js';
import { migrations } from '../../../src/storage/migrations/index.js';

const kinds = await storeKinds();

for (const kind of kinds) {
  describe(`storage migrations (${kind})`, () => {
    it('creates every aggregate table and is idempotent', async () => {
      const store = await createTestStore(kind);
      try {
        for (const table of [
          'organizations',
          'credentials',
          'signing_keys',
          'api_keys',
          'workflows',
          'workflow_versions',
          'triggers',
          'runs',
          'run_steps',
          'files',
          'connections',
          'app_servers',
        ]) {
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

describe('sqlite durability (SQLITE_SYNCHRONOUS)', () => {
  it('opens every connection with synchronous NORMAL (1) by default and FULL (2) on request', async () => {
    for (const [mode, expected] of [
      [undefined, 1],
      ['FULL', 2],
    ] as const) {
      const dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-sync-'));
      const db = openStore({ dataDir, sqliteSynchronous: mode });
      try {
        const rows = (await db.raw('PRAGMA synchronous')) as { synchronous: number }[];
        expect(rows[0]!.synchronous, String(mode)).to.equal(expected);
      } finally {
        await db.destroy();
      }
    }
  });
});
