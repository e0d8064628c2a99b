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
import type { RunQueue } from './run-queue.js';
import type { SandboxPool } from '../engine/index.js';
import type { BlobStore } from '../kernel/blobs.js';
import { executeRun } from './executor.js';
import { deleteFiles, listRunFiles } from '../files/index.js';
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
import { runStateOf } from './fair-claims.js';
import { OrgSlots } from './org-slots.js';
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

/** A run deferred here (Redis queue): its organisation and age, so the oldest goes first. */
interface Deferred {
  runId: string;
  orgId: string;
  createdAt: string;
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
  /** Runs of each organisation executing here, against RUN_ORG_CONCURRENCY (README.md "Sharing the run slots"). */
  private readonly slots: OrgSlots;
  /**
   * Redis queue: runs whose job came while their organisation was at its cap here, by
   * organisation, oldest first. Their jobs are done (the consumer went on to other work); each
   * is announced again when a run of its organisation ends here (`deferRun`).
   */
  private readonly deferred = new Map<string, Deferred[]>();
  /** Runs deferred by a handler whose job is not removed yet. */
  private readonly deferring = new Map<string, Deferred>();
  /** Shutting down: no more runs are taken, a claim that lands now is given back (`drain`). */
  private draining = false;

  constructor(private readonly deps: RunWorkersDeps) {
    const { db, config, log } = deps;
    this.writes = WriteQueue.for(db);
    this.slots = new OrgSlots(config.runOrgConcurrency, config.runConcurrency);
    this.claims = new RunClaimer(this.writes, this.slots, { workerId: this.workerId, leaseMs: config.runLeaseMs });
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
    queue.onDeferred?.((runId) => this.deferRun(runId));
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
   * Claims one run (the given one, or the oldest PENDING of an organisation under its cap) and
   * executes it. While other runs are in flight here (or for a Redis job) it returns once the
   * run's steps are done and its finish is queued, so that the consumer's next claim can share the
   * finish's transaction; the finish commits (and signals) in the background, tracked in `active`.
   * A lone run returns after its finish committed: a claim that would find nothing must not hold
   * up the commit and the signal a synchronous caller is waiting for. A Redis job whose run's
   * organisation is at its cap here is `deferred`: the consumer is free at once, and the run is
   * announced again when its organisation has a slot (`deferRun`).
   */
  private async runOne(runId: string | undefined): Promise<boolean | 'released' | 'deferred'> {
    const run = runId === undefined ? await this.claims.next() : await this.claimJob(runId);
    if (!run || run === 'deferred') return run ?? false;
    if (this.draining) return this.release(run);
    const { stepsDone, job } = this.execute(run);
    await Promise.race([stepsDone, job]);
    if (runId === undefined && this.active.size === 1 && this.active.has(job)) await job;
    return true;
  }

  /**
   * A Redis job's run, claimed if it is PENDING and its organisation has a slot here; `deferred`
   * when it is still PENDING (its organisation was at its cap for the claim). The run's
   * organisation is noted in `deferring` in the same turn of the event loop as the answer, so
   * `deferRun` finds it; if a slot came free meanwhile, `deferRun` announces the run at once.
   */
  private async claimJob(runId: string): Promise<RunRow | 'deferred' | undefined> {
    const run = await this.claims.byId(runId);
    if (run || !this.slots.binding) return run;
    const state = await runStateOf(this.deps.db, runId);
    if (state?.status !== 'PENDING') return undefined;
    this.deferring.set(runId, { runId, orgId: state.org_id, createdAt: state.created_at });
    return 'deferred';
  }

  /**
   * A deferred run's job is removed (RedisRunQueue.onDeferred): announced again at once when its
   * organisation has a slot here by now, else kept until a run of that organisation ends here.
   * A process that stops announces what it kept (`drain`); one that dies leaves the runs PENDING,
   * and recovery announces PENDING runs older than a lease.
   */
  private deferRun(runId: string): void {
    const run = this.deferring.get(runId);
    if (!run) return;
    this.deferring.delete(runId);
    if (!this.slots.full(run.orgId) || this.draining) {
      this.announce(run);
      return;
    }
    let runs = this.deferred.get(run.orgId);
    if (!runs) this.deferred.set(run.orgId, (runs = []));
    if (runs.some((r) => r.runId === runId)) return;
    // Oldest first: a run deferred again keeps its place by age.
    const at = runs.findIndex((r) => r.createdAt > run.createdAt);
    runs.splice(at < 0 ? runs.length : at, 0, run);
  }

  /**
   * A deferred run announced again, at the head of the queue (`announceFirst`): popped next, while
   * the slot it was announced for is still free, not behind the jobs queued since.
   */
  private announce(run: Deferred): void {
    const { queue, log } = this.deps;
    (queue.announceFirst ?? queue.enqueue)
      .call(queue, [run.runId])
      .catch((err: unknown) => log.warn({ err, runId: run.runId }, 'run not announced again'));
  }

  /**
   * A run of `orgId` is done executing: its slot is free. With the Redis queue, the oldest run of
   * that organisation deferred here is announced again. True when the organisation was at its cap
   * until now.
   */
  private freeSlot(orgId: string): boolean {
    const wasFull = this.slots.give(orgId);
    const waiting = this.deferred.get(orgId);
    const next = waiting?.shift();
    if (waiting && !waiting.length) this.deferred.delete(orgId);
    if (next) this.announce(next);
    return wasFull;
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
  adopt(orgId: string): RunAdoption | undefined {
    const { config, queue } = this.deps;
    if (config.runConcurrency <= 0 || this.draining || !queue.borrowIdle) return undefined;
    // The organisation's cap holds here too: a call of an organisation at its cap is queued.
    if (!this.slots.tryTake(orgId)) return undefined;
    const slot = queue.borrowIdle();
    if (!slot) {
      this.slots.give(orgId);
      return undefined;
    }
    return {
      claim: (rows) => claimedRunRow(rows, this.workerId, config.runLeaseMs),
      start: (run) => {
        const { freed, job } = this.execute(run);
        // A consumer claims next only after a run it claimed; the lent one goes back to sleep. So
        // when this run's organisation was at its cap, its next PENDING run needs a consumer woken.
        void job.finally(async () => {
          slot.release();
          if (await freed) queue.wake?.();
        });
      },
      cancel: () => {
        slot.release();
        if (this.freeSlot(orgId)) queue.wake?.();
      },
    };
  }

  /**
   * Executes a claimed run, tracked in `active`; `stepsDone` once its finish is queued, `job` once
   * it committed and signalled. Its organisation's slot (taken by the claim or the adoption) is
   * free from whichever comes first: `freed` then, true when the organisation was at its cap.
   */
  private execute(run: RunRow): { stepsDone: Promise<void>; job: Promise<unknown>; freed: Promise<boolean> } {
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
    const freed = Promise.race([stepsDone, job]).then(() => this.freeSlot(run.org_id));
    return { stepsDone, job, freed };
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
    // Runs deferred here go back to the queue for another process.
    const deferred = [...this.deferred.values()].flatMap((runs) => runs.map((r) => r.runId));
    this.deferred.clear();
    if (deferred.length)
      await this.deps.queue
        .enqueue(deferred)
        .catch((err: unknown) => this.deps.log.warn({ err }, 'runs not announced again'));
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
