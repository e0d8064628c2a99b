/**
 * The queue dispatcher: turns queued items into runs under each queue's `concurrencyLimit`,
 * higher `priority` first, retries failed runs up to `maxRetries`, records outcomes on the batch
 * counters and completes batches. The store is the source of truth, so the rules hold across
 * processes: a queue's dispatch happens in a transaction that starts by writing its row (the
 * row lock on PostgreSQL, the write lock on sqlite), so two dispatchers never both fill the same
 * free slots. Runs are then announced on the run queue (in-process or Redis), and claimed by
 * whichever worker is free.
 *
 * Items: queued → dispatched (its run PENDING or RUNNING) → completed | failed, or back to queued
 * while retries are left; cancelled when their batch is cancelled before their run started.
 */
import type { Knex } from 'knex';
import type { Logger } from '../config/logger.js';
import type { BlobStore } from '../kernel/blobs.js';
import type { RunQueue } from '../runs/index.js';
import type { CallTargets, CallTarget } from '../triggers/index.js';
import { runRows, insertRuns, MAX_RUNS_PER_INSERT, runStatusIn, runStatusOf, type RunRows } from '../runs/index.js';
import { newId, nowIso } from '../kernel/ids.js';
import { batchSources, readPayloads } from './items.js';

export interface DispatcherDeps {
  db: Knex;
  blobs: BlobStore;
  log: Logger;
  callTargets: CallTargets;
  runQueue: RunQueue;
  /** Run time limit when the workflow sets none. */
  runTimeoutMs: number;
  /**
   * Queue runs created and not yet started, at most (all queues): priority decides which queue's
   * items take the next free places, so the run queue is never flooded by one low-priority batch.
   */
  aheadMax: number;
}

/** Outcomes recorded per pass at most (the rest on the next pass, which follows at once). */
const RECONCILE_MAX = 2000;
/** A wake schedules one pass this much later: wakes in between share it. */
const TICK_MS = 5;

interface Finished {
  seq: number | string;
  batch_id: string;
  attempts: number | string;
  run_status: string;
  max_retries: number | string;
  batch_status: string;
}

interface QueuedItem {
  seq: number | string;
  batch_id: string;
  byte_start: number | string;
  byte_end: number | string;
  attempts: number | string;
}

export class QueueDispatcher {
  private pass: Promise<void> | undefined;
  private scheduled: NodeJS.Timeout | undefined;
  private again = false;
  private stopped = false;
  private poll: NodeJS.Timeout | undefined;

  constructor(private readonly deps: DispatcherDeps) {}

  start(pollMs: number): void {
    this.poll = setInterval(() => this.wake(), pollMs);
    this.poll.unref();
    this.wake();
  }

  /** Schedules one pass soon; wakes during a pass make one more pass after it. */
  wake(): void {
    if (this.stopped) return;
    if (this.pass) {
      this.again = true;
      return;
    }
    if (this.scheduled) return;
    this.scheduled = setTimeout(() => {
      this.scheduled = undefined;
      this.pass = this.runPass().finally(() => {
        this.pass = undefined;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
    }, TICK_MS);
    this.scheduled.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.poll) clearInterval(this.poll);
    if (this.scheduled) clearTimeout(this.scheduled);
    await this.pass;
  }

  private async runPass(): Promise<void> {
    try {
      const more = await this.reconcile();
      await this.settle();
      await this.dispatch();
      if (more) this.again = true;
    } catch (err) {
      if (!this.stopped) this.deps.log.error({ err }, 'queue dispatch pass failed (retried on the next wake)');
    }
  }

  /** Records finished runs of dispatched items; true when more are left for the next pass. */
  private async reconcile(): Promise<boolean> {
    const { db } = this.deps;
    const done = (await db('queue_items as qi')
      .join('queues as q', 'q.id', 'qi.queue_id')
      .join('queue_batches as b', 'b.id', 'qi.batch_id')
      .where('qi.status', 'dispatched')
      .whereExists(runStatusIn(db, 'qi.run_id', ['COMPLETE', 'FAILED', 'TIMEOUT']))
      .limit(RECONCILE_MAX)
      .select(
        'qi.seq',
        'qi.batch_id',
        'qi.attempts',
        runStatusOf(db, 'qi.run_id').as('run_status'),
        'q.max_retries',
        'b.status as batch_status',
      )) as Finished[];
    if (done.length === 0) return false;
    // Per batch and outcome: the items to move and the counter they add to.
    const groups = new Map<string, { batchId: string; to: 'completed' | 'failed' | 'queued'; seqs: number[] }>();
    for (const d of done) {
      const retry =
        d.run_status !== 'COMPLETE' && Number(d.attempts) <= Number(d.max_retries) && d.batch_status !== 'cancelled';
      const to = d.run_status === 'COMPLETE' ? 'completed' : retry ? 'queued' : 'failed';
      const key = `${d.batch_id}\u0000${to}`;
      let g = groups.get(key);
      if (!g) groups.set(key, (g = { batchId: d.batch_id, to, seqs: [] }));
      g.seqs.push(Number(d.seq));
    }
    const now = nowIso();
    await db.transaction(async (trx) => {
      for (const g of groups.values()) {
        // Only items still dispatched move (another process may have recorded them already).
        const n = await trx('queue_items')
          .whereIn('seq', g.seqs)
          .where('status', 'dispatched')
          .update({ status: g.to, updated_at: now });
        if (n > 0 && g.to !== 'queued') {
          const column = g.to === 'completed' ? 'runs_completed' : 'runs_failed';
          await trx('queue_batches')
            .where({ id: g.batchId })
            .update({ [column]: trx.raw(`${column} + ?`, [n]), updated_at: now });
        }
      }
    });
    return done.length === RECONCILE_MAX;
  }

  /** A loaded batch whose every item finished, failed or was cancelled is completed. */
  private async settle(): Promise<void> {
    const { db } = this.deps;
    await db('queue_batches')
      .where({ status: 'running', loaded: true })
      .andWhereRaw('runs_completed + runs_failed + runs_cancelled >= loaded_rows')
      .update({ status: 'completed', updated_at: nowIso() });
  }

  /** Fills each unpaused queue's free places, highest priority first, within the dispatch-ahead budget. */
  private async dispatch(): Promise<void> {
    const { db } = this.deps;
    const queues = (await db('queues as q')
      .where('q.paused', false)
      .whereExists(
        db('queue_items as qi').select(db.raw('1')).where('qi.status', 'queued').whereRaw('qi.queue_id = q.id'),
      )
      .orderBy('q.priority', 'desc')
      .orderBy('q.id')
      .select('q.id', 'q.concurrency_limit')) as { id: string; concurrency_limit: number | string }[];
    if (queues.length === 0) return;
    const waiting = (await db('queue_items as qi')
      .where('qi.status', 'dispatched')
      .whereExists(runStatusIn(db, 'qi.run_id', ['PENDING']))
      .count({ n: '*' })
      .first()) as { n: number | string } | undefined;
    let budget = this.deps.aheadMax - Number(waiting?.n ?? 0);
    for (const q of queues) {
      if (budget <= 0 || this.stopped) break;
      const runIds = await this.fill(q.id, Number(q.concurrency_limit), budget);
      budget -= runIds.length;
      if (runIds.length) await this.deps.runQueue.enqueue(runIds);
    }
  }

  /**
   * One queue's dispatch: its free places get runs; returns the new run ids. Everything that is
   * not the store (the rows' bytes, the triggers) is read before the transaction: on sqlite a
   * write transaction that waits on file reads holds the database lock while other connections
   * sleep in their busy handlers on the same small thread pool the reads need.
   */
  private async fill(queueId: string, limit: number, budget: number): Promise<string[]> {
    const { db, blobs } = this.deps;
    // The free places as they look now (the transaction checks again under the lock): a full
    // queue costs one count, and the first queued items up to that many are the candidates.
    const open = Math.min(limit - (await this.inFlight(db, queueId)), budget);
    if (open <= 0) return [];
    const candidates = (await db('queue_items')
      .where({ status: 'queued', queue_id: queueId })
      .orderBy('seq')
      .limit(open)
      .select('seq', 'batch_id', 'byte_start', 'byte_end', 'attempts')) as QueuedItem[];
    if (candidates.length === 0) return [];
    const batches = (await db('queue_batches')
      .whereIn('id', [...new Set(candidates.map((i) => i.batch_id))])
      .select('id', 'org_id', 'trigger_id', 'trace_parent')) as {
      id: string;
      org_id: string;
      trigger_id: string;
      trace_parent: string | null;
    }[];
    const targets = new Map<string, CallTarget | undefined>();
    for (const b of batches) targets.set(b.id, await this.deps.callTargets.get(b.org_id, b.trigger_id));
    const payloads = await readPayloads(blobs, await batchSources(db, targets.keys()), candidates);
    const prepared = new Map(candidates.map((c, i) => [Number(c.seq), { item: c, payload: payloads[i] }]));
    const created = await db.transaction(async (trx) => {
      // Write first: the queue's row (PostgreSQL) or the database (sqlite) is locked until commit.
      const locked = await trx('queues').where({ id: queueId, paused: false }).increment('dispatch_seq', 1);
      if (!locked) return { runIds: [], partial: false };
      const free = Math.min(limit - (await this.inFlight(trx, queueId)), budget);
      if (free <= 0) return { runIds: [], partial: false };
      // Still queued, in order, under the lock; one not prepared (a retry put back meanwhile)
      // ends this pass's share, and the next pass takes it.
      const seqs = (await trx('queue_items')
        .where({ status: 'queued', queue_id: queueId })
        .orderBy('seq')
        .limit(free)
        .pluck('seq')) as (number | string)[];
      const take: { item: QueuedItem; payload: Record<string, string> | null | undefined }[] = [];
      for (const seq of seqs) {
        const p = prepared.get(Number(seq));
        if (!p) break;
        take.push(p);
      }
      const now = nowIso();
      const runs: RunRows[] = [];
      const dispatched: { seq: number; runId: string }[] = [];
      const unrunnable = new Map<string, number[]>();
      for (const { item, payload } of take) {
        const batch = batches.find((b) => b.id === item.batch_id)!;
        const target = targets.get(item.batch_id);
        if (!target || !target.enabled || !payload) {
          const list = unrunnable.get(item.batch_id) ?? [];
          list.push(Number(item.seq));
          unrunnable.set(item.batch_id, list);
          continue;
        }
        const runId = newId('run');
        runs.push(
          runRows(
            {
              orgId: batch.org_id,
              automationId: target.automationId,
              automationVersion: target.version,
              triggerId: target.triggerId,
              inputs: payload,
              startedBy: 'queue_batch',
              timeoutMs: target.definition.timeoutMs ?? this.deps.runTimeoutMs,
              traceLink: batch.trace_parent,
            },
            runId,
            now,
          ),
        );
        dispatched.push({ seq: Number(item.seq), runId });
      }
      for (let i = 0; i < runs.length; i += MAX_RUNS_PER_INSERT)
        await insertRuns(trx, runs.slice(i, i + MAX_RUNS_PER_INSERT));
      for (let i = 0; i < dispatched.length; i += 200) {
        const part = dispatched.slice(i, i + 200);
        const cases = part.map(() => 'WHEN ? THEN ?').join(' ');
        await trx('queue_items')
          .whereIn(
            'seq',
            part.map((d) => d.seq),
          )
          .update({
            status: 'dispatched',
            attempts: trx.raw('attempts + 1'),
            updated_at: now,
            run_id: trx.raw(
              `CASE seq ${cases} END`,
              part.flatMap((d) => [d.seq, d.runId]),
            ),
          });
      }
      for (const [batchId, seqs2] of unrunnable)
        await this.failUnrunnable(trx, batchId, { seqs: seqs2, target: targets.get(batchId), now });
      return { runIds: dispatched.map((d) => d.runId), partial: take.length < seqs.length };
    });
    if (created.partial) this.again = true;
    return created.runIds;
  }

  /** The queue's items whose run is created and not finished. */
  private async inFlight(db: Knex, queueId: string): Promise<number> {
    const row = (await db('queue_items')
      .where({ status: 'dispatched', queue_id: queueId })
      .count({ n: '*' })
      .first()) as { n: number | string } | undefined;
    return Number(row?.n ?? 0);
  }

  /**
   * Items whose batch's trigger was deleted or disabled (or whose bytes are gone) cannot start a
   * run: they fail, and the batch fails with the reason (its other queued items follow it on later passes).
   */
  private async failUnrunnable(
    trx: Knex.Transaction,
    batchId: string,
    { seqs, target, now }: { seqs: number[]; target: CallTarget | undefined; now: string },
  ): Promise<void> {
    const n = await trx('queue_items')
      .whereIn('seq', seqs)
      .where('status', 'queued')
      .update({ status: 'failed', updated_at: now });
    const reason = !target
      ? "The batch's trigger was deleted: its remaining rows cannot run."
      : !target.enabled
        ? "The batch's trigger is disabled: its remaining rows cannot run."
        : 'The uploaded file is no longer stored: its remaining rows cannot run.';
    await trx('queue_batches')
      .where({ id: batchId })
      .update({ runs_failed: trx.raw('runs_failed + ?', [n]), updated_at: now });
    await trx('queue_batches')
      .where({ id: batchId })
      .whereIn('status', ['running', 'pending'])
      .update({ status: 'failed', failure_reason: reason });
    this.deps.log.warn({ batchId, rows: n }, reason);
  }
}
