/**
 * Creating and cancelling batches (openapi/queues.yaml createCsvBatch, cancelQueueBatch; spec
 * "States and transitions": `validating` appears during head validation; cancelling while rows
 * load aborts row creation and queued runs that never started leave the queue undispatched).
 */
import type { Knex } from 'knex';
import { AppError } from '../errors/index.js';
import type { BlobStore } from '../kernel/blobs.js';
import type { CallTargets } from '../triggers/index.js';
import { getChannel } from '../agents/index.js';
import { failPendingRuns, runStatusIn } from '../runs/index.js';
import { newId, nowIso } from '../kernel/ids.js';
import { activeTraceparent } from '../kernel/tracing.js';
import { CsvHeadError, scanCsv } from './csv.js';
import { findBatch, type BatchRow } from './batches.js';
import type { QueueRecord } from './queues.js';
import type { UploadRow } from './uploads.js';

/** The first data record is record 2: the header is record 1 (listBatchRowErrors `rowNumber`). */
const FIRST_DATA_ROW = 2;

/** The batch's trigger: an enabled workflow trigger of the organisation (404 / 400 as documented). */
async function checkTrigger(db: Knex, targets: CallTargets, orgId: string, triggerId: string): Promise<void> {
  const target = await targets.get(orgId, triggerId);
  if (target) {
    if (!target.enabled)
      throw new AppError('ERR_QUEUE_INVALID_TRIGGER', {
        message: 'The trigger is disabled; enable it or use another workflow trigger.',
      });
    return;
  }
  if (await getChannel(db, orgId, triggerId))
    throw new AppError('ERR_QUEUE_INVALID_TRIGGER', {
      message: 'Batches need a workflow trigger; this trigger is an agent channel.',
    });
  throw new AppError('ERR_QUEUE_TRIGGER_NOT_FOUND');
}

/**
 * createCsvBatch: takes the upload (one batch per key), checks the whole file in one scan while
 * the batch is `validating`, then leaves it `pending` for a loader. A file that fails the scan
 * leaves no batch and frees its key.
 */
export async function createBatch(
  deps: { db: Knex; blobs: BlobStore; callTargets: CallTargets },
  queue: QueueRecord,
  input: { csvKey: string; triggerId: string },
): Promise<BatchRow> {
  const { db, blobs } = deps;
  await checkTrigger(db, deps.callTargets, queue.orgId, input.triggerId);
  const upload = (await db('csv_uploads')
    .where({ csv_key: input.csvKey, queue_id: queue.id, org_id: queue.orgId })
    .first()) as UploadRow | undefined;
  if (!upload || !upload.blob_key || upload.size_bytes === null) throw new AppError('ERR_CSV_NOT_UPLOADED');
  if (upload.batch_id) throw new AppError('ERR_CSV_ALREADY_USED');
  const now = nowIso();
  const batchId = newId('batch');
  const row: BatchRow = {
    id: batchId,
    org_id: queue.orgId,
    queue_id: queue.id,
    csv_key: upload.csv_key,
    trigger_id: input.triggerId,
    filename: upload.filename,
    size_bytes: Number(upload.size_bytes),
    sha256: upload.sha256 ?? '',
    blob_key: upload.blob_key,
    columns: null,
    status: 'validating',
    total_rows: null,
    loaded_rows: 0,
    skipped_rows: 0,
    runs_completed: 0,
    runs_failed: 0,
    runs_cancelled: 0,
    loaded: false,
    resume_offset: 0,
    resume_row: FIRST_DATA_ROW,
    loader_id: null,
    lease_until: null,
    failure_reason: null,
    created_at: now,
    updated_at: now,
    trace_parent: activeTraceparent() ?? null,
  };
  const taken = await db.transaction(async (trx) => {
    // The key's row is taken first (a write, so concurrent creations serialise): one batch per key.
    const n = await trx('csv_uploads')
      .where({ csv_key: upload.csv_key, blob_key: upload.blob_key })
      .whereNull('batch_id')
      .update({ batch_id: batchId });
    if (n === 0) return false;
    await trx('queue_batches').insert(row);
    return true;
  });
  if (!taken) {
    const now2 = (await db('csv_uploads').where({ csv_key: upload.csv_key }).first('batch_id')) as
      { batch_id: string | null } | undefined;
    throw now2?.batch_id
      ? new AppError('ERR_CSV_ALREADY_USED')
      : new AppError('ERR_CSV_NOT_UPLOADED', {
          message: 'The upload was replaced while the batch was being created; try again.',
        });
  }
  let head;
  try {
    const blobKey = upload.blob_key;
    head = await scanCsv((start) => blobs.streamFrom(blobKey, start));
  } catch (err) {
    // Validation failures leave no batch: the row goes and the key is free again.
    await db.transaction(async (trx) => {
      await trx('csv_uploads').where({ csv_key: upload.csv_key, batch_id: batchId }).update({ batch_id: null });
      await trx('queue_batches').where({ id: batchId }).delete();
    });
    if (err instanceof CsvHeadError)
      throw new AppError('ERR_REQUEST_INVALID', { code: err.code, message: err.message });
    throw err;
  }
  await db('queue_batches')
    .where({ id: batchId, status: 'validating' })
    .update({
      status: 'pending',
      columns: JSON.stringify(head.columns),
      total_rows: head.totalRows,
      resume_offset: head.dataStart,
      resume_row: FIRST_DATA_ROW,
      updated_at: nowIso(),
    });
  return (await findBatch(db, queue.orgId, queue.id, batchId))!;
}

/**
 * cancelQueueBatch: a batch still validating, pending or running becomes `cancelled`; in the same
 * transaction its queued items, and items whose run was created but not started (PENDING runs end
 * FAILED with a reason), are cancelled. A loader's next chunk commit finds the batch cancelled and
 * rolls back, so row creation stops within one chunk and no half-written chunk remains. Runs
 * already RUNNING finish. Cancelling a cancelled batch changes nothing; a finished one is 409.
 */
export async function cancelBatch(db: Knex, orgId: string, queueId: string, batchId: string): Promise<BatchRow> {
  const b = await findBatch(db, orgId, queueId, batchId);
  if (!b) throw new AppError('ERR_BATCH_NOT_FOUND');
  if (b.status === 'completed' || b.status === 'failed') {
    throw new AppError('ERR_BATCH_FINISHED', {
      message: `The batch has already ${b.status === 'completed' ? 'completed' : 'failed'} and cannot be cancelled.`,
    });
  }
  if (b.status !== 'cancelled') {
    await db.transaction(async (trx) => {
      const now = nowIso();
      const n = await trx('queue_batches')
        .where({ id: batchId })
        .whereIn('status', ['validating', 'pending', 'running'])
        .update({ status: 'cancelled', loader_id: null, lease_until: null, updated_at: now });
      if (n === 0) return;
      const queued = await trx('queue_items')
        .where({ batch_id: batchId, status: 'queued' })
        .update({ status: 'cancelled', updated_at: now });
      const waiting = (await trx('queue_items as qi')
        .where({ 'qi.batch_id': batchId, 'qi.status': 'dispatched' })
        .whereExists(runStatusIn(trx, 'qi.run_id', ['PENDING']))
        .pluck('qi.run_id')) as string[];
      let stopped = 0;
      for (let i = 0; i < waiting.length; i += 500) {
        // A worker may claim one of them meanwhile: only the runs this UPDATE moved are cancelled.
        const ids = await failPendingRuns(trx, waiting.slice(i, i + 500), {
          error: 'Cancelled with its queue batch before it started',
          finishedAt: now,
        });
        if (ids.length)
          stopped += await trx('queue_items')
            .whereIn('run_id', ids)
            .where({ status: 'dispatched' })
            .update({ status: 'cancelled', updated_at: now });
      }
      await trx('queue_batches')
        .where({ id: batchId })
        .update({ runs_cancelled: trx.raw('runs_cancelled + ?', [queued + stopped]) });
    });
  }
  return (await findBatch(db, orgId, queueId, batchId))!;
}
