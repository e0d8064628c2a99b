/**
 * The owners' writes keep their caches true (src/storage/changes.ts): a write made through the
 * owning context's function — as an HTTP handler, the CLI or an MCP tool in this process makes
 * it — is seen at once by a per-process cache with a long TTL, with no caller clearing it; and
 * deleting a workflow removes its triggers by the foreign-key cascade, on sqlite and PostgreSQL.
 */
import { expect } from 'chai';
import { createWorkflow, deleteWorkflow, updateWorkflow } from '../../../src/engine/index.js';
import { CallTargets, createTrigger, findTrigger, updateTrigger } from '../../../src/triggers/index.js';
import { tableChanged, watchTables } from '../../../src/storage/changes.js';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import { definition, ORG_A, ORG_B, seedOrgs } from '../engine/fixtures.js';

const kinds = await storeKinds();
/** Far longer than any test: an entry seen again after a write was forgotten by that write. */
const LONG_TTL_MS = 10 * 60_000;

for (const kind of kinds) {
  describe(`owners' writes and the caches over their tables (${kind})`, () => {
    let store: TestStore;
    beforeEach(async () => {
      store = await createTestStore(kind);
      await seedOrgs(store.db);
    });
    afterEach(async () => store.close());

    it('deleting a workflow removes its triggers by the cascade, and a cached call target goes at once', async () => {
      const wf = await createWorkflow(store.db, ORG_A, definition(1));
      const other = await createWorkflow(store.db, ORG_A, definition(1));
      const t1 = await createTrigger(store.db, ORG_A, { automationId: wf.automationId, kind: 'api' });
      const t2 = await createTrigger(store.db, ORG_A, { automationId: wf.automationId, kind: 'webhook' });
      const kept = await createTrigger(store.db, ORG_A, { automationId: other.automationId, kind: 'api' });
      const targets = new CallTargets(store.db, LONG_TTL_MS);
      expect((await targets.get(ORG_A, t1.triggerId))?.automationId).to.equal(wf.automationId);

      await deleteWorkflow(store.db, ORG_A, wf.automationId);

      expect(await findTrigger(store.db, ORG_A, t1.triggerId)).to.equal(undefined);
      expect(await findTrigger(store.db, ORG_A, t2.triggerId)).to.equal(undefined);
      expect(await findTrigger(store.db, ORG_A, kept.triggerId), 'another workflow keeps its trigger').to.not.equal(
        undefined,
      );
      expect(await targets.get(ORG_A, t1.triggerId), 'the memo forgot the deleted trigger').to.equal(undefined);
    });

    it('a trigger disabled or a workflow updated through its owner is seen by the next cached read', async () => {
      const wf = await createWorkflow(store.db, ORG_A, definition(1));
      const t = await createTrigger(store.db, ORG_A, { automationId: wf.automationId, kind: 'api' });
      const targets = new CallTargets(store.db, LONG_TTL_MS);
      expect(await targets.get(ORG_A, t.triggerId)).to.include({ enabled: true, version: 1 });

      await updateTrigger(store.db, ORG_A, t.triggerId, { expectedVersion: 1, patch: { enabled: false } });
      expect(await targets.get(ORG_A, t.triggerId)).to.include({ enabled: false, version: 1 });

      await updateWorkflow(store.db, ORG_A, wf.automationId, { expectedVersion: 1, input: definition(2) });
      expect(await targets.get(ORG_A, t.triggerId)).to.include({ enabled: false, version: 2 });
    });

    it('inside a transaction the watchers are told once it commits, and not at all on a rollback', async () => {
      const told: string[] = [];
      const watcher = { forgetOrg: (orgId: string) => told.push(orgId) };
      watchTables(store.db, ['collections'], watcher);
      await store.db.transaction(async (trx) => {
        tableChanged(trx, 'collections', ORG_A);
        expect(told, 'not before the commit').to.deep.equal([]);
      });
      expect(told).to.deep.equal([ORG_A]);
      await store.db
        .transaction(async (trx) => {
          tableChanged(trx, 'collections', ORG_B);
          throw new Error('roll back');
        })
        .catch(() => undefined);
      tableChanged(store.db, 'connections', ORG_B); // another table: not watched here
      expect(told).to.deep.equal([ORG_A]);
    });
  });
}
