/**
 * Synchronous callers at shutdown with Redis (src/runs/drain-waits.ts), on sqlite and PostgreSQL:
 * with no process executing runs, a wait for a queued run (nobody will pick it up) or one under an
 * expired lease ends at once; a wait for a run another process executes (RUNNING, lease ahead),
 * or for a queued run while other processes execute runs, goes on until its finish signal or the
 * deadline; then every later wait ends at once.
 */
import { expect } from 'chai';
import { createOrganization } from '../../../src/auth/index.js';
import { drainSyncWaits } from '../../../src/runs/drain-waits.js';
import { createSignals, type Signals } from '../../../src/runs/signals.js';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import { addRun, addWorkflow, busyStep, silent } from './write-path-helpers.js';

const kinds = await storeKinds();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const kind of kinds) {
  describe(`synchronous callers at shutdown (${kind})`, function () {
    this.timeout(30_000);
    let store: TestStore;
    let signals: Signals;
    let ids: { pending: string; elsewhere: string; expired: string };
    /** The run as another process executing it leaves it: RUNNING, its lease `leaseMs` ahead. */
    const running = (id: string, leaseMs: number) =>
      store
        .db('runs')
        .where({ id })
        .update({
          status: 'RUNNING',
          claimed_by: 'elsewhere:1',
          attempts: 1,
          started_at: new Date().toISOString(),
          lease_until: new Date(Date.now() + leaseMs).toISOString(),
        });

    beforeEach(async () => {
      store = await createTestStore(kind);
      signals = await createSignals(undefined, silent, 'test');
      const orgId = (await createOrganization(store.db, { name: 'Drain waits' })).id;
      const automationId = await addWorkflow(store.db, orgId, [busyStep('Busy', 10)]);
      ids = {
        pending: await addRun(store.db, orgId, automationId),
        elsewhere: await addRun(store.db, orgId, automationId),
        expired: await addRun(store.db, orgId, automationId),
      };
      await running(ids.expired, -1_000);
    });
    afterEach(async () => {
      await signals.close();
      await store.close();
    });

    it('no process executes a run: the waits for a queued run (after a quiet second) and one under an expired lease end', async () => {
      const t0 = Date.now();
      const pending = signals.waitForFinish(ids.pending, 20_000);
      const expired = signals.waitForFinish(ids.expired, 20_000);
      await drainSyncWaits({ db: store.db, signals }, { deadline: Date.now() + 10_000 });
      expect(await pending).to.equal(undefined);
      expect(await expired).to.equal(undefined);
      // After a second in which no process executed a run.
      expect(Date.now() - t0).to.be.within(900, 2_000);
      // Later waits end at once.
      expect(await signals.waitForFinish(ids.pending, 20_000)).to.equal(undefined);
    });

    it("another process executes runs: its caller gets the finish, and a queued run's caller waits for it to be taken and finished", async () => {
      await running(ids.elsewhere, 60_000);
      const t0 = Date.now();
      const at = (p: Promise<unknown>) => p.then((v) => ({ v, ms: Date.now() - t0 }));
      const pending = at(signals.waitForFinish(ids.pending, 20_000));
      const expired = at(signals.waitForFinish(ids.expired, 20_000));
      const elsewhere = at(signals.waitForFinish(ids.elsewhere, 20_000));
      const drained = at(drainSyncWaits({ db: store.db, signals }, { deadline: Date.now() + 10_000 }));
      expect(await expired).to.deep.include({ v: undefined });
      expect((await expired).ms).to.be.below(1_000);
      await sleep(400);
      // The other process finishes its run and takes the queued one.
      await store.db('runs').where({ id: ids.elsewhere }).update({ status: 'COMPLETE', lease_until: null });
      await signals.runFinished(ids.elsewhere, 'COMPLETE');
      await running(ids.pending, 60_000);
      expect(((await elsewhere).v as { status: string }).status).to.equal('COMPLETE');
      await sleep(400);
      await signals.runFinished(ids.pending, 'COMPLETE');
      expect(((await pending).v as { status: string }).status).to.equal('COMPLETE');
      expect((await drained).ms).to.be.within(700, 2_500);
    });

    it('ends the waits on other processes at the deadline', async () => {
      await running(ids.elsewhere, 60_000);
      const t0 = Date.now();
      const elsewhere = signals.waitForFinish(ids.elsewhere, 20_000);
      const pending = signals.waitForFinish(ids.pending, 20_000);
      await drainSyncWaits({ db: store.db, signals }, { deadline: Date.now() + 700 });
      expect(await elsewhere).to.equal(undefined);
      expect(await pending).to.equal(undefined);
      expect(Date.now() - t0).to.be.within(400, 2_000);
    });
  });
}
