/**
 * Queue records (spec section 15; management API `/v1/queues`, openapi/management.yaml): a
 * workflow trigger whose runs the queue starts, how many of its runs may be in flight at once
 * (`concurrencyLimit`), its priority against other queues (1 to 10, 10 first), how often a
 * failed run is retried (`maxRetries` 0 to 3) and a paused flag (running runs finish, no new
 * one starts). Every lookup is scoped to the organisation.
 */
import type { Knex } from 'knex';
import { AppError } from '../errors/index.js';
import { newId, nowIso } from '../kernel/ids.js';
import { pageRows, type Page, type PageRequest } from '../kernel/page.js';
import { failedPrecondition } from '../storage/versioned.js';

export const QUEUE_ID_PATTERN = /^queue_[0-9a-f]{32}$/;

export const QUEUE_DEFAULTS = { concurrencyLimit: 5, priority: 5, maxRetries: 0, paused: false } as const;

export interface QueueRecord {
  id: string;
  orgId: string;
  name: string;
  description: string;
  triggerId: string;
  concurrencyLimit: number;
  priority: number;
  maxRetries: number;
  paused: boolean;
  version: number;
  createdAt: string;
  updatedAt: string;
}

export interface QueueCreate {
  name: string;
  description?: string | undefined;
  triggerId: string;
  concurrencyLimit?: number | undefined;
  priority?: number | undefined;
  maxRetries?: number | undefined;
  paused?: boolean | undefined;
}

export type QueuePatch = Partial<Omit<QueueCreate, 'description'>> & { description?: string | undefined };

interface QueueRow {
  id: string;
  org_id: string;
  name: string;
  description: string;
  trigger_id: string;
  concurrency_limit: number | string;
  priority: number | string;
  max_retries: number | string;
  paused: boolean | number;
  version: number | string;
  created_at: string;
  updated_at: string;
}

function toRecord(r: QueueRow): QueueRecord {
  return {
    id: r.id,
    orgId: r.org_id,
    name: r.name,
    description: r.description,
    triggerId: r.trigger_id,
    concurrencyLimit: Number(r.concurrency_limit),
    priority: Number(r.priority),
    maxRetries: Number(r.max_retries),
    paused: Boolean(r.paused),
    version: Number(r.version),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** The bounds of openapi/management.yaml QueueCreate, for callers that are not validated by it (CLI). */
export function checkQueueSettings(s: QueuePatch): void {
  const bad = (message: string) => new AppError('ERR_REQUEST_INVALID', { message });
  if (s.name !== undefined && (s.name.length < 1 || s.name.length > 200)) throw bad('name must be 1 to 200 characters');
  if (
    s.concurrencyLimit !== undefined &&
    (!Number.isInteger(s.concurrencyLimit) || s.concurrencyLimit < 1 || s.concurrencyLimit > 1000)
  )
    throw bad('concurrencyLimit must be an integer from 1 to 1000');
  if (s.priority !== undefined && (!Number.isInteger(s.priority) || s.priority < 1 || s.priority > 10))
    throw bad('priority must be an integer from 1 to 10');
  if (s.maxRetries !== undefined && (!Number.isInteger(s.maxRetries) || s.maxRetries < 0 || s.maxRetries > 3))
    throw bad('maxRetries must be an integer from 0 to 3');
}

export async function createQueue(db: Knex, orgId: string, input: QueueCreate): Promise<QueueRecord> {
  checkQueueSettings(input);
  const now = nowIso();
  const row: QueueRow = {
    id: newId('queue'),
    org_id: orgId,
    name: input.name,
    description: input.description ?? '',
    trigger_id: input.triggerId,
    concurrency_limit: input.concurrencyLimit ?? QUEUE_DEFAULTS.concurrencyLimit,
    priority: input.priority ?? QUEUE_DEFAULTS.priority,
    max_retries: input.maxRetries ?? QUEUE_DEFAULTS.maxRetries,
    paused: input.paused ?? QUEUE_DEFAULTS.paused,
    version: 1,
    created_at: now,
    updated_at: now,
  };
  await db('queues').insert(row);
  return toRecord(row);
}

/** The queue of this organisation, or undefined (another organisation's id is unknown here). */
export async function findQueue(db: Knex, orgId: string, id: string): Promise<QueueRecord | undefined> {
  if (!QUEUE_ID_PATTERN.test(id)) return undefined;
  const row = (await db('queues').where({ id, org_id: orgId }).first()) as QueueRow | undefined;
  return row ? toRecord(row) : undefined;
}

export async function listQueues(db: Knex, orgId: string, page: PageRequest): Promise<Page<QueueRecord>> {
  const { rows, nextCursor } = await pageRows<QueueRow & Record<string, unknown>>(
    db('queues').where({ org_id: orgId }),
    { list: 'queues', column: 'id', keyPattern: QUEUE_ID_PATTERN },
    page,
  );
  return { items: rows.map(toRecord), nextCursor };
}

/** Conditional on `expectedVersion` when given (412 / 404 via failedPrecondition). */
export async function updateQueue(
  db: Knex,
  orgId: string,
  id: string,
  { expectedVersion, patch }: { expectedVersion: number | undefined; patch: QueuePatch },
): Promise<QueueRecord> {
  checkQueueSettings(patch);
  const changes: Record<string, unknown> = { version: db.raw('version + 1'), updated_at: nowIso() };
  const columns: Record<keyof QueuePatch, string> = {
    name: 'name',
    description: 'description',
    triggerId: 'trigger_id',
    concurrencyLimit: 'concurrency_limit',
    priority: 'priority',
    maxRetries: 'max_retries',
    paused: 'paused',
  };
  for (const [field, column] of Object.entries(columns) as [keyof QueuePatch, string][]) {
    if (patch[field] !== undefined) changes[column] = patch[field];
  }
  const where: Record<string, unknown> = { id, org_id: orgId };
  if (expectedVersion !== undefined) where.version = expectedVersion;
  const n = await db('queues').where(where).update(changes);
  if (n === 0) await failedPrecondition(db, 'queues', { orgId, id, what: 'Queue' });
  return (await findQueue(db, orgId, id))!;
}

/**
 * Deletes the queue with its uploads, batches, items and row errors (cascade). Returns the
 * blob keys of its stored uploads for the caller to remove, or undefined when there was no
 * such queue. Runs already created stay (they are the organisation's run history).
 */
export async function deleteQueue(
  db: Knex,
  orgId: string,
  id: string,
  expectedVersion: number | undefined,
): Promise<string[] | undefined> {
  return db.transaction(async (trx) => {
    const where: Record<string, unknown> = { id, org_id: orgId };
    if (expectedVersion !== undefined) where.version = expectedVersion;
    // Write first: on sqlite a transaction that reads before it writes can fail to upgrade its lock.
    const n = await trx('queues').where(where).update({ updated_at: nowIso() });
    if (n === 0) {
      if (expectedVersion === undefined) return undefined;
      await failedPrecondition(trx, 'queues', { orgId, id, what: 'Queue' });
    }
    const blobKeys = (await trx('csv_uploads')
      .where({ queue_id: id })
      .whereNotNull('blob_key')
      .pluck('blob_key')) as string[];
    await trx('queues').where({ id }).delete();
    return blobKeys;
  });
}

export type QueueView = Omit<QueueRecord, 'id' | 'orgId'> & { queueId: string };

/** The management API shape (openapi/management.yaml Queue). */
export function queueView(q: QueueRecord): QueueView {
  return {
    queueId: q.id,
    name: q.name,
    description: q.description,
    triggerId: q.triggerId,
    concurrencyLimit: q.concurrencyLimit,
    priority: q.priority,
    maxRetries: q.maxRetries,
    paused: q.paused,
    version: q.version,
    createdAt: q.createdAt,
    updatedAt: q.updatedAt,
  };
}
