/**
 * What run workers write, and when (issue 14, src/runs/README.md), on both stores with real
 * parts: a fast run is one claim and one finish transaction; a long run shows its steps as they
 * move; a worker that lost its run writes nothing for it; a lost run without step rows recovers.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { Knex } from 'knex';
import { createOrganization } from '../../../src/auth/index.js';
import { PROGRESS_AFTER_MS } from '../../../src/runs/recorder.js';
import { listRunFiles } from '../../../src/files/files.js';
import {
  claimedRunRow,
  claimRun,
  findRun,
  insertRuns,
  listSteps,
  loadRunForWorker,
  recoverExpiredRuns,
  runRows,
  type RunRow,
  type StepRow,
} from '../../../src/runs/runs.js';
import type { RunAdoption } from '../../../src/runs/worker.js';
import { GroupCommitter } from '../../../src/runs/group-commit.js';
import { WriteQueue } from '../../../src/storage/write-queue.js';
import { statusView } from '../../../src/runs/views.js';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import {
  addRun,
  addWorkflow,
  busyStep,
  DEMO_STEPS,
  isClaim,
  isFileWrite,
  isFinish,
  isStepWrite,
  logSql,
  startWorkers,
  transactions,
  until,
  type Workers,
} from './write-path-helpers.js';

const kinds = await storeKinds();
const TERMINAL = ['COMPLETE', 'FAILED', 'TIMEOUT'];

const runOf = async (db: Knex, id: string): Promise<RunRow> => (await loadRunForWorker(db, id))!;
const fileRowsOf = (db: Knex, runId: string) => db('files').where({ run_id: runId }) as Promise<{ blob_key: string }[]>;
const stepFolder = (store: TestStore, runId: string) => path.join(store.dataDir, 'blobs', 'runs', runId);

for (const kind of kinds) {
  describe(`run write path (${kind})`, function () {
    this.timeout(60_000);
    let store: TestStore;
    let db: Knex;
    let orgId: string;
    let w: Workers | undefined;

    beforeEach(async () => {
      store = await createTestStore(kind);
      db = store.db;
      orgId = (await createOrganization(db, { name: 'Write path' })).id;
    });
    afterEach(async () => {
      await w?.close();
      w = undefined;
      await store.close();
    });

    it('a fast run is two commits: its claim, then one transaction with its step rows, its file row and its terminal state; the signal follows the commit', async () => {
      const automationId = await addWorkflow(db, orgId, DEMO_STEPS);
      const runId = await addRun(db, orgId, automationId, { name: 'Ada' });
      const sql = logSql(db);
      const seenAtSignal: Promise<{ run: RunRow; steps: StepRow[]; files: number }>[] = [];
      w = await startWorkers(store);
      w.signals.onRunFinished((id) => {
        if (id === runId)
          seenAtSignal.push(
            (async () => ({
              run: await runOf(db, id),
              steps: await listSteps(db, id),
              files: (await fileRowsOf(db, id)).length,
            }))(),
          );
      });
      expect(await w.signals.waitForRun(runId, 20_000)).to.equal('COMPLETE');
      await w.close();
      w = undefined;
      sql.stop();

      const txs = transactions(sql.statements);
      const finishAt = txs.findIndex((t) => t.some(isFinish));
      expect(finishAt, 'one finish transaction').to.be.greaterThan(0);
      expect(txs.filter((t) => t.some(isFinish))).to.have.length(1);
      // Before it, only the claim committed (claims that found nothing may follow the finish).
      expect(txs.slice(0, finishAt), 'transactions before the finish').to.have.length(1);
      expect(txs[0]!.filter(isClaim)).to.have.length(1);
      const finish = txs[finishAt]!;
      expect(finish.filter(isStepWrite), 'all step rows in one INSERT').to.have.length(1);
      expect(finish.filter(isFileWrite), 'the file row').to.have.length(1);
      expect(txs.flat().filter(isStepWrite), 'no step write outside the finish').to.have.length(1);
      expect(txs.flat().filter(isFileWrite)).to.have.length(1);

      // What a listener of the signal reads is committed: the run, both steps and the file.
      expect(seenAtSignal).to.have.length(1);
      const seen = await seenAtSignal[0]!;
      expect(seen.run.status).to.equal('COMPLETE');
      expect(seen.steps.map((s) => s.status)).to.deep.equal(['COMPLETE', 'COMPLETE']);
      expect(seen.steps.map((s) => Number(s.execution_order))).to.deep.equal([1, 2]);
      expect(seen.steps[0]!.result).to.equal('Hello, Ada!');
      expect(seen.files).to.equal(1);
      const view = await statusView(db, seen.run);
      expect(view.stepStatus).to.deep.equal({ 0: 'COMPLETE', 1: 'COMPLETE' });
    });

    it("the finish signal of a fresh run carries the run exactly as the store holds it: its row, its step rows and its files in the store's order", async () => {
      const automationId = await addWorkflow(db, orgId, [
        {
          type: 'code',
          name: 'Two files',
          code: 'ctx.files.write("b.txt", "b", "text/plain"); ctx.files.write("a.json", "{}", "application/json"); return { n: 1 };',
        },
        { type: 'code', name: 'One file', code: 'ctx.files.write("c.md", "# c", "text/markdown"); return "done";' },
        { type: 'code', name: 'Fails', code: 'throw new Error("late");' },
      ]);
      const runId = await addRun(db, orgId, automationId, { name: 'Cy' });
      w = await startWorkers(store);
      const finish = await w.signals.waitForFinish(runId, 20_000);
      expect(finish?.status).to.equal('FAILED');
      const known = finish!.finished?.();
      expect(known, 'the run as its finish left it').to.not.equal(undefined);
      expect(known!.run).to.deep.equal(await findRun(db, orgId, runId));
      expect(known!.steps).to.deep.equal(await listSteps(db, runId));
      expect(known!.files).to.deep.equal(await listRunFiles(db, orgId, runId));
      expect(known!.files.map((f) => f.filename)).to.have.members(['b.txt', 'a.json', 'c.md']);
      expect(known!.steps.map((s) => s.status)).to.deep.equal(['COMPLETE', 'COMPLETE', 'FAILED']);
    });

    describe("a new run handed straight to an idle consumer (a synchronous call's, src/triggers/call.ts)", () => {
      const newRows = (automationId: string) =>
        runRows({
          orgId,
          automationId,
          automationVersion: 1,
          triggerId: null,
          inputs: { name: 'Di' },
          startedBy: 'test',
          timeoutMs: 60_000,
        });
      /** The sleeping consumer, lent (start() lets it claim nothing and go to sleep first). */
      const adoptWhenIdle = async (): Promise<RunAdoption> => {
        let adoption: RunAdoption | undefined;
        await until('a consumer asleep', async () => (adoption = w!.workers.adopt(orgId)) !== undefined);
        return adoption!;
      };

      it('is inserted claimed and executed without a claim statement; its finish signal carries it as the store holds it', async () => {
        const automationId = await addWorkflow(db, orgId, DEMO_STEPS);
        // No idle check while the test runs: every claim statement would be the queue's own.
        w = await startWorkers(store, {}, 60_000);
        const adoption = await adoptWhenIdle();
        expect(w.workers.adopt(orgId), 'RUN_CONCURRENCY 1: the one consumer is lent').to.equal(undefined);
        const sql = logSql(db);
        const rows = newRows(automationId);
        const run = adoption.claim(rows);
        // Inserted as trigger calls insert runs: in one multi-row INSERT beside a plain PENDING run.
        const pendingRows = newRows(automationId);
        const writer = new GroupCommitter(WriteQueue.for(db));
        await Promise.all([writer.add(rows), writer.add(pendingRows)]);
        expect(
          sql.statements.filter((st) => /^insert into runs\b/.test(st)),
          'one INSERT for both runs',
        ).to.have.length(1);
        const inserted = await findRun(db, orgId, run.id);
        expect(inserted).to.deep.equal(run);
        expect(await findRun(db, orgId, pendingRows.run.id as string)).to.include({
          status: 'PENDING',
          attempts: 0,
          claimed_by: null,
          started_at: null,
          lease_until: null,
        });
        expect(inserted).to.include({ status: 'RUNNING', claimed_by: w.workers.workerId, attempts: 1 });
        const finish = w.signals.waitForFinish(run.id, 20_000);
        adoption.start(run);
        expect((await finish)?.status).to.equal('COMPLETE');
        sql.stop();
        expect(sql.statements.filter(isClaim), 'claims').to.deep.equal([]);
        const known = (await finish)!.finished?.();
        expect(known!.run).to.deep.equal(await findRun(db, orgId, run.id));
        expect(known!.steps).to.deep.equal(await listSteps(db, run.id));
        expect(known!.steps[0]!.result).to.equal('Hello, Di!');
        expect(known!.files).to.deep.equal(await listRunFiles(db, orgId, run.id));
        expect(known!.files).to.have.length(1);

        // The consumer is back: the queued runs are executed.
        const queued = await addRun(db, orgId, automationId, { name: 'Ed' });
        const next = [queued, pendingRows.run.id as string].map((id) => w!.signals.waitForRun(id, 20_000));
        await w.queue.enqueue([queued, pendingRows.run.id as string]);
        expect(await Promise.all(next)).to.deep.equal(['COMPLETE', 'COMPLETE']);
      });

      it('a cancelled adoption gives the consumer back; a claimed row whose process died is recovered like any claimed run', async () => {
        const automationId = await addWorkflow(db, orgId, DEMO_STEPS);
        w = await startWorkers(store);
        (await adoptWhenIdle()).cancel();
        const again = w.workers.adopt(orgId);
        expect(again, 'the consumer is idle again').to.not.equal(undefined);
        again!.cancel();

        const rows = newRows(automationId);
        const lost = claimedRunRow(rows, 'dead-worker', -1_000);
        await insertRuns(db, [rows]);
        expect(await recoverExpiredRuns(db, 2)).to.deep.equal({ requeued: [lost.id], failed: [] });
        const done = w.signals.waitForRun(lost.id, 20_000);
        await w.queue.enqueue([lost.id]);
        expect(await done).to.equal('COMPLETE');
        expect(Number((await runOf(db, lost.id)).attempts)).to.equal(2);
      });
    });

    it(`a run longer than ${PROGRESS_AFTER_MS} ms shows its steps as they move`, async () => {
      const automationId = await addWorkflow(db, orgId, [busyStep('Slow', 900), busyStep('Slower', 400)]);
      const runId = await addRun(db, orgId, automationId);
      w = await startWorkers(store);
      const seen: string[] = [];
      let early: Record<string, string> | undefined;
      for (;;) {
        const run = await runOf(db, runId);
        if (run.status === 'RUNNING' && !early) early = (await statusView(db, run)).stepStatus;
        const steps = (await listSteps(db, runId)).map((s) => s.status).join(',');
        if (run.status === 'RUNNING' && seen.at(-1) !== steps) seen.push(steps);
        if (TERMINAL.includes(run.status)) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(early, 'a RUNNING run without rows shows its planned steps').to.deep.equal({ 0: 'PENDING', 1: 'PENDING' });
      expect(seen, 'step rows seen while the run was RUNNING').to.include.members(['RUNNING', 'COMPLETE,RUNNING']);
      expect((await listSteps(db, runId)).map((s) => s.status)).to.deep.equal(['COMPLETE', 'COMPLETE']);
      expect((await runOf(db, runId)).status).to.equal('COMPLETE');
    });

    it('a worker whose run was taken over before its finish writes no step or file rows, deletes its blobs and sends no signal', async () => {
      const automationId = await addWorkflow(db, orgId, [
        busyStep('Write', 150, 'ctx.files.write("a.txt", "a", "text/plain"); return 1;'),
      ]);
      const runId = await addRun(db, orgId, automationId);
      w = await startWorkers(store);
      const finished: string[] = [];
      w.signals.onRunFinished((id) => finished.push(id));
      await until('the run to be claimed', async () => (await runOf(db, runId)).status === 'RUNNING');
      // As if its lease had expired, recovery had re-queued it and another worker had claimed it.
      await db('runs')
        .where({ id: runId })
        .update({
          claimed_by: 'another-worker',
          attempts: 2,
          lease_until: new Date(Date.now() + 60_000).toISOString(),
        });
      await w.close();
      w = undefined;
      expect(await runOf(db, runId)).to.include({ status: 'RUNNING', claimed_by: 'another-worker', finished_at: null });
      expect(await listSteps(db, runId)).to.deep.equal([]);
      expect(await fileRowsOf(db, runId)).to.deep.equal([]);
      const left = existsSync(stepFolder(store, runId))
        ? readdirSync(stepFolder(store, runId), { recursive: true, withFileTypes: true }).filter((d) => d.isFile())
        : [];
      expect(left, 'blobs without rows').to.deep.equal([]);
      expect(finished).to.deep.equal([]);
    });

    it('a long run taken over stops writing: its later progress and its finish are not written', async () => {
      const automationId = await addWorkflow(db, orgId, [
        busyStep('Long', 700, 'ctx.files.write("a.txt", "a", "text/plain"); return 1;'),
        busyStep('Next', 10),
      ]);
      const runId = await addRun(db, orgId, automationId);
      w = await startWorkers(store);
      await until('the progress row', async () => (await listSteps(db, runId)).length === 1, 10_000);
      await db('runs').where({ id: runId }).update({ claimed_by: 'another-worker', attempts: 2 });
      await w.close();
      w = undefined;
      expect(await runOf(db, runId)).to.include({ status: 'RUNNING', claimed_by: 'another-worker' });
      expect(
        (await listSteps(db, runId)).map((s) => s.status),
        'the row written while it owned the run',
      ).to.deep.equal(['RUNNING']);
      expect(await fileRowsOf(db, runId)).to.deep.equal([]);
    });

    it('lease renewal: a run taken over by another worker is aborted by the renewal, and never finished by this one', async () => {
      const automationId = await addWorkflow(db, orgId, [busyStep('Long', 3_000)]);
      const runId = await addRun(db, orgId, automationId);
      // Renewals every 250 ms (a third of the lease, at least 250 ms).
      w = await startWorkers(store, { RUN_LEASE_MS: '750' });
      await until('the run to be claimed', async () => (await runOf(db, runId)).status === 'RUNNING');
      const claimedAt = Date.now();
      await db('runs')
        .where({ id: runId })
        .update({
          claimed_by: 'another-worker',
          attempts: 2,
          lease_until: new Date(Date.now() + 60_000).toISOString(),
        });
      // The step is cut short by the abort: the worker is free long before the step's 3 s.
      await w.close();
      w = undefined;
      expect(Date.now() - claimedAt).to.be.lessThan(2_500);
      expect(await runOf(db, runId)).to.include({ status: 'RUNNING', claimed_by: 'another-worker' });
      expect(await listSteps(db, runId)).to.deep.equal([]);
    });

    describe('crash recovery', () => {
      it('a lost run with no step rows goes back to PENDING (the API shows its planned steps), then runs to COMPLETE', async () => {
        const automationId = await addWorkflow(db, orgId, DEMO_STEPS);
        const runId = await addRun(db, orgId, automationId, { name: 'Bo' });
        await claimRun(db, 'dead-worker', 30_000, runId);
        await db('runs')
          .where({ id: runId })
          .update({ lease_until: new Date(Date.now() - 1_000).toISOString() });
        expect(await recoverExpiredRuns(db, 2)).to.deep.equal({ requeued: [runId], failed: [] });
        const pending = await runOf(db, runId);
        expect(pending.status).to.equal('PENDING');
        expect(await listSteps(db, runId)).to.deep.equal([]);
        expect(await statusView(db, pending)).to.deep.include({ stepStatus: { 0: 'PENDING', 1: 'PENDING' } });

        w = await startWorkers(store);
        const finish = await w.signals.waitForFinish(runId, 20_000);
        expect(finish?.status).to.equal('COMPLETE');
        // A second attempt writes over rows it does not know: a waiter reads the run back.
        expect(finish!.finished?.()).to.equal(undefined);
        const steps = await listSteps(db, runId);
        expect(steps.map((s) => s.status)).to.deep.equal(['COMPLETE', 'COMPLETE']);
        expect(steps[0]!.result).to.equal('Hello, Bo!');
        expect(Number((await runOf(db, runId)).attempts)).to.equal(2);
        expect(await fileRowsOf(db, runId)).to.have.length(1);
      });

      it('with no attempts left a lost run without step rows ends FAILED, every step shown SKIPPED', async () => {
        const automationId = await addWorkflow(db, orgId, DEMO_STEPS);
        const runId = await addRun(db, orgId, automationId);
        await claimRun(db, 'dead-worker', 30_000, runId);
        await db('runs')
          .where({ id: runId })
          .update({ lease_until: new Date(Date.now() - 1_000).toISOString() });
        expect(await recoverExpiredRuns(db, 1)).to.deep.equal({ requeued: [], failed: [runId] });
        const run = await runOf(db, runId);
        expect(run.status).to.equal('FAILED');
        expect((await statusView(db, run)).stepStatus).to.deep.equal({ 0: 'SKIPPED', 1: 'SKIPPED' });
      });

      it("a re-run over an earlier attempt's rows replaces them; when it fails, the rows it did not reach end SKIPPED", async () => {
        const automationId = await addWorkflow(db, orgId, [
          { type: 'code', name: 'Boom', code: 'throw new Error("boom");' },
          busyStep('Never', 1),
        ]);
        const runId = await addRun(db, orgId, automationId);
        // The first attempt wrote progress for both steps, then its worker was lost.
        await claimRun(db, 'dead-worker', 30_000, runId);
        const started = new Date().toISOString();
        await db('run_steps').insert([
          {
            run_id: runId,
            step_index: 0,
            step_version: 1,
            name: 'Boom',
            status: 'RUNNING',
            execution_order: 1,
            started_at: started,
          },
          {
            run_id: runId,
            step_index: 1,
            step_version: 1,
            name: 'Never',
            status: 'RUNNING',
            execution_order: 2,
            started_at: started,
          },
        ]);
        await db('runs')
          .where({ id: runId })
          .update({ lease_until: new Date(Date.now() - 1_000).toISOString() });
        expect((await recoverExpiredRuns(db, 2)).requeued).to.deep.equal([runId]);
        expect((await listSteps(db, runId)).map((s) => s.status)).to.deep.equal(['PENDING', 'PENDING']);

        w = await startWorkers(store);
        expect(await w.signals.waitForRun(runId, 20_000)).to.equal('FAILED');
        const steps = await listSteps(db, runId);
        expect(steps.map((s) => s.status)).to.deep.equal(['FAILED', 'SKIPPED']);
        expect(steps[0]!.result).to.match(/boom/);
        expect(steps[1]).to.include({ result: null, execution_order: null });
        const view = await statusView(db, await runOf(db, runId));
        expect(view.stepStatus).to.deep.equal({ 0: 'FAILED', 1: 'SKIPPED' });
      });
    });
  });
}
