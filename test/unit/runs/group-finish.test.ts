/**
 * Group commit of run writes (issue 14) on both stores: finishes of concurrent runs share one
 * transaction, each resolving only after it committed; a run another worker owns now is left
 * alone by its old worker without failing its neighbours; concurrent claims share one statement
 * and never take a run twice; one lease renewal per process finds the runs it lost.
 */
import { expect } from 'chai';
import type { Knex } from 'knex';
import { createOrganization } from '../../../src/auth/index.js';
import { RunClaimer } from '../../../src/runs/claims.js';
import { OrgSlots } from '../../../src/runs/org-slots.js';
import { LeaseKeeper } from '../../../src/runs/leases.js';
import { RunRecorder } from '../../../src/runs/recorder.js';
import {
  claimRun,
  claimRuns,
  listSteps,
  loadRunForWorker,
  pendingRunIds,
  renewLeases,
  type RunRow,
} from '../../../src/runs/runs.js';
import { WriteQueue } from '../../../src/storage/write-queue.js';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import {
  addRun,
  addWorkflow,
  busyStep,
  isClaim,
  isFileWrite,
  isFinish,
  isStepWrite,
  logSql,
  silent,
  transactions,
} from './write-path-helpers.js';

const kinds = await storeKinds();
const LEASE_MS = 30_000;
const WORKER = 'this-worker';

const done = (result: string) => ({
  status: 'COMPLETE' as const,
  resultType: 'plaintext',
  result,
  exitCode: 0,
  durationMs: 1,
  logs: [],
});

for (const kind of kinds) {
  describe(`run writes: group commit, claims, leases (${kind})`, function () {
    this.timeout(30_000);
    let store: TestStore;
    let db: Knex;
    let orgId: string;
    let automationId: string;

    beforeEach(async () => {
      store = await createTestStore(kind);
      db = store.db;
      orgId = (await createOrganization(db, { name: 'Group' })).id;
      automationId = await addWorkflow(db, orgId, [busyStep('One', 0)]);
    });
    afterEach(async () => store.close());

    /** `n` runs created a millisecond apart (oldest first), all claimed by WORKER. */
    async function claimed(n: number): Promise<RunRow[]> {
      for (let i = 0; i < n; i++) {
        await addRun(db, orgId, automationId);
        await new Promise((r) => setTimeout(r, 2));
      }
      return claimRuns(db, WORKER, LEASE_MS, n);
    }

    it('finishes of concurrent runs commit in one transaction: one UPDATE for all of them, their step rows and file rows in one INSERT each; each resolves after the COMMIT', async () => {
      const runs = await claimed(6);
      expect(runs).to.have.length(6);
      // One of them was taken over by another worker meanwhile.
      const taken = runs[2]!;
      await db('runs').where({ id: taken.id }).update({ claimed_by: 'another-worker', attempts: 2 });
      const writes = new WriteQueue(db);
      const recorders = runs.map(
        (run) => new RunRecorder({ writes, workerId: WORKER, leaseMs: LEASE_MS }, run, () => undefined),
      );
      for (const [i, r] of recorders.entries()) {
        await r.stepStarted(0, 1, { name: 'One', stepVersion: 1 });
        await r.stepFinished(0, done(`r${i}`), [
          {
            orgId,
            runId: runs[i]!.id,
            stepIndex: 0,
            kind: 'step',
            filename: 'out.txt',
            mimeType: 'text/plain',
            size: 1,
            blobKey: `runs/${runs[i]!.id}/0/file_${i}`,
          },
        ]);
      }
      const sql = logSql(db);
      const resolvedAfter: number[] = [];
      const results = await Promise.all(
        recorders.map((r) =>
          r.finish('COMPLETE', undefined).then((ok) => {
            resolvedAfter.push(sql.statements.length);
            return ok;
          }),
        ),
      );
      sql.stop();

      expect(results).to.deep.equal(runs.map((r) => r.id !== taken.id));
      const txs = transactions(sql.statements);
      expect(txs, 'one transaction').to.have.length(1);
      expect(txs[0]!.filter(isFinish), 'one UPDATE for the six finishes').to.have.length(1);
      expect(txs[0]!.filter(isStepWrite), 'one INSERT for the step rows of five runs').to.have.length(1);
      expect(txs[0]!.filter(isFileWrite)).to.have.length(1);
      const commitAt = sql.statements.indexOf('commit') + 1;
      expect(commitAt).to.be.greaterThan(0);
      for (const n of resolvedAfter) expect(n, 'resolved after the COMMIT').to.be.at.least(commitAt);

      for (const [i, run] of runs.entries()) {
        const row = (await loadRunForWorker(db, run.id))!;
        const steps = await listSteps(db, run.id);
        const files = await db('files').where({ run_id: run.id });
        if (run.id === taken.id) {
          expect(row).to.include({ status: 'RUNNING', claimed_by: 'another-worker' });
          expect(steps, 'the old worker wrote no step rows').to.deep.equal([]);
          expect(files).to.deep.equal([]);
          expect(recorders[i]!.unrecordedBlobKeys()).to.deep.equal([`runs/${run.id}/0/file_${i}`]);
        } else {
          expect(row).to.include({ status: 'COMPLETE', lease_until: null });
          expect(steps.map((s) => [s.status, s.result])).to.deep.equal([['COMPLETE', `r${i}`]]);
          expect(files).to.have.length(1);
        }
      }
    });

    it('one batch of finishes gives each run its own state and error, and an older attempt of a run matches nothing', async () => {
      const runs = await claimed(3);
      const writes = new WriteQueue(db);
      const recorder = (run: RunRow) =>
        new RunRecorder({ writes, workerId: WORKER, leaseMs: LEASE_MS }, run, () => undefined);
      const recorders = runs.map(recorder);
      // runs[2] was recovered and claimed again by this same worker: its first attempt is stale.
      await db('runs').where({ id: runs[2]!.id }).update({ attempts: 2 });
      const newer = recorder({ ...runs[2]!, attempts: 2 });
      for (const r of [...recorders, newer]) {
        await r.stepStarted(0, 1, { name: 'One', stepVersion: 1 });
        await r.stepFinished(0, done('x'), []);
      }
      const results = await Promise.all([
        recorders[0]!.finish('COMPLETE', undefined),
        recorders[1]!.finish('FAILED', 'Step 0 (One) failed: boom'),
        recorders[2]!.finish('TIMEOUT', 'stale attempt'),
        newer.finish('COMPLETE', undefined),
      ]);
      expect(results).to.deep.equal([true, true, false, true]);
      const row = async (id: string) => (await loadRunForWorker(db, id))!;
      expect(await row(runs[0]!.id)).to.include({ status: 'COMPLETE', error: null, lease_until: null });
      expect(await row(runs[1]!.id)).to.include({
        status: 'FAILED',
        error: 'Step 0 (One) failed: boom',
        lease_until: null,
      });
      expect(await row(runs[2]!.id)).to.include({ status: 'COMPLETE', error: null });
      expect((await row(runs[2]!.id)).finished_at).to.be.a('string');
      expect(await listSteps(db, runs[2]!.id), 'only the newer attempt wrote its step row').to.have.length(1);
    });

    it('a finish never overwrites a terminal state: a run that already ended (recovery failed it) matches nothing, and keeps its row', async () => {
      const [run] = await claimed(1);
      const writes = new WriteQueue(db);
      const recorder = new RunRecorder({ writes, workerId: WORKER, leaseMs: LEASE_MS }, run!, () => undefined);
      await recorder.stepStarted(0, 1, { name: 'One', stepVersion: 1 });
      await recorder.stepFinished(0, done('late'), []);
      await db('runs')
        .where({ id: run!.id })
        .update({ status: 'FAILED', error: 'worker lost', finished_at: new Date().toISOString(), lease_until: null });
      const before = await loadRunForWorker(db, run!.id);
      for (const status of ['COMPLETE', 'FAILED', 'TIMEOUT'] as const) {
        const again = new RunRecorder({ writes, workerId: WORKER, leaseMs: LEASE_MS }, run!, () => undefined);
        expect(await again.finish(status, `late ${status}`), status).to.equal(false);
      }
      expect(await recorder.finish('COMPLETE', undefined)).to.equal(false);
      expect(await loadRunForWorker(db, run!.id)).to.deep.equal(before);
      expect(await listSteps(db, run!.id)).to.deep.equal([]);
    });

    it('claimRuns takes the oldest PENDING runs, at most `limit` per statement, and concurrent claims never take a run twice', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) {
        ids.push(await addRun(db, orgId, automationId));
        await new Promise((r) => setTimeout(r, 2));
      }
      const first = await claimRuns(db, 'w0', LEASE_MS, 3);
      expect(
        first.map((r) => r.id),
        'oldest first',
      ).to.deep.equal(ids.slice(0, 3));
      expect(first.map((r) => [r.status, r.claimed_by, Number(r.attempts)])).to.deep.equal(
        Array(3).fill(['RUNNING', 'w0', 1]),
      );
      const claims = await Promise.all(Array.from({ length: 6 }, (_, i) => claimRuns(db, `w${i + 1}`, LEASE_MS, 3)));
      for (const c of claims) expect(c.length).to.be.at.most(3);
      const all = [...first, ...claims.flat()].map((r) => r.id);
      expect(all.sort()).to.deep.equal([...ids].sort());
      expect(await pendingRunIds(db)).to.deep.equal([]);
      for (const r of claims.flat()) expect((await loadRunForWorker(db, r.id))!.claimed_by).to.equal(r.claimed_by);
    });

    it('RunClaimer: consumers asking together share one claim statement (no BEGIN/COMMIT around it), and each gets its own run (or none)', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push(await addRun(db, orgId, automationId));
      const claimer = new RunClaimer(new WriteQueue(db), new OrgSlots(64, 64), { workerId: WORKER, leaseMs: LEASE_MS });
      const sql = logSql(db);
      const got = await Promise.all(Array.from({ length: 5 }, () => claimer.next()));
      sql.stop();
      expect(transactions(sql.statements).flat().filter(isClaim), 'one statement').to.have.length(1);
      expect(
        sql.statements.filter((s) => s === 'begin'),
        'alone in its batch, the claim autocommits',
      ).to.deep.equal([]);
      const runs = got.filter((r): r is RunRow => r !== undefined);
      expect(runs.map((r) => r.id).sort()).to.deep.equal([...ids].sort());
      expect(got.filter((r) => r === undefined)).to.have.length(2);
      expect(await claimer.next(), 'nothing PENDING is left').to.equal(undefined);
    });

    it('LeaseKeeper: one UPDATE renews every held run; a run another worker took is reported lost, once; released runs are not renewed', async () => {
      const [a, b, c] = await claimed(3);
      await db('runs')
        .whereIn('id', [a!.id, b!.id, c!.id])
        .update({ lease_until: new Date(Date.now() + 1_000).toISOString() });
      const calls: string[][] = [];
      const keeper = new LeaseKeeper(
        async (ids) => {
          calls.push(ids);
          return renewLeases(db, ids, WORKER, LEASE_MS);
        },
        60_000,
        silent,
      );
      const lost: string[] = [];
      for (const r of [a!, b!, c!]) keeper.hold(r.id, 1, () => lost.push(r.id));
      await db('runs').where({ id: b!.id }).update({ claimed_by: 'another-worker' });
      keeper.release(c!.id, 1);

      await keeper.renewNow();
      expect(calls).to.deep.equal([[a!.id, b!.id]]);
      expect(lost).to.deep.equal([b!.id]);
      const lease = async (id: string) => Date.parse((await loadRunForWorker(db, id))!.lease_until!);
      expect(await lease(a!.id)).to.be.greaterThan(Date.now() + LEASE_MS - 5_000);
      expect(await lease(b!.id), 'not renewed for the other worker').to.be.lessThan(Date.now() + 2_000);
      expect(await lease(c!.id), 'released: not renewed').to.be.lessThan(Date.now() + 2_000);

      await keeper.renewNow();
      expect(calls.at(-1)).to.deep.equal([a!.id]);
      expect(lost, 'reported once').to.deep.equal([b!.id]);
      // A finished run is no longer RUNNING: not renewed (its holder released it, or ignores the report).
      await db('runs').where({ id: a!.id }).update({ status: 'COMPLETE' });
      expect([...(await renewLeases(db, [a!.id], WORKER, LEASE_MS))]).to.deep.equal([]);
    });

    it('a run claimed again by this same process (its lease had expired here): the older attempt is lost, writes nothing, and its release leaves the newer one held', async () => {
      const [run] = await claimed(1);
      const writes = new WriteQueue(db);
      const lost: string[] = [];
      // Not wired to the keeper: its finish must fail on the attempt alone.
      const old = new RunRecorder({ writes, workerId: WORKER, leaseMs: LEASE_MS }, run!, () => undefined);
      const calls: string[][] = [];
      const keeper = new LeaseKeeper(
        async (ids) => {
          calls.push(ids);
          return renewLeases(db, ids, WORKER, LEASE_MS);
        },
        60_000,
        silent,
      );
      keeper.hold(run!.id, 1, () => lost.push('old'));
      await old.stepStarted(0, 1, { name: 'One', stepVersion: 1 });
      // Recovery re-queued it and this process claimed it again: attempts 2, same worker id.
      await db('runs').where({ id: run!.id }).update({ status: 'PENDING', claimed_by: null });
      const again = await claimRun(db, WORKER, LEASE_MS, run!.id);
      expect(Number(again!.attempts)).to.equal(2);
      keeper.hold(run!.id, 2, () => lost.push('new'));
      expect(lost, 'the older attempt is told at once').to.deep.equal(['old']);
      keeper.release(run!.id, 1);
      await keeper.renewNow();
      expect(calls, 'the newer attempt is still renewed').to.deep.equal([[run!.id]]);

      await old.stepFinished(0, done('stale'), []);
      expect(old.lost).to.equal(false);
      expect(await old.finish('COMPLETE', undefined), 'the older attempt does not finish the newer one').to.equal(
        false,
      );
      expect((await loadRunForWorker(db, run!.id))!).to.include({ status: 'RUNNING', claimed_by: WORKER });
      expect(await listSteps(db, run!.id)).to.deep.equal([]);
      const current = new RunRecorder({ writes, workerId: WORKER, leaseMs: LEASE_MS }, again!, () => undefined);
      await current.stepStarted(0, 1, { name: 'One', stepVersion: 1 });
      await current.stepFinished(0, done('current'), []);
      expect(await current.finish('COMPLETE', undefined)).to.equal(true);
      expect((await listSteps(db, run!.id)).map((s) => s.result)).to.deep.equal(['current']);
    });

    it('claimRun by id still claims only that run (the Redis queue path)', async () => {
      const older = await addRun(db, orgId, automationId);
      const target = await addRun(db, orgId, automationId);
      const claimer = new RunClaimer(new WriteQueue(db), new OrgSlots(64, 64), { workerId: WORKER, leaseMs: LEASE_MS });
      expect((await claimer.byId(target))?.id).to.equal(target);
      expect(await claimer.byId(target)).to.equal(undefined);
      expect((await loadRunForWorker(db, older))!.status).to.equal('PENDING');
      expect(await claimRun(db, 'other', LEASE_MS, target)).to.equal(undefined);
    });
  });
}
