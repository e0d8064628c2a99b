/**
 * Batch records and their reads (openapi/queues.yaml QueueBatch, listBatchRowErrors). Counters
 * are columns kept exact by the transactions that change them: the loader's chunk commits
 * (`loaded_rows`, `skipped_rows`), the dispatcher's outcome records (`runs_completed`,
 * `runs_failed`) and cancel (`runs_cancelled`). Pending and running runs are counted at read
 * time from the batch's dispatched items, which are never more than the queue's concurrency
 * limit plus its dispatch-ahead.
 */
import type { Knex } from 'knex';
import { AppError } from '../errors/index.js';
import { runStatusIn, runStatusOf } from '../runs/index.js';
import { decodeCursor, encodeCursor, pageRows, type Page, type PageRequest } from '../kernel/page.js';

export const BATCH_ID_PATTERN = /^batch_[0-9a-f]{32}$/;

export type BatchStatus = 'validating' | 'pending' | 'running' | 'completed' | 'failed' | 'cancelled';
export const FINISHED_BATCH: readonly BatchStatus[] = ['completed', 'failed', 'cancelled'];

export interface BatchRow {
  id: string;
  org_id: string;
  queue_id: string;
  csv_key: string;
  trigger_id: string;
  filename: string;
  size_bytes: number | string;
  sha256: string;
  blob_key: string;
  columns: string | null;
  status: BatchStatus;
  total_rows: number | string | null;
  loaded_rows: number | string;
  skipped_rows: number | string;
  runs_completed: number | string;
  runs_failed: number | string;
  runs_cancelled: number | string;
  loaded: boolean | number;
  resume_offset: number | string;
  resume_row: number | string;
  loader_id: string | null;
  lease_until: string | null;
  failure_reason: string | null;
  /** The traceparent of the request that created the batch: its load's span joins that trace. */
  trace_parent?: string | null;
  created_at: string;
  updated_at: string;
}

export interface QueueBatchView {
  batchId: string;
  queueId: string;
  csvKey: string;
  triggerId: string;
  filename: string;
  sizeBytes: number;
  status: BatchStatus;
  totalRows: number | null;
  loadedRows: number;
  skippedRows: number;
  readRows: number;
  runsPending: number;
  runsRunning: number;
  runsCompleted: number;
  runsFailed: number;
  runsCancelled: number;
  failureReason: string | null;
  createdAt: string;
  updatedAt: string;
}

/** The batch of this organisation's queue, or undefined. */
export async function findBatch(
  db: Knex,
  orgId: string,
  queueId: string,
  batchId: string,
): Promise<BatchRow | undefined> {
  if (!BATCH_ID_PATTERN.test(batchId)) return undefined;
  return (await db('queue_batches').where({ id: batchId, queue_id: queueId, org_id: orgId }).first()) as
    BatchRow | undefined;
}

/**
 * Items of these batches whose run is PENDING or RUNNING now, by batch. The queue condition keeps
 * the lookup on the (status, queue_id) index, among the few dispatched items, rather than on
 * every item of the batch (a poll of a 500,000-row batch would read them all).
 */
async function inFlight(
  db: Knex,
  batches: readonly BatchRow[],
): Promise<Map<string, { pending: number; running: number }>> {
  const out = new Map<string, { pending: number; running: number }>(
    batches.map((b) => [b.id, { pending: 0, running: 0 }]),
  );
  if (batches.length === 0) return out;
  const rows = (await db('queue_items as qi')
    .where('qi.status', 'dispatched')
    .whereIn('qi.queue_id', [...new Set(batches.map((b) => b.queue_id))])
    .whereIn(
      'qi.batch_id',
      batches.map((b) => b.id),
    )
    .whereExists(runStatusIn(db, 'qi.run_id', ['PENDING', 'RUNNING']))
    .groupBy('qi.batch_id', 'run_status')
    .select('qi.batch_id', runStatusOf(db, 'qi.run_id').as('run_status'))
    .count({ n: '*' })) as { batch_id: string; run_status: string; n: number | string }[];
  for (const r of rows) {
    const c = out.get(r.batch_id)!;
    if (r.run_status === 'PENDING') c.pending += Number(r.n);
    else c.running += Number(r.n);
  }
  return out;
}

export function batchView(b: BatchRow, flight: { pending: number; running: number }): QueueBatchView {
  const loaded = Number(b.loaded_rows);
  const skipped = Number(b.skipped_rows);
  const completed = Number(b.runs_completed);
  const failed = Number(b.runs_failed);
  const cancelled = Number(b.runs_cancelled);
  // Loaded rows not yet finished, cancelled or running wait for a run (queued items and PENDING runs).
  const pending = Math.max(0, loaded - completed - failed - cancelled - flight.running);
  return {
    batchId: b.id,
    queueId: b.queue_id,
    csvKey: b.csv_key,
    triggerId: b.trigger_id,
    filename: b.filename,
    sizeBytes: Number(b.size_bytes),
    status: b.status,
    totalRows: b.total_rows === null ? null : Number(b.total_rows),
    loadedRows: loaded,
    skippedRows: skipped,
    readRows: loaded + skipped,
    runsPending: pending,
    runsRunning: flight.running,
    runsCompleted: completed,
    runsFailed: failed,
    runsCancelled: cancelled,
    failureReason: b.status === 'failed' ? (b.failure_reason ?? 'The batch failed.') : null,
    createdAt: b.created_at,
    updatedAt: b.updated_at,
  };
}

export async function batchViews(db: Knex, rows: BatchRow[]): Promise<QueueBatchView[]> {
  const flight = await inFlight(
    db,
    rows.filter((b) => !FINISHED_BATCH.includes(b.status) || b.status === 'cancelled'),
  );
  return rows.map((b) => batchView(b, flight.get(b.id) ?? { pending: 0, running: 0 }));
}

/** GET /api/queues/{queueId}/batches/{batchId}: 404 queue_not_found / batch_not_found as openapi/queues.yaml says. */
export async function getBatchView(db: Knex, orgId: string, queueId: string, batchId: string): Promise<QueueBatchView> {
  const b = await findBatch(db, orgId, queueId, batchId);
  if (!b) throw new AppError('ERR_BATCH_NOT_FOUND');
  return (await batchViews(db, [b]))[0]!;
}

/** The queue's batches, oldest first (management API listQueueBatches). */
export async function listBatches(
  db: Knex,
  orgId: string,
  queueId: string,
  page: PageRequest,
): Promise<Page<QueueBatchView>> {
  const q = db('queue_batches').where({ org_id: orgId, queue_id: queueId });
  const { rows, nextCursor } = await pageRows<BatchRow & Record<string, unknown>>(
    q,
    { list: 'queue-batches', column: 'id', keyPattern: BATCH_ID_PATTERN },
    page,
  );
  return { items: await batchViews(db, rows), nextCursor };
}

export interface RowErrorView {
  rowNumber: number;
  reason: 'column_count' | 'unterminated_quote';
  message: string;
  rawExcerpt: string;
}

/** Skipped rows by row number (listBatchRowErrors): `limit` 1 to 1000, cursor of the row number. */
export async function listRowErrors(
  db: Knex,
  batchId: string,
  page: { limit?: number | undefined; cursor?: string | undefined },
): Promise<Page<RowErrorView>> {
  const limit = page.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
    throw new AppError('ERR_REQUEST_INVALID', { message: 'limit must be an integer between 1 and 1000' });
  const q = db('batch_row_errors')
    .where({ batch_id: batchId })
    .select('row_number', 'reason', 'message', 'raw_excerpt');
  // pageRows caps limits at the management maximum (200); this list allows 1000, so it pages itself.
  if (page.cursor !== undefined) q.andWhere('row_number', '>', decodeCursor('row-errors', page.cursor, 'number'));
  const rows = (await q.orderBy('row_number').limit(limit + 1)) as {
    row_number: number | string;
    reason: RowErrorView['reason'];
    message: string;
    raw_excerpt: string;
  }[];
  const items = rows
    .slice(0, limit)
    .map((r) => ({ rowNumber: Number(r.row_number), reason: r.reason, message: r.message, rawExcerpt: r.raw_excerpt }));
  return {
    items,
    nextCursor: rows.length > limit ? encodeCursor('row-errors', items[items.length - 1]!.rowNumber) : null,
  };
}

/** Batches not finished yet, by status (few: finished ones are never counted). */
export async function liveBatchCounts(db: Knex): Promise<Record<'validating' | 'pending' | 'running', number>> {
  const rows = (await db('queue_batches')
    .whereIn('status', ['validating', 'pending', 'running'])
    .groupBy('status')
    .select('status')
    .count({ n: '*' })) as { status: 'validating' | 'pending' | 'running'; n: number | string }[];
  const out = { validating: 0, pending: 0, running: 0 };
  for (const r of rows) out[r.status] = Number(r.n);
  return out;
}
