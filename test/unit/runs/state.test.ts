/**
 * The run/step state machine (spec "States and transitions") on both stores: claiming (oldest first,
 * never twice) and the documented crash-recovery rule (expired lease → PENDING while attempts
 * remain, else FAILED). Finishes, their guards (a terminal state is never overwritten, a worker
 * that lost its run writes nothing) and leases are the RunRecorder's: group-finish.test.ts and
 * write-path.test.ts.
 */
import { expect } from 'chai';
import type { Knex } from 'knex';
import { createOrganization } from '../../../src/auth/index.js';
import { createWorkflow } from '../../../src/engine/workflows.js';
import {
  claimRun,
  insertRuns,
  listSteps,
  pendingRunIds,
  recoverExpiredRuns,
  runRows,
  type RunRow,
} from '../../../src/runs/runs.js';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';

const kinds = await storeKinds();
const STEPS = [
  { name: 'First', stepVersion: 1 },
  { name: 'Second', stepVersion: 1 },
];
const LEASE_MS = 30_000;
const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (offsetMs: number) => new Date(T0 + offsetMs).toISOString();
const past = () => new Date(Date.now() - 60_000).toISOString();

/**
 * State a worker leaves behind, written directly: executors write it through a RunRecorder
 * (src/runs/recorder.ts; its finishes, guards and leases are tested in group-finish.test.ts and
 * write-path.test.ts). Here it is only the starting point of claims and crash recovery.
 */
async function stepRunning(db: Knex, runId: string, stepIndex: number, executionOrder: number): Promise<void> {
  await db('run_steps')
    .where({ run_id: runId, step_index: stepIndex })
    .update({ status: 'RUNNING', execution_order: executionOrder, started_at: new Date().toISOString() });
}
async function stepDone(db: Knex, runId: string, stepIndex: number, result: string): Promise<void> {
  await db('run_steps').where({ run_id: runId, step_index: stepIndex }).update({
    status: 'COMPLETE',
    result_type: 'plaintext',
    result,
    exit_code: 0,
    duration_ms: 7,
    finished_at: new Date().toISOString(),
    logs: 'a log line',
  });
}
async function runFinished(db: Knex, runId: string, status: 'COMPLETE' | 'FAILED'): Promise<void> {
  await db('runs').where({ id: runId }).update({ status, finished_at: new Date().toISOString(), lease_until: null });
}

async function getRun(db: Knex, id: string): Promise<RunRow> {
  const row = (await db('runs').where({ id }).first()) as RunRow | undefined;
  if (!row) throw new Error(`run ${id} is missing`);
  return row;
}

for (const kind of kinds) {
  describe(`run state machine (${kind})`, () => {
    let store: TestStore;
    let db: Knex;
    let orgId: string;
    let automationId: string;

    beforeEach(async () => {
      store = await createTestStore(kind);
      db = store.db;
      orgId = (await createOrganization(db, { name: 'Runs org' })).id;
      const wf = await createWorkflow(db, orgId, {
        name: 'Two steps',
        steps: [
          { type: 'code', name: 'First', code: 'return 1;' },
          { type: 'code', name: 'Second', code: 'return 2;' },
        ],
      });
      automationId = wf.automationId;
    });
    afterEach(async () => store.close());

    /** Inserts one PENDING run created at `createdAt`, with PENDING rows for its two steps (an earlier attempt's). */
    async function addRun(createdAt = new Date().toISOString()): Promise<string> {
      const rows = runRows(
        {
          orgId,
          automationId,
          automationVersion: 1,
          triggerId: null,
          inputs: { n: 1 },
          startedBy: 'test',
          timeoutMs: 60_000,
        },
        undefined,
        createdAt,
      );
      await insertRuns(db, [rows]);
      await db('run_steps').insert(
        STEPS.map((st, i) => ({
          run_id: rows.run.id,
          step_index: i,
          step_version: st.stepVersion,
          name: st.name,
          status: 'PENDING',
        })),
      );
      return rows.run.id as string;
    }

    describe('claimRun', () => {
      it('takes the oldest PENDING run first (by created_at, not by insertion or id order) and skips non-PENDING runs', async () => {
        // Inserted newest first, so ids (time-ordered) and insertion order disagree with age.
        const newest = await addRun(at(3000));
        const middle = await addRun(at(2000));
        const oldest = await addRun(at(1000));
        const olderButRunning = await addRun(at(0));
        await db('runs').where({ id: olderButRunning }).update({ status: 'RUNNING' });
        const olderButDone = await addRun(at(500));
        await db('runs')
          .where({ id: olderButDone })
          .update({ status: 'COMPLETE', finished_at: at(600) });

        const before = Date.now();
        const first = await claimRun(db, 'w1', LEASE_MS);
        expect(first?.id).to.equal(oldest);
        expect(first).to.include({ status: 'RUNNING', claimed_by: 'w1' });
        expect(Number(first!.attempts)).to.equal(1);
        expect(first!.started_at).to.be.a('string');
        const lease = Date.parse(first!.lease_until!);
        expect(lease)
          .to.be.at.least(before + LEASE_MS - 5)
          .and.at.most(Date.now() + LEASE_MS + 5);
        expect(await pendingRunIds(db), 'one claim takes one run').to.deep.equal([middle, newest]);

        expect((await claimRun(db, 'w2', LEASE_MS))?.id).to.equal(middle);
        expect((await claimRun(db, 'w1', LEASE_MS))?.id).to.equal(newest);
        expect(await claimRun(db, 'w1', LEASE_MS), 'nothing PENDING is left').to.equal(undefined);
        // What was not PENDING was not touched.
        expect(await getRun(db, olderButRunning)).to.include({ status: 'RUNNING', claimed_by: null });
        expect(await getRun(db, olderButDone)).to.include({ status: 'COMPLETE', claimed_by: null });
        expect((await getRun(db, middle)).claimed_by).to.equal('w2');
      });

      it('never claims the same run twice under concurrency: 20 concurrent claims over 10 PENDING runs give exactly 10 distinct claims', async () => {
        const ids: string[] = [];
        for (let i = 0; i < 10; i++) ids.push(await addRun(at(i)));
        const claims = await Promise.all(Array.from({ length: 20 }, (_, i) => claimRun(db, `worker-${i}`, LEASE_MS)));
        const claimed = claims.filter((c): c is RunRow => c !== undefined);
        expect(claimed).to.have.length(10);
        expect(new Set(claimed.map((c) => c.id)).size).to.equal(10);
        expect(claimed.map((c) => c.id).sort()).to.deep.equal([...ids].sort());
        // Each row records the worker that got it back from claimRun, with one attempt.
        for (const c of claimed) {
          const row = await getRun(db, c.id);
          expect(row).to.include({ status: 'RUNNING', claimed_by: c.claimed_by });
          expect(Number(row.attempts)).to.equal(1);
        }
        expect(await pendingRunIds(db)).to.deep.equal([]);
      });

      it('with a runId claims only that run, and only while it is PENDING', async () => {
        const older = await addRun(at(0));
        const target = await addRun(at(1000));
        const got = await claimRun(db, 'w1', LEASE_MS, target);
        expect(got?.id).to.equal(target);
        expect((await getRun(db, older)).status, 'the older PENDING run is left alone').to.equal('PENDING');
        // Already RUNNING: a second delivery of the same run id claims nothing.
        expect(await claimRun(db, 'w2', LEASE_MS, target)).to.equal(undefined);
        expect((await getRun(db, target)).claimed_by).to.equal('w1');
        // Terminal, or unknown: nothing.
        await runFinished(db, target, 'COMPLETE');
        expect(await claimRun(db, 'w2', LEASE_MS, target)).to.equal(undefined);
        expect(await claimRun(db, 'w2', LEASE_MS, 'run_does_not_exist')).to.equal(undefined);
        expect((await getRun(db, target)).status).to.equal('COMPLETE');
      });

      it('concurrent claims of one run id: exactly one wins', async () => {
        const id = await addRun();
        const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => claimRun(db, `w${i}`, LEASE_MS, id)));
        expect(claims.filter(Boolean)).to.have.length(1);
        expect(Number((await getRun(db, id)).attempts)).to.equal(1);
      });
    });

    describe('recoverExpiredRuns (documented rule)', () => {
      it('expired lease with attempts left → PENDING with steps reset; none left → FAILED "worker lost" with steps SKIPPED; a live lease is left alone', async () => {
        const MAX = 2;
        const expire = (id: string) => db('runs').where({ id }).update({ lease_until: past() });
        // B: lost on its first attempt (re-queued), then lost again on its second and last one,
        // with step 0 done and step 1 running.
        const b = await addRun(at(1));
        await claimRun(db, 'dead-1', LEASE_MS, b);
        await expire(b);
        expect(await recoverExpiredRuns(db, MAX)).to.deep.equal({ requeued: [b], failed: [] });
        expect(Number((await claimRun(db, 'dead-2', LEASE_MS, b))?.attempts)).to.equal(2);
        await stepRunning(db, b, 0, 1);
        await stepDone(db, b, 0, 'B0');
        await stepRunning(db, b, 1, 2);
        await expire(b);

        // A: lost half-way through its first attempt (step 0 done, step 1 running).
        const a = await addRun(at(0));
        await claimRun(db, 'dead-3', LEASE_MS, a);
        await stepRunning(db, a, 0, 1);
        await stepDone(db, a, 0, 'A0');
        await stepRunning(db, a, 1, 2);
        await expire(a);

        // C: a live lease; D: PENDING; E: COMPLETE.
        const c = await addRun(at(2));
        await claimRun(db, 'alive', LEASE_MS, c);
        await stepRunning(db, c, 0, 1);
        const d = await addRun(at(3));
        const e = await addRun(at(4));
        await claimRun(db, 'w', LEASE_MS, e);
        await runFinished(db, e, 'COMPLETE');
        const untouched = await Promise.all([c, d, e].map((id) => getRun(db, id)));
        const untouchedSteps = await Promise.all([c, d, e].map((id) => listSteps(db, id)));

        const result = await recoverExpiredRuns(db, MAX);
        expect(result).to.deep.equal({ requeued: [a], failed: [b] });

        const ra = await getRun(db, a);
        expect(ra).to.include({
          status: 'PENDING',
          claimed_by: null,
          lease_until: null,
          started_at: null,
          finished_at: null,
          error: null,
        });
        expect(Number(ra.attempts), 'attempts are kept (the next claim counts on)').to.equal(1);
        const stepsA = await listSteps(db, a);
        expect(stepsA.map((s) => s.status)).to.deep.equal(['PENDING', 'PENDING']);
        for (const s of stepsA) {
          expect(s).to.include({
            execution_order: null,
            result: null,
            result_type: null,
            exit_code: null,
            duration_ms: null,
            started_at: null,
            finished_at: null,
            logs: null,
          });
        }

        const rb = await getRun(db, b);
        expect(rb.status).to.equal('FAILED');
        expect(rb.error).to.match(/worker running this run was lost/);
        expect(rb.error).to.match(/no attempts are left/);
        expect(rb.lease_until).to.equal(null);
        expect(Date.parse(rb.finished_at!)).to.be.closeTo(Date.now(), 5_000);
        const stepsB = await listSteps(db, b);
        expect(
          stepsB.map((s) => s.status),
          'finished steps keep their result, the rest are SKIPPED',
        ).to.deep.equal(['COMPLETE', 'SKIPPED']);
        expect(stepsB[0]!.result).to.equal('B0');

        expect(await Promise.all([c, d, e].map((id) => getRun(db, id)))).to.deep.equal(untouched);
        expect(await Promise.all([c, d, e].map((id) => listSteps(db, id)))).to.deep.equal(untouchedSteps);

        // Nothing more to recover; the re-queued run is claimable again and counts its attempt.
        expect(await recoverExpiredRuns(db, MAX)).to.deep.equal({ requeued: [], failed: [] });
        const again = await claimRun(db, 'w5', LEASE_MS, a);
        expect(Number(again?.attempts)).to.equal(2);
        // A FAILED run is final: recovery and claims leave it as it is.
        expect(await claimRun(db, 'w6', LEASE_MS, b)).to.equal(undefined);
        expect(await recoverExpiredRuns(db, MAX)).to.deep.equal({ requeued: [], failed: [] });
        expect(await getRun(db, b)).to.deep.equal(rb);
      });

      it('with RUN_MAX_ATTEMPTS=1 a lost run fails at once', async () => {
        const id = await addRun();
        await claimRun(db, 'dead', LEASE_MS, id);
        await db('runs').where({ id }).update({ lease_until: past() });
        expect(await recoverExpiredRuns(db, 1)).to.deep.equal({ requeued: [], failed: [id] });
        expect((await listSteps(db, id)).map((s) => s.status)).to.deep.equal(['SKIPPED', 'SKIPPED']);
      });
    });

    it('pendingRunIds lists PENDING runs oldest first', async () => {
      const b = await addRun(at(2000));
      const a = await addRun(at(1000));
      const c = await addRun(at(3000));
      await claimRun(db, 'w', LEASE_MS, c);
      expect(await pendingRunIds(db)).to.deep.equal([a, b]);
      expect(await pendingRunIds(db, 1)).to.deep.equal([a]);
    });
  });
}
