/**
 * A run's writes (src/runs/README.md). The executor hands each step's start and end
 * to a RunRecorder, which keeps them in memory as whole step rows:
 * - a run that ends within PROGRESS_AFTER_MS writes its step rows, its step files' rows and its
 *   terminal state in ONE transaction (`finish`);
 * - a run still executing after PROGRESS_AFTER_MS writes what it has, and from then on every
 *   step start and end as it happens, so pollers of a long run see its steps move.
 * Every write goes through the workers' WriteQueue, so concurrent runs share transactions
 * (group commit), and starts with a conditional UPDATE of the run: RUNNING, claimed by this
 * worker, and still on this attempt. A later claim, even by this same process, counts one more
 * attempt. When that UPDATE matches nothing, another claim owns the run now, and this attempt
 * writes nothing more for it.
 */
import type { Knex } from 'knex';
import type { BatchGroup, WriteQueue } from '../storage/write-queue.js';
import { nowIso } from '../kernel/ids.js';
import {
  fileRecords,
  fileRows,
  insertFileRows,
  insertFileRowsLater,
  type FileCreate,
  type FileRow,
} from '../files/index.js';
import { skipRemainingSteps, type RunRow, type StepOutcome, type StepRow } from './runs.js';
import type { FinishedRun } from './signals.js';
import type { RunStatus } from './states.js';

/**
 * How long a run executes before its progress is written as it happens. A shorter run shows its
 * planned steps PENDING while it is RUNNING, then every step at once when it ends: a poller sees
 * at most a quarter of a second less detail. A longer run writes one small transaction per step
 * start and end, which is negligible next to its own time. Most runs end well within 250 ms (the
 * demo workflow takes a few ms), so they stay at one transaction. The spec sets no polling
 * cadence; 250 ms is our choice.
 */
export const PROGRESS_AFTER_MS = 250;

/** Whole step rows in one statement, replacing rows that exist (an earlier attempt's, or this attempt's progress). */
async function upsertSteps(db: Knex, rows: readonly StepRow[]): Promise<void> {
  if (rows.length === 0) return;
  await db('run_steps')
    .insert([...rows])
    .onConflict(['run_id', 'step_index'])
    .merge();
}

/** A fresh run's finish: its terminal state, and its step and file rows, none written yet. */
interface Finish {
  runId: string;
  attempts: number;
  workerId: string;
  status: RunStatus;
  error: string | undefined;
  rows: readonly StepRow[];
  files: readonly FileRow[];
}

/** Finishes per UPDATE statement: 9 bound values each, far under both stores' limits. */
const FINISH_CHUNK = 100;

/** A run the finishes' UPDATE matched, as the store returns it. */
type Claim = { id: string; attempts: number | string };

/**
 * The finishes of the fresh runs of one write batch: ONE conditional UPDATE sets the terminal
 * state of every run the batch finishes and answers which of them matched (RUNNING, claimed by
 * that worker, on that attempt); only those get their step and file rows, deferred into the
 * batch's multi-row INSERTs. A finish per statement made the write queue's chain of round trips
 * the limit of executed runs per second (bench/README.md). Each finish is answered with the
 * finished_at it committed, or false when its run did not match.
 */
const FINISHES: BatchGroup<Finish, string | false> = {
  async flush(trx, items, batch) {
    const owned = new Set<string>();
    const finishedAt = nowIso();
    for (let i = 0; i < items.length; i += FINISH_CHUNK) {
      const chunk = items.slice(i, i + FINISH_CHUNK);
      // A claim is (id, attempts): an older attempt of a run this batch also finishes matches nothing.
      const cases = chunk.map(() => 'when id = ? and attempts = ? then ?').join(' ');
      const bindings: unknown[] = [];
      for (const f of chunk) bindings.push(f.runId, f.attempts, f.status);
      for (const f of chunk) bindings.push(f.runId, f.attempts, f.error ?? null);
      bindings.push(finishedAt);
      for (const f of chunk) bindings.push(f.runId, f.attempts, f.workerId);
      const res = (await trx.raw(
        `update runs set status = case ${cases} end, error = case ${cases} end, finished_at = ?, lease_until = null
         where status = 'RUNNING' and (${chunk.map(() => '(id = ? and attempts = ? and claimed_by = ?)').join(' or ')}) returning id, attempts`,
        bindings as Knex.RawBinding[],
      )) as Claim[] | { rows: Claim[] };
      for (const row of Array.isArray(res) ? res : res.rows) owned.add(`${row.id} ${Number(row.attempts)}`);
    }
    return items.map((f) => {
      if (!owned.has(`${f.runId} ${f.attempts}`)) return false;
      if (f.rows.length) batch.insertLater('run_steps', f.rows as unknown as Record<string, unknown>[]);
      insertFileRowsLater(batch, f.files);
      return finishedAt;
    });
  },
};

export interface RecorderDeps {
  writes: WriteQueue;
  workerId: string;
  leaseMs: number;
}

export class RunRecorder {
  /** This attempt's step rows, by step index. */
  private readonly steps = new Map<number, StepRow>();
  /** Step indexes whose row changed since it was last written. */
  private readonly dirty = new Set<number>();
  /** Rows of step files whose blobs are stored, not written yet. */
  private files: FileRow[] = [];
  private live = false;
  private finishing = false;
  /** Progress writes, one after the other. */
  private chain: Promise<void> = Promise.resolve();
  /** True once this attempt knows another claim owns the run: it writes nothing more for it. */
  lost = false;
  /** What a fresh run's committed finish wrote: the run whole (`finishedRun`). */
  private committed:
    { status: RunStatus; error: string | null; finishedAt: string; rows: StepRow[]; files: FileRow[] } | undefined;

  constructor(
    private readonly deps: RecorderDeps,
    private readonly run: RunRow,
    private readonly onLost: () => void,
  ) {}

  stepStarted(stepIndex: number, executionOrder: number, step: { name: string; stepVersion: number }): Promise<void> {
    this.steps.set(stepIndex, {
      run_id: this.run.id,
      step_index: stepIndex,
      step_version: step.stepVersion,
      name: step.name,
      status: 'RUNNING',
      execution_order: executionOrder,
      result_type: null,
      result: null,
      exit_code: null,
      duration_ms: null,
      started_at: nowIso(),
      finished_at: null,
      logs: null,
    });
    this.dirty.add(stepIndex);
    return this.live ? this.flush() : Promise.resolve();
  }

  /** A step ended; `files` are its files, whose blobs are stored (durable) already. */
  stepFinished(stepIndex: number, o: StepOutcome, files: readonly FileCreate[]): Promise<void> {
    const row = this.steps.get(stepIndex);
    if (!row) throw new Error(`step ${stepIndex} finished without starting`);
    Object.assign(row, {
      status: o.status,
      result_type: o.resultType,
      result: o.result,
      exit_code: o.exitCode,
      duration_ms: o.durationMs,
      finished_at: nowIso(),
      logs: o.logs.length ? o.logs.join('\n') : null,
    });
    this.dirty.add(stepIndex);
    this.files.push(...fileRows(files));
    return this.live ? this.flush() : Promise.resolve();
  }

  /** The run is no longer short: writes what is pending now, and every later change at once. */
  goLive(): Promise<void> {
    if (this.live || this.finishing || this.lost) return Promise.resolve();
    this.live = true;
    return this.flush();
  }

  /** The lease renewal did not extend this run's lease. Once the finish is queued, that finish decides. */
  leaseLost(): void {
    if (!this.finishing && !this.lost) this.markLost();
  }

  /** Blobs this attempt stored whose rows were never written (deleted when the run is lost). */
  unrecordedBlobKeys(): string[] {
    return this.files.map((f) => f.blob_key);
  }

  /**
   * Writes the step rows, the file rows and the terminal state in one transaction. Resolves
   * true once it committed, false when another claim owns the run: nothing was written then.
   */
  async finish(status: RunStatus, error: string | undefined): Promise<boolean> {
    this.finishing = true;
    await this.chain;
    if (this.lost) return false;
    if (status !== 'COMPLETE') {
      // A step cut short outside its own outcome (the run failed around it) ends SKIPPED, as skipRemainingSteps did.
      for (const [i, row] of this.steps) {
        if (row.status === 'RUNNING') {
          row.status = 'SKIPPED';
          this.dirty.add(i);
        }
      }
    }
    const rows = this.takeDirty();
    const files = this.files;
    // Rows can exist already only if this attempt wrote progress, or an earlier attempt ran (attempts
    // counts claims). Otherwise the rows are new, and they join the other runs' rows of the same
    // transaction in one INSERT.
    const fresh = !this.live && Number(this.run.attempts) <= 1;
    if (fresh) {
      const finishedAt = await this.deps.writes.run(async (_trx, batch) =>
        batch.joinLater(FINISHES, {
          runId: this.run.id,
          attempts: Number(this.run.attempts),
          workerId: this.deps.workerId,
          status,
          error,
          rows,
          files,
        }),
      );
      if (finishedAt === false) {
        this.lost = true;
        return false;
      }
      this.files = [];
      // Every step row of the run is in `rows`: no earlier attempt or progress wrote any.
      this.committed = { status, error: error ?? null, finishedAt, rows, files };
      return true;
    }
    const finished = await this.deps.writes.run(async (trx, batch) => {
      const n = await trx('runs')
        .where(this.owned())
        .update({ status, finished_at: nowIso(), error: error ?? null, lease_until: null });
      if (n !== 1) return false;
      await upsertSteps(trx, rows);
      // An earlier attempt's rows for steps this one did not reach.
      if (status !== 'COMPLETE') await skipRemainingSteps(trx, this.run.id);
      insertFileRowsLater(batch, files);
      return true;
    });
    if (finished) this.files = [];
    else this.lost = true;
    return finished;
  }

  /**
   * The run as its committed finish left it in the store, for a waiter in this process
   * (signals.ts `FinishedRun`); undefined unless that finish wrote the run's rows whole (a fresh
   * run). Its files are only the step files: a caller whose run has attachments reads it back.
   */
  readonly finishedRun: FinishedRun = () => {
    const c = this.committed;
    if (!c) return undefined;
    return {
      run: { ...this.run, status: c.status, error: c.error, finished_at: c.finishedAt, lease_until: null },
      steps: c.rows.map((r) => ({ ...r })),
      files: fileRecords(c.files),
    };
  };

  /** The run as this attempt's claim left it: the condition of every write after the claim. */
  private owned(): Record<string, string | number> {
    return { id: this.run.id, status: 'RUNNING', claimed_by: this.deps.workerId, attempts: Number(this.run.attempts) };
  }

  private markLost(): void {
    this.lost = true;
    this.onLost();
  }

  private takeDirty(): StepRow[] {
    const rows = [...this.dirty].sort((a, b) => a - b).map((i) => ({ ...this.steps.get(i)! }));
    this.dirty.clear();
    return rows;
  }

  private flush(): Promise<void> {
    const next = this.chain.then(() => this.writeProgress());
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Writes the changed step rows and pending file rows, if this attempt still owns the run. */
  private async writeProgress(): Promise<void> {
    if (this.lost || (this.dirty.size === 0 && this.files.length === 0)) return;
    const rows = this.takeDirty();
    const files = this.files.splice(0);
    let held: boolean;
    try {
      held = await this.deps.writes.run(async (trx) => {
        // The ownership check is a write, as a write-queue operation must start with one, and it renews the lease.
        if (!(await this.renew(trx))) return false;
        await upsertSteps(trx, rows);
        await insertFileRows(trx, files);
        return true;
      });
    } catch (err) {
      // Not written: kept for the next write (or the finish).
      for (const r of rows) this.dirty.add(r.step_index);
      this.files.unshift(...files);
      throw err;
    }
    if (!held) {
      this.files.unshift(...files);
      this.markLost();
    }
  }

  private async renew(trx: Knex.Transaction): Promise<boolean> {
    const n = await trx('runs')
      .where(this.owned())
      .update({ lease_until: new Date(Date.now() + this.deps.leaseMs).toISOString() });
    return n === 1;
  }
}
