/**
 * Queue items (one per loaded CSV row): the management list and the payload read the
 * dispatcher shares. An item keeps its record's byte range in the stored upload, so its payload
 * (`{column: value}`) is parsed from those bytes when it is read, with the batch's columns.
 */
import type { Knex } from 'knex';
import type { BlobStore } from '../kernel/blobs.js';
import { decodeCursor, encodeCursor, pageLimit, type Page, type PageRequest } from '../kernel/page.js';
import { fromJson } from '../storage/db.js';
import { runStatusIn, runStatusOf } from '../runs/index.js';
import { parseRecords, valuesBuilder } from './csv.js';

/** As the API shows it: `dispatched` items are `pending` or `running` by their run's status. */
export type ItemStatus = 'queued' | 'pending' | 'running' | 'completed' | 'failed' | 'cancelled';
export const ITEM_STATUSES: readonly ItemStatus[] = [
  'queued',
  'pending',
  'running',
  'completed',
  'failed',
  'cancelled',
];

export interface QueueItemView {
  batchId: string;
  rowNumber: number;
  status: ItemStatus;
  runId: string | null;
  attempts: number;
  payload: Record<string, string> | null;
  updatedAt: string | null;
}

/** What reading payloads needs of an item: its batch and byte range. */
export interface ItemBytes {
  batch_id: string;
  byte_start: number | string;
  byte_end: number | string;
}

/** Reads ranges of one upload together when they lie this close (items of a batch are in file order). */
const SPAN_MAX = 8 * 1024 * 1024;

/**
 * The payload of each item, in order: its record parsed from the stored upload. `batches` gives
 * each batch's blob key and columns. An item whose bytes are gone (upload deleted) gets null.
 */
export async function readPayloads(
  blobs: BlobStore,
  batches: Map<string, { blobKey: string; columns: string[] }>,
  items: readonly ItemBytes[],
): Promise<(Record<string, string> | null)[]> {
  const out: (Record<string, string> | null)[] = new Array(items.length).fill(null);
  let i = 0;
  while (i < items.length) {
    const first = items[i]!;
    const batch = batches.get(first.batch_id);
    // A run of items of one batch whose bytes fit one read.
    let j = i + 1;
    const start = Number(first.byte_start);
    let end = Number(first.byte_end);
    while (
      j < items.length &&
      items[j]!.batch_id === first.batch_id &&
      Number(items[j]!.byte_start) >= start &&
      Number(items[j]!.byte_end) - start <= SPAN_MAX
    ) {
      end = Math.max(end, Number(items[j]!.byte_end));
      j++;
    }
    if (batch) {
      let bytes: Buffer | undefined;
      try {
        bytes = await blobs.getRange(batch.blobKey, start, end);
      } catch {
        bytes = undefined;
      }
      if (bytes) {
        const toValues = valuesBuilder(batch.columns);
        for (let k = i; k < j; k++) {
          const it = items[k]!;
          const [record] = parseRecords(bytes.subarray(Number(it.byte_start) - start, Number(it.byte_end) - start));
          out[k] = record && record.length === batch.columns.length ? toValues(record) : null;
        }
      }
    }
    i = j;
  }
  return out;
}

/** Blob key and columns of these batches. */
export async function batchSources(
  db: Knex,
  batchIds: Iterable<string>,
): Promise<Map<string, { blobKey: string; columns: string[] }>> {
  const ids = [...new Set(batchIds)];
  const rows = ids.length
    ? ((await db('queue_batches').whereIn('id', ids).select('id', 'blob_key', 'columns')) as {
        id: string;
        blob_key: string;
        columns: string | null;
      }[])
    : [];
  return new Map(rows.map((r) => [r.id, { blobKey: r.blob_key, columns: fromJson<string[]>(r.columns) ?? [] }]));
}

interface ItemRow extends ItemBytes {
  seq: number | string;
  row_number: number | string;
  status: string;
  run_id: string | null;
  run_status: string | null;
  attempts: number | string;
  updated_at: string | null;
}

function apiStatus(r: ItemRow): ItemStatus {
  if (r.status !== 'dispatched') return r.status as ItemStatus;
  return r.run_status === 'RUNNING' ? 'running' : 'pending';
}

/**
 * The queue's items in load order (management API listQueueItems), optionally of one batch and
 * in one status; the cursor is the item's sequence number. The caller has checked the queue
 * belongs to the organisation.
 */
export async function listQueueItems(
  db: Knex,
  blobs: BlobStore,
  queueId: string,
  { filter, page }: { filter: { batchId?: string | undefined; status?: ItemStatus | undefined }; page: PageRequest },
): Promise<Page<QueueItemView>> {
  const limit = pageLimit(page.limit);
  const list = 'queue-items';
  const q = db('queue_items as qi')
    .where('qi.queue_id', queueId)
    .select(
      'qi.seq',
      'qi.batch_id',
      'qi.row_number',
      'qi.byte_start',
      'qi.byte_end',
      'qi.status',
      'qi.run_id',
      'qi.attempts',
      'qi.updated_at',
      runStatusOf(db, 'qi.run_id').as('run_status'),
    );
  if (filter.batchId !== undefined) q.andWhere('qi.batch_id', filter.batchId);
  const s = filter.status;
  if (s === 'pending' || s === 'running')
    q.andWhere('qi.status', 'dispatched').whereExists(
      runStatusIn(db, 'qi.run_id', [s === 'running' ? 'RUNNING' : 'PENDING']),
    );
  else if (s !== undefined) q.andWhere('qi.status', s);
  if (page.cursor !== undefined) q.andWhere('qi.seq', '>', decodeCursor(list, page.cursor, 'number'));
  const rows = (await q.orderBy('qi.seq').limit(limit + 1)) as ItemRow[];
  const pageRows = rows.slice(0, limit);
  const payloads = await readPayloads(
    blobs,
    await batchSources(
      db,
      pageRows.map((r) => r.batch_id),
    ),
    pageRows,
  );
  const items = pageRows.map((r, i) => ({
    batchId: r.batch_id,
    rowNumber: Number(r.row_number),
    status: apiStatus(r),
    runId: r.run_id,
    attempts: Number(r.attempts),
    payload: payloads[i]!,
    updatedAt: r.updated_at,
  }));
  return {
    items,
    nextCursor: rows.length > limit ? encodeCursor(list, Number(pageRows[pageRows.length - 1]!.seq)) : null,
  };
}
