/**
 * Run workers of one process: consume the run queue, claim runs, execute them, recover runs
 * whose worker was lost, and prune old runs. `npm start` runs them beside the HTTP server
 * (RUN_CONCURRENCY > 0); `npm run worker` runs only them.
 */
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Config } from '../config/index.js';
import type { Logger } from '../config/logger.js';
import type { RunQueue } from '../queues/index.js';
import type { SandboxPool } from '../engine/index.js';
import type { BlobStore } from '../kernel/blobs.js';
import { executeRun } from './executor.js';
import { deleteFiles, listRunFiles } from './files.js';
import {
  claimedRunRow,
  loadRunForWorker,
  pendingRunIds,
  recoverExpiredRuns,
  releaseRun,
  renewLeases,
  type RunRow,
  type RunRows,
} from './runs.js';
import { RunClaimer } from './claims.js';
import { LeaseKeeper } from './leases.js';
import { WriteQueue } from '../storage/write-queue.js';
import type { Signals } from './signals.js';
import { pruneFinishedRuns } from './retention.js';
import type { AgentInvoker, ToolCaller } from '../engine/index.js';
import { runsRecovered } from '../kernel/metrics.js';

export interface RunWorkersDeps {
  db: Knex;
  config: Config;
  log: Logger;
  queue: RunQueue;
  sandbox: SandboxPool;
  blobs: BlobStore;
  signals: Signals;
  /** The fetch of an organisation's `http` steps (the outbound policy, src/kernel/outbound.ts; its own connections). */
  fetchFor?: ((orgId: string) => typeof fetch) | undefined;
  /** Tool steps call the gateway through this (src/gateway/steps.ts). */
  callTool?: ToolCaller | undefined;
  /** Agent steps run agent turns through this (src/agents). */
  invokeAgent?: AgentInvoker | undefined;
}

/** A new run handed straight to an idle consumer of this process (RunWorkers.adopt). */
export interface RunAdoption {
  /** Makes the new run's row claimed by this process's consumer: insert it so, then `start`. */
  claim(rows: RunRows): RunRow;
  /** The claimed row is durable: executes it. */
  start(run: RunRow): void;
  /** The row was not written: the consumer goes back to sleep. */
  cancel(): void;
}

export class RunWorkers {
  readonly workerId = `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private timers: NodeJS.Timeout[] = [];
  /** Runs executing or committing their finish. */
  private readonly active = new Set<Promise<unknown>>();
  /**
   * Every write of the runs this process executes: claims, progress, finishes and lease
   * renewals share transactions (group commit), and on sqlite wait here rather than in
   * SQLite's busy handler (src/runs/README.md).
   */
  private readonly writes: WriteQueue;
  private readonly claims: RunClaimer;
  private readonly leases: LeaseKeeper;
  /** Shutting down: no more runs are taken, a claim that lands now is given back (`drain`). */
  private draining = false;

  constructor(private readonly deps: RunWorkersDeps) {
    const { db, config, log } = deps;
    this.writes = WriteQueue.for(db);
    this.claims = new RunClaimer(this.writes, this.workerId, config.runLeaseMs);
    this.leases = new LeaseKeeper(
      (runIds) =>
        this.writes.run((trx) => renewLeases(trx, runIds, this.workerId, config.runLeaseMs), { autocommit: true }),
      Math.max(250, Math.floor(config.runLeaseMs / 3)),
      log,
    );
  }

  async start(): Promise<void> {
    const { config, queue, log } = this.deps;
    queue.onError((err) => log.warn({ err }, 'run queue error (the queue carries on)'));
    await this.recover();
    // Redis may have lost jobs (restart without persistence): PENDING rows are re-announced.
    if (queue.kind === 'redis') await queue.enqueue(await pendingRunIds(this.deps.db));
    this.leases.start();
    if (config.runConcurrency > 0) queue.consume(config.runConcurrency, (runId) => this.runOne(runId));
    const every = (ms: number, fn: () => Promise<unknown>) => {
      const t = setInterval(
        () => void fn().catch((err: unknown) => this.deps.log.error({ err }, 'background run task failed')),
        ms,
      );
      t.unref();
      this.timers.push(t);
    };
    every(Math.max(250, Math.floor(config.runLeaseMs / 2)), () => this.recover());
    every(3_600_000, () => pruneFinishedRuns(this.deps.db, this.deps.blobs, config.runRetentionDays));
  }

  /**
   * Claims one run (the given one, or the oldest PENDING) and executes it. While other runs are
   * in flight here (or for a Redis job) it returns once the run's steps are done and its finish
   * is queued, so that the consumer's next claim can share the finish's transaction; the finish
   * commits (and signals) in the background, tracked in `active`. A lone run returns after its
   * finish committed: a claim that would find nothing must not hold up the commit and the
   * signal a synchronous caller is waiting for.
   */
  private async runOne(runId: string | undefined): Promise<boolean | 'released'> {
    const run = runId === undefined ? await this.claims.next() : await this.claims.byId(runId);
    if (!run) return false;
    if (this.draining) return this.release(run);
    const { stepsDone, job } = this.execute(run);
    await Promise.race([stepsDone, job]);
    if (runId === undefined && this.active.size === 1 && this.active.has(job)) await job;
    return true;
  }

  /**
   * A synchronous call's new run, handed straight to a consumer of this process that is asleep
   * (so nothing is queued here): the call inserts the run already claimed for it, and it
   * executes the run without the queue's wake-up and the claim statement, which shortens a
   * one-caller round trip (bench/README.md, "Run execution"). The consumer is lent, not added:
   * the process still runs at most RUN_CONCURRENCY runs at once. Undefined with the Redis queue
   * (the run goes to whichever process takes its job), in a process that executes no runs, and
   * when no consumer is idle.
   */
  adopt(): RunAdoption | undefined {
    const { config, queue } = this.deps;
    const slot = config.runConcurrency > 0 && !this.draining ? queue.borrowIdle?.() : undefined;
    if (!slot) return undefined;
    return {
      claim: (rows) => claimedRunRow(rows, this.workerId, config.runLeaseMs),
      start: (run) => void this.execute(run).job.finally(() => slot.release()),
      cancel: () => slot.release(),
    };
  }

  /**
   * Executes a claimed run, tracked in `active`; `stepsDone` once its finish is queued, `job` once
   * it committed and signalled.
   */
  private execute(run: RunRow): { stepsDone: Promise<void>; job: Promise<unknown> } {
    const { config, log } = this.deps;
    let executed!: () => void;
    const stepsDone = new Promise<void>((resolve) => (executed = resolve));
    const job = executeRun(
      {
        ...this.deps,
        writes: this.writes,
        leases: this.leases,
        workerId: this.workerId,
        leaseMs: config.runLeaseMs,
        fileTtlMs: 24 * 3_600_000,
        onExecuted: executed,
      },
      run,
    )
      .catch((err: unknown) => {
        // The store failed the finish (the run stays RUNNING until its lease expires, then recovery
        // re-runs it), or the finish signal could not be sent.
        log.error({ err, runId: run.id }, 'the end of a run was not recorded or not signalled');
      })
      .finally(() => this.active.delete(job));
    this.active.add(job);
    return { stepsDone, job };
  }

  /** Documented rule: lease expired → back to PENDING while attempts remain, else FAILED. */
  private async recover(): Promise<void> {
    const { db, config, queue, log, blobs, signals } = this.deps;
    const { requeued, failed } = await recoverExpiredRuns(db, config.runMaxAttempts);
    if (requeued.length) runsRecovered.labels('requeued').inc(requeued.length);
    if (failed.length) runsRecovered.labels('failed').inc(failed.length);
    // A re-run starts clean: the lost attempt's step files go; attachments (inputs) stay.
    for (const runId of requeued) {
      const run = await loadRunForWorker(db, runId);
      if (!run) continue;
      const stepFiles = (await listRunFiles(db, run.org_id, runId)).filter((f) => f.kind === 'step');
      await deleteFiles(
        db,
        blobs,
        run.org_id,
        stepFiles.map((f) => f.id),
      );
    }
    if (requeued.length) {
      log.warn({ runs: requeued }, 'recovered runs whose worker was lost: queued again');
      await queue.enqueue(requeued);
    }
    for (const runId of failed) await signals.runFinished(runId, 'FAILED');
    if (failed.length) log.warn({ runs: failed }, 'runs whose worker was lost and no attempts were left: FAILED');
    // Redis queue: a run still PENDING a lease after it was created lost its job (a handler
    // failure removed it, or Redis lost it): announce it again. The job id is the run id, so
    // a run whose job is still waiting is not queued twice.
    if (queue.kind === 'redis') {
      const stale = await pendingRunIds(db, 1000, new Date(Date.now() - config.runLeaseMs).toISOString());
      if (stale.length) await queue.enqueue(stale);
    }
  }

  /**
   * Shutdown, first part: the queue delivers no more runs here, a run whose claim lands from now
   * on is given back unstarted (PENDING, its attempt not counted) for another process, and the
   * runs executing here go on. Resolves once none is left (their finishes committed). Lease
   * renewal goes on until `close`.
   */
  async drain(): Promise<void> {
    this.draining = true;
    for (const t of this.timers.splice(0)) clearInterval(t);
    await this.deps.queue.stop();
    while (this.active.size) await Promise.allSettled([...this.active]);
  }

  /** A run claimed after `drain` began, given back; the in-process queue's other processes find it PENDING. */
  private async release(run: RunRow): Promise<'released'> {
    const released = await this.writes.run((trx) => releaseRun(trx, run, this.workerId), { autocommit: true });
    if (released) this.deps.log.info({ runId: run.id }, 'shutting down: run given back unstarted');
    return 'released';
  }

  async close(): Promise<void> {
    await this.drain();
    await this.deps.queue.close();
    this.leases.stop();
  }
}
