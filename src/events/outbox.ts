/**
 * The transactional outbox of event calls (spec "Events"): one row per event and trigger URL,
 * inserted in the transaction of the change, so a change that committed has its calls on
 * record even when the process dies right after (kill -9): the dispatcher of the next start
 * claims and delivers them. Delivery is at least once; each payload carries the row id as
 * `eventId` for de-duplication. Rows stay as the delivery log (listCollectionDeliveries).
 *
 * Status: pending → sent | failed (one attempt: the spec says failed calls are not retried),
 * or dropped at once (onEdit over its window, spec "Limits"). A claim is a lease
 * (`claimed_until`): a row whose claimant died is claimed again when the lease runs out.
 */
import type { Knex } from 'knex';
import { newId, nowIso } from '../kernel/ids.js';
import { pageRows, type Page, type PageRequest } from '../kernel/page.js';
import type { EventName, Level, StoredTriggerUrl } from './trigger-urls.js';
import type { EventPayload } from './payloads.js';
import type { WriteBatch } from '../storage/write-queue.js';
import { eventDeliveries } from '../kernel/metrics.js';

const droppedCalls = eventDeliveries.labels('dropped');

export type DeliveryStatus = 'pending' | 'sent' | 'failed' | 'dropped';

export interface OutboxEvent {
  orgId: string;
  collectionId: string;
  itemId: string;
  event: EventName;
  target: StoredTriggerUrl;
  /** Built per target (triggerLevel differs); eventId is added here. */
  payload: EventPayload;
  dropped?: string | undefined;
}

export interface OutboxRow {
  id: string;
  org_id: string;
  collection_id: string;
  item_id: string;
  event: EventName;
  trigger_level: string;
  url: string;
  api_key_enc: string;
  payload: string;
  status: DeliveryStatus;
  http_status: number | null;
  duration_ms: number | null;
  run_id: string | null;
  error: string | null;
  attempts: number;
  claimed_until: string | null;
  created_at: string;
  finished_at: string | null;
  /** The traceparent of the request that made the change: the delivery's span joins its trace. */
  trace_parent: string | null;
}

const EVENT_ID_PATTERN = /^evt_[0-9a-f]{32}$/;

/**
 * Hands the rows to the caller's write batch (inserted before its commit, src/storage/write-queue.ts);
 * returns how many are pending delivery. Each row keeps the traceparent of the request making
 * the change (the batch's caller, not the active span: see WriteBatch.callerTraceparent).
 */
export function enqueueEvents(batch: WriteBatch, events: readonly OutboxEvent[]): number {
  if (events.length === 0) return 0;
  const now = nowIso();
  const rows = events.map((e) => {
    const id = newId('evt');
    const level: Level | 'file' = (e.payload.triggerLevel as Level | 'file' | undefined) ?? e.target.triggerLevel;
    return {
      id,
      org_id: e.orgId,
      collection_id: e.collectionId,
      item_id: e.itemId,
      event: e.event,
      trigger_level: level,
      url: e.target.url,
      api_key_enc: e.target.apiKeyEnc,
      payload: JSON.stringify({ eventId: id, ...e.payload }),
      status: e.dropped ? 'dropped' : 'pending',
      error: e.dropped ?? null,
      attempts: 0,
      created_at: now,
      finished_at: e.dropped ? now : null,
      trace_parent: batch.callerTraceparent,
    };
  });
  batch.insertLater('event_outbox', rows);
  const pending = rows.filter((r) => r.status === 'pending').length;
  // Counted when handed to the transaction (a rolled-back write has counted its drops too).
  if (pending < rows.length) droppedCalls.inc(rows.length - pending);
  return pending;
}

function leaseUntil(ms: number): string {
  return new Date(Date.now() + ms).toISOString();
}

/**
 * Claims up to `limit` pending rows whose lease is free or expired, in id (creation) order. One
 * statement: two processes never claim the same row while its lease runs.
 */
export async function claimPending(db: Knex, limit: number, leaseMs: number): Promise<OutboxRow[]> {
  const now = nowIso();
  const until = leaseUntil(leaseMs);
  if (db.client.config.client === 'pg') {
    const res = await db.raw(
      `WITH picked AS (
         SELECT id FROM event_outbox
         WHERE status = 'pending' AND (claimed_until IS NULL OR claimed_until < ?)
         ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED)
       UPDATE event_outbox e SET claimed_until = ?, attempts = e.attempts + 1
       FROM picked WHERE e.id = picked.id
       RETURNING e.*`,
      [now, limit, until],
    );
    return (res.rows as OutboxRow[]).sort((a, b) => (a.id < b.id ? -1 : 1));
  }
  const pick = db('event_outbox')
    .select('id')
    .where({ status: 'pending' })
    .andWhere((q) => q.whereNull('claimed_until').orWhere('claimed_until', '<', now))
    .orderBy('id')
    .limit(limit);
  const rows = (await db('event_outbox')
    .whereIn('id', pick)
    .update({ claimed_until: until, attempts: db.raw('attempts + 1') })
    .returning('*')) as OutboxRow[];
  return rows.sort((a, b) => (a.id < b.id ? -1 : 1));
}

export interface DeliveryOutcome {
  id: string;
  status: 'sent' | 'failed';
  httpStatus: number | null;
  durationMs: number;
  runId: string | null;
  error: string | null;
  finishedAt: string;
}

/**
 * Records a batch of outcomes in one statement (group commit: one write for many calls):
 * UPDATE … FROM (VALUES …), which sqlite (3.33+) and PostgreSQL both take.
 */
export async function recordOutcomes(db: Knex, outcomes: readonly DeliveryOutcome[]): Promise<void> {
  const pg = db.client.config.client === 'pg';
  for (let i = 0; i < outcomes.length; i += 100) {
    const chunk = outcomes.slice(i, i + 100);
    const values = chunk.map(() => (pg ? '(?, ?, ?::int, ?::int, ?, ?, ?)' : '(?, ?, ?, ?, ?, ?, ?)')).join(', ');
    const params = chunk.flatMap((o) => [o.id, o.status, o.httpStatus, o.durationMs, o.runId, o.error, o.finishedAt]);
    const sql = pg
      ? `UPDATE event_outbox AS e SET status = v.status, http_status = v.http_status, duration_ms = v.duration_ms, run_id = v.run_id, error = v.error, finished_at = v.finished_at, claimed_until = NULL
         FROM (VALUES ${values}) AS v(id, status, http_status, duration_ms, run_id, error, finished_at) WHERE e.id = v.id`
      : `UPDATE event_outbox SET status = v.column2, http_status = v.column3, duration_ms = v.column4, run_id = v.column5, error = v.column6, finished_at = v.column7, claimed_until = NULL
         FROM (VALUES ${values}) AS v WHERE event_outbox.id = v.column1`;
    await db.raw(sql, params);
  }
}

export interface DeliveryView {
  eventId: string;
  event: EventName;
  itemId: string;
  triggerLevel: string;
  url: string;
  status: DeliveryStatus;
  httpStatus: number | null;
  durationMs: number | null;
  runId: string | null;
  error: string | null;
  createdAt: string;
  finishedAt: string | null;
}

export async function listDeliveries(
  db: Knex,
  collectionId: string,
  filter: { status?: DeliveryStatus | undefined; event?: EventName | undefined; itemId?: string | undefined },
  page: PageRequest,
): Promise<Page<DeliveryView>> {
  const q = db('event_outbox').where({ collection_id: collectionId });
  if (filter.status) q.andWhere({ status: filter.status });
  if (filter.event) q.andWhere({ event: filter.event });
  if (filter.itemId) q.andWhere({ item_id: filter.itemId });
  const { rows, nextCursor } = await pageRows<OutboxRow & Record<string, unknown>>(
    q,
    { list: 'deliveries', column: 'id', keyPattern: EVENT_ID_PATTERN },
    page,
  );
  return {
    items: rows.map((r) => ({
      eventId: r.id,
      event: r.event,
      itemId: r.item_id,
      triggerLevel: r.trigger_level,
      url: r.url,
      status: r.status,
      httpStatus: r.http_status === null ? null : Number(r.http_status),
      durationMs: r.duration_ms === null ? null : Number(r.duration_ms),
      runId: r.run_id,
      error: r.error,
      createdAt: r.created_at,
      finishedAt: r.finished_at,
    })),
    nextCursor,
  };
}

/** Housekeeping: finished rows older than `before` (the log keeps 7 days). */
export async function pruneDeliveries(db: Knex, before: string): Promise<number> {
  return db('event_outbox').whereNot({ status: 'pending' }).andWhere('created_at', '<', before).delete();
}

/**
 * The delivery backlog: pending rows counted up to `cap`, and when the oldest was written (ids
 * are time-ordered, so the first on the (status, id) index is the oldest).
 */
export async function outboxBacklog(db: Knex, cap: number): Promise<{ pending: number; oldest: string | undefined }> {
  const pending = db('event_outbox').where({ status: 'pending' }).limit(cap).select(db.raw('1 as one')).as('p');
  const [count, first] = await Promise.all([
    db.from(pending).count({ n: '*' }).first() as Promise<{ n: number | string } | undefined>,
    db('event_outbox').where({ status: 'pending' }).orderBy('id').first('created_at') as Promise<
      { created_at: string } | undefined
    >,
  ]);
  return { pending: Number(count?.n ?? 0), oldest: first?.created_at };
}
