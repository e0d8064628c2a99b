/**
 * RunWorkers.drain (shutdown): a run whose claim lands after the drain began is given back
 * unstarted (PENDING, its attempt not counted, no owner), so another process claims it at once
 * instead of after its lease; a run executing at the drain finishes, and the drain waits for it.
 * The claim is held up by the store: on sqlite a write that holds the process's write queue, on
 * PostgreSQL a lock on the runs table.
 */
import { expect } from 'chai';
import { WriteQueue } from '../../../src/storage/write-queue.js';
import { createOrganization } from '../../../src/auth/index.js';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import { addRun, addWorkflow, busyStep, logSql, startWorkers, type Workers } from './write-path-helpers.js';

const kinds = await storeKinds();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const kind of kinds) {
  describe(`run workers drain (${kind})`, function () {
    this.timeout(30_000);
    let store: TestStore;
    let w: Workers | undefined;
    let orgId: string;

    beforeEach(async () => {
      store = await createTestStore(kind);
      orgId = (await createOrganization(store.db, { name: 'Drain' })).id;
    });
    afterEach(async () => {
      await w?.close();
      w = undefined;
      await store.close();
    });

    /** Holds every claim of the workers until `release` is called. */
    const holdClaims = async (): Promise<() => Promise<void>> => {
      let open!: () => void;
      const gate = new Promise<void>((r) => (open = r));
      let held: Promise<unknown>;
      if (kind === 'sqlite') {
        held = WriteQueue.for(store.db).run(async (trx) => {
          await trx('runs').where({ id: 'none' }).update({ status: 'PENDING' });
          await gate;
        });
      } else {
        let locked!: () => void;
        const isLocked = new Promise<void>((r) => (locked = r));
        held = store.db.transaction(async (trx) => {
          await trx.raw('lock table runs in access exclusive mode');
          locked();
          await gate;
        });
        await isLocked;
      }
      return async () => {
        open();
        await held;
      };
    };

    it('gives back a run whose claim lands after the drain began: PENDING, attempt not counted', async () => {
      // No idle check within the test: the consumer claims only when woken. Its first claim, which
      // finds nothing, is over (the consumer asleep) before the run exists.
      w = await startWorkers(store, {}, 60_000);
      const sleepers = (w.queue as unknown as { sleepers: unknown[] }).sleepers;
      for (let waited = 0; sleepers.length === 0 && waited < 15_000; waited += 10) await sleep(10);
      expect(sleepers.length, 'the consumer is asleep').to.equal(1);
      const automationId = await addWorkflow(store.db, orgId, [busyStep('Busy', 10)]);
      const runId = await addRun(store.db, orgId, automationId);
      const sql = logSql(store.db);
      const release = await holdClaims();
      await w.queue.enqueue([runId]);
      const claimSent = () => sql.statements.some((s) => /attempts = (runs\.)?attempts \+ 1/.test(s));
      if (kind === 'pg') {
        // The claim is sent, and waits for the lock: the drain begins while it is under way.
        for (let waited = 0; !claimSent() && waited < 5_000; waited += 10) await sleep(10);
      } else {
        // The claim waits in the write queue, behind the held write, where it is not yet a statement.
        const queued = WriteQueue.for(store.db) as unknown as { pending: unknown[] };
        for (let waited = 0; queued.pending.length === 0 && waited < 15_000; waited += 10) await sleep(10);
        expect(queued.pending.length, 'the claim reached the write queue').to.be.greaterThan(0);
      }
      const drained = w.workers.drain();
      await sleep(50);
      await release();
      await drained;
      sql.stop();
      expect(claimSent(), `the run was claimed; statements: ${sql.statements.join(' | ').slice(0, 2000)}`).to.equal(
        true,
      );
      const row = await store
        .db('runs')
        .where({ id: runId })
        .first('status', 'attempts', 'claimed_by', 'lease_until', 'started_at');
      expect(row).to.deep.equal({
        status: 'PENDING',
        attempts: 0,
        claimed_by: null,
        lease_until: null,
        started_at: null,
      });
      expect(await store.db('run_steps').where({ run_id: runId }).count({ n: '*' }).first()).to.deep.include({
        n: kind === 'pg' ? '0' : 0,
      });
    });

    it('lets the run executing at the drain finish, and resolves once it has', async () => {
      w = await startWorkers(store, {}, 60_000);
      const automationId = await addWorkflow(store.db, orgId, [busyStep('Busy', 400)]);
      const runId = await addRun(store.db, orgId, automationId);
      await w.queue.enqueue([runId]);
      while ((await store.db('runs').where({ id: runId }).first('status')).status !== 'RUNNING') await sleep(10);
      await w.workers.drain();
      expect(await store.db('runs').where({ id: runId }).first('status', 'attempts')).to.deep.equal({
        status: 'COMPLETE',
        attempts: 1,
      });
    });
  });
}
