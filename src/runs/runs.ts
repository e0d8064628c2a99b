/**
 * Runs and their steps (spec "Run identifiers", "States and transitions"). A run pins the
 * workflow version it started with; terminal states are final: every transition is a
 * conditional UPDATE that never touches a run already COMPLETE, FAILED or TIMEOUT.
 */
import type { Knex } from 'knex';
import { fromJson, toJson } from '../storage/db.js';
import { newId, nowIso } from '../kernel/ids.js';
import { activeTraceparent } from '../kernel/tracing.js';
import type { RunStatus, StepStatus } from './states.js';

export interface NewRun {
  orgId: string;
  automationId: string;
  automationVersion: number;
  triggerId: string | null;
  inputs: Record<string, unknown>;
  startedBy: string;
  timeoutMs: number;
  /**
   * A `traceparent` the run's span links to instead of joining its trace (a queue run: the request
   * that created its batch); the run then begins a trace of its own.
   */
  traceLink?: string | null;
}

export interface RunRow {
  id: string;
  org_id: string;
  workflow_id: string;
  workflow_version: number;
  trigger_id: string | null;
  status: RunStatus;
  inputs: string | null;
  started_by: string | null;
  error: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  attempts: number;
  claimed_by: string | null;
  lease_until: string | null;
  timeout_ms: number | null;
  /** The traceparent of the span that created the run (null when tracing is off). */
  trace_parent: string | null;
  /** The traceparent the run's span links to, in a trace of its own (NewRun.traceLink). */
  trace_link: string | null;
}

export interface StepRow {
  run_id: string;
  step_index: number;
  step_version: number;
  name: string;
  status: StepStatus;
  execution_order: number | null;
  result_type: string | null;
  result: string | null;
  exit_code: number | null;
  duration_ms: number | null;
  started_at: string | null;
  finished_at: string | null;
  logs: string | null;
}

const leaseUntil = (leaseMs: number) => new Date(Date.now() + leaseMs).toISOString();

/**
 * The row to insert for one run; the caller decides how it is written (group commit batches
 * many). A run is accepted as this one row. Its step rows are written by the worker's
 * RunRecorder (recorder.ts): with the run's finish, or as progress once the run has lasted a
 * while; until then the pinned version says what each step is (`withPlannedSteps`). One row per
 * run lets a batch of accepted runs be one INSERT statement (bench/triggers.ts).
 */
export function runRows(run: NewRun, id = newId('run'), now = nowIso()): { run: Record<string, unknown> } {
  return {
    run: {
      id,
      org_id: run.orgId,
      workflow_id: run.automationId,
      workflow_version: run.automationVersion,
      trigger_id: run.triggerId,
      status: 'PENDING',
      inputs: toJson(run.inputs),
      started_by: run.startedBy,
      created_at: now,
      attempts: 0,
      timeout_ms: run.timeoutMs,
      // The run's span joins the trace of the request creating it (src/kernel/tracing.ts), or
      // begins its own with a link to the span that caused it.
      trace_parent: run.traceLink ? null : (activeTraceparent() ?? null),
      trace_link: run.traceLink ?? null,
    },
  };
}

export type RunRows = ReturnType<typeof runRows>;

/**
 * A new run's row as a claim would leave it (claimRun): RUNNING, claimed by `workerId` on its
 * first attempt, with a lease. For a run handed straight to an idle consumer of the process that
 * creates it (RunWorkers.adopt): inserted this way, it needs no claim statement. Its crash safety
 * is a claimed run's: if the process dies, the lease expires and recovery queues it again.
 * Every column is set, so the row is the run exactly as the store holds it.
 */
export function claimedRunRow(rows: RunRows, workerId: string, leaseMs: number, now = nowIso()): RunRow {
  Object.assign(rows.run, {
    status: 'RUNNING',
    attempts: 1,
    claimed_by: workerId,
    started_at: now,
    lease_until: leaseUntil(leaseMs),
    idempotency_key: null,
    error: null,
    finished_at: null,
  });
  return rows.run as unknown as RunRow;
}

/**
 * Runs per INSERT statement: 13 columns each stays under sqlite's (32,766) and PostgreSQL's
 * (65,535) bound-parameter limits.
 */
export const MAX_RUNS_PER_INSERT = 500;

/**
 * Inserts runs. Without `extra`, a batch of up to MAX_RUNS_PER_INSERT runs is one INSERT
 * statement — atomic on its own, so no BEGIN/COMMIT round trips; with `extra` (attachments,
 * idempotency) everything is one transaction.
 */
export async function insertRuns(
  db: Knex,
  rows: RunRows[],
  extra?: (trx: Knex.Transaction) => Promise<void>,
): Promise<void> {
  if (rows.length === 0) return;
  if (rows.length > MAX_RUNS_PER_INSERT) throw new Error(`insertRuns: at most ${MAX_RUNS_PER_INSERT} runs per call`);
  if (!extra) {
    await db('runs').insert(rows.map((r) => r.run));
    return;
  }
  await db.transaction(async (trx) => {
    await extra(trx);
    await trx('runs').insert(rows.map((r) => r.run));
  });
}

/** The steps of a pinned version as a run records them: name and step version, in order. */
export function pinnedStepList(pinned: {
  definition: { steps: readonly { name: string }[] };
  stepMap: Record<string, number>;
}): { name: string; stepVersion: number }[] {
  return pinned.definition.steps.map((s, i) => ({ name: s.name, stepVersion: pinned.stepMap[String(i)] ?? 1 }));
}

/**
 * Every step of a run: the rows of the steps a worker started, and for the others what the
 * pinned version plans — PENDING while the run is not over, SKIPPED once it is.
 */
export function withPlannedSteps(
  run: RunRow,
  rows: StepRow[],
  planned: readonly { name: string; stepVersion: number }[],
): StepRow[] {
  const status: StepStatus = run.status === 'PENDING' || run.status === 'RUNNING' ? 'PENDING' : 'SKIPPED';
  const byIndex = new Map(rows.map((r) => [Number(r.step_index), r]));
  const all = planned.map(
    (s, i) =>
      byIndex.get(i) ?? {
        run_id: run.id,
        step_index: i,
        step_version: s.stepVersion,
        name: s.name,
        status,
        execution_order: null,
        result_type: null,
        result: null,
        exit_code: null,
        duration_ms: null,
        started_at: null,
        finished_at: null,
        logs: null,
      },
  );
  // Rows beyond the plan cannot exist for a pinned version; keep them rather than hide data.
  for (const r of rows) if (Number(r.step_index) >= planned.length) all.push(r);
  return all;
}

export async function findRun(db: Knex, orgId: string, runId: string): Promise<RunRow | undefined> {
  return (await db('runs').where({ id: runId, org_id: orgId }).first()) as RunRow | undefined;
}

/** Unscoped read for the worker, which receives run ids from its own queue. */
export async function loadRunForWorker(db: Knex, runId: string): Promise<RunRow | undefined> {
  return (await db('runs').where({ id: runId }).first()) as RunRow | undefined;
}

export async function listSteps(db: Knex, runId: string): Promise<StepRow[]> {
  return (await db('run_steps').where({ run_id: runId }).orderBy('step_index')) as StepRow[];
}

export function runInputs(row: RunRow): Record<string, unknown> {
  return fromJson<Record<string, unknown>>(row.inputs) ?? {};
}

/**
 * Claims the oldest PENDING run (in-process queue) or a given one (Redis queue): PENDING →
 * RUNNING with a lease. One statement, so two workers never claim the same run. The pick is
 * a scalar subquery (`id = (…)`, evaluated once), not `id IN (…)`: PostgreSQL may run an IN
 * subquery as a semi-join that re-scans `LIMIT 1 FOR UPDATE SKIP LOCKED` per outer row, and
 * each re-scan skips the row just updated and returns the next one — claiming every PENDING run.
 */
export async function claimRun(
  db: Knex,
  workerId: string,
  leaseMs: number,
  runId?: string,
): Promise<RunRow | undefined> {
  const now = nowIso();
  const pick = runId
    ? db('runs').select('id').where({ id: runId, status: 'PENDING' })
    : db('runs').select('id').where({ status: 'PENDING' }).orderBy('created_at').orderBy('id').limit(1);
  if (db.client.config.client === 'pg' && !runId) pick.forUpdate().skipLocked();
  const rows = (await db('runs')
    .where('id', pick)
    .andWhere({ status: 'PENDING' })
    .update({
      status: 'RUNNING',
      claimed_by: workerId,
      lease_until: leaseUntil(leaseMs),
      started_at: now,
      attempts: db.raw('attempts + 1'),
    })
    .returning('*')) as RunRow[];
  return rows[0];
}

/**
 * A run this worker claimed but did not start, given back (shutdown): PENDING again, its attempt
 * not counted, so another process claims it at once. False when the claim is no longer this one's.
 */
export async function releaseRun(db: Knex, run: RunRow, workerId: string): Promise<boolean> {
  const n = await db('runs')
    .where({ id: run.id, status: 'RUNNING', claimed_by: workerId, attempts: run.attempts })
    .update({ status: 'PENDING', claimed_by: null, lease_until: null, started_at: null, attempts: run.attempts - 1 });
  return n > 0;
}

/**
 * Claims up to `limit` of the oldest PENDING runs in one statement: the in-process queue's
 * consumers that ask at the same moment share it (src/runs/claims.ts). With `limit` 1 this is
 * claimRun. On PostgreSQL the pick is a MATERIALIZED CTE, which is evaluated exactly once, so
 * `LIMIT n FOR UPDATE SKIP LOCKED` locks at most n rows. An `IN` subquery could be re-run as a
 * semi-join, as the comment on claimRun explains. sqlite has one writer at a time and evaluates
 * an uncorrelated `IN` subquery once. Oldest first.
 */
export async function claimRuns(db: Knex, workerId: string, leaseMs: number, limit: number): Promise<RunRow[]> {
  if (limit <= 1) {
    const run = limit === 1 ? await claimRun(db, workerId, leaseMs) : undefined;
    return run ? [run] : [];
  }
  const now = nowIso();
  let rows: RunRow[];
  if (db.client.config.client === 'pg') {
    const res = (await db.raw(
      `with picked as materialized (select id from runs where status = 'PENDING' order by created_at, id limit ? for update skip locked)
       update runs set status = 'RUNNING', claimed_by = ?, lease_until = ?, started_at = ?, attempts = runs.attempts + 1
       from picked where runs.id = picked.id and runs.status = 'PENDING' returning runs.*`,
      [limit, workerId, leaseUntil(leaseMs), now],
    )) as { rows: RunRow[] };
    rows = res.rows;
  } else {
    rows = (await db('runs')
      .whereIn(
        'id',
        db('runs').select('id').where({ status: 'PENDING' }).orderBy('created_at').orderBy('id').limit(limit),
      )
      .andWhere({ status: 'PENDING' })
      .update({
        status: 'RUNNING',
        claimed_by: workerId,
        lease_until: leaseUntil(leaseMs),
        started_at: now,
        attempts: db.raw('attempts + 1'),
      })
      .returning('*')) as RunRow[];
  }
  return rows.sort((a, b) =>
    a.created_at === b.created_at ? (a.id < b.id ? -1 : 1) : a.created_at < b.created_at ? -1 : 1,
  );
}

/** Ids per lease-renewal UPDATE: far under both stores' bound-parameter limits. */
const RENEW_CHUNK = 500;

/**
 * Extends the leases of the runs this worker holds, in one UPDATE per 500 runs
 * (src/runs/leases.ts); returns the ids renewed. A run missing from the answer is lost: it is no
 * longer RUNNING, or another worker holds it now.
 */
export async function renewLeases(
  db: Knex,
  runIds: readonly string[],
  workerId: string,
  leaseMs: number,
): Promise<Set<string>> {
  const renewed = new Set<string>();
  for (let i = 0; i < runIds.length; i += RENEW_CHUNK) {
    const rows = (await db('runs')
      .whereIn('id', runIds.slice(i, i + RENEW_CHUNK))
      .andWhere({ claimed_by: workerId, status: 'RUNNING' })
      .update({ lease_until: leaseUntil(leaseMs) })
      .returning('id')) as { id: string }[];
    for (const r of rows) renewed.add(r.id);
  }
  return renewed;
}

export interface StepOutcome {
  status: StepStatus;
  resultType: string;
  result: string;
  exitCode: number;
  durationMs: number;
  logs: string[];
}

export async function skipRemainingSteps(db: Knex, runId: string): Promise<void> {
  await db('run_steps')
    .where({ run_id: runId })
    .whereIn('status', ['PENDING', 'RUNNING'])
    .update({ status: 'SKIPPED' });
}

/**
 * Crash recovery (documented rule): a RUNNING run whose lease expired lost its worker. With
 * attempts left it goes back to PENDING (its steps reset, their files removed by the caller);
 * otherwise it ends FAILED with "worker lost". Returns the ids re-queued and failed.
 */
export async function recoverExpiredRuns(
  db: Knex,
  maxAttempts: number,
): Promise<{ requeued: string[]; failed: string[] }> {
  const now = nowIso();
  const expired = (await db('runs')
    .where({ status: 'RUNNING' })
    .andWhere('lease_until', '<', now)
    .select('id', 'attempts')) as { id: string; attempts: number }[];
  const requeued: string[] = [];
  const failed: string[] = [];
  for (const r of expired) {
    if (Number(r.attempts) < maxAttempts) {
      const n = await db.transaction(async (trx) => {
        const moved = await trx('runs')
          .where({ id: r.id, status: 'RUNNING' })
          .andWhere('lease_until', '<', now)
          .update({ status: 'PENDING', claimed_by: null, lease_until: null, started_at: null });
        if (moved === 1) {
          await trx('run_steps').where({ run_id: r.id }).update({
            status: 'PENDING',
            execution_order: null,
            result_type: null,
            result: null,
            exit_code: null,
            duration_ms: null,
            started_at: null,
            finished_at: null,
            logs: null,
          });
        }
        return moved;
      });
      if (n === 1) requeued.push(r.id);
    } else {
      const n = await db('runs').where({ id: r.id, status: 'RUNNING' }).andWhere('lease_until', '<', now).update({
        status: 'FAILED',
        finished_at: now,
        error: 'The worker running this run was lost (crash or shutdown) and no attempts are left',
        lease_until: null,
      });
      if (n === 1) {
        await skipRemainingSteps(db, r.id);
        failed.push(r.id);
      }
    }
  }
  return { requeued, failed };
}

/** Ids of PENDING runs, oldest first (re-enqueued at start by the Redis backend). */
export async function pendingRunIds(db: Knex, limit = 10_000, createdBefore?: string): Promise<string[]> {
  const q = db('runs').where({ status: 'PENDING' });
  if (createdBefore) q.andWhere('created_at', '<', createdBefore);
  return ((await q.orderBy('created_at').limit(limit).select('id')) as { id: string }[]).map((r) => r.id);
}

/** PENDING runs, counted up to `cap` (a bounded range of the (status, created_at) index). */
export async function countPendingRuns(db: Knex, cap: number): Promise<number> {
  const pending = db('runs').where({ status: 'PENDING' }).limit(cap).select(db.raw('1 as one')).as('p');
  const row = (await db.from(pending).count({ n: '*' }).first()) as { n: number | string } | undefined;
  return Number(row?.n ?? 0);
}
