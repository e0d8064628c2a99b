/**
 * Items of datastores and vaults (spec section 14 `/memory/items`, "Events"): create, merge
 * (PATCH, RFC 7396), replace (PUT) and delete, each writing its event calls to the outbox in the
 * same transaction (src/events/outbox.ts). Rules in openapi/resources.yaml.
 *
 * onEdit goes to the collection-level and item-level onEdit URLs unless `triggerChanges` is
 * false or nothing changed, and is limited to 2 per item per rolling 60 s (spec "Limits"): one
 * edit is one hit of the item's window; an edit over the limit is recorded as dropped for each
 * of its URLs, never queued.
 *
 * Vaults: content is encrypted at rest (AES-256-GCM) and never returned or sent in plain text
 * (values are replaced by "********", src/events/payloads.ts).
 */
import { isDeepStrictEqual } from 'node:util';
import type { Knex } from 'knex';
import { encrypt, decrypt } from '../kernel/crypto.js';
import { AppError } from '../errors/index.js';
import { newId, nowIso } from '../kernel/ids.js';
import type { CollectionRecord } from './collections.js';
import { enqueueEvents, type OutboxEvent } from './outbox.js';
import { itemPayload, REDACTED, type ItemState } from './payloads.js';
import {
  configuredView,
  normalizeTriggerUrls,
  parseStored,
  type AddressCheck,
  type EventName,
  type StoredTriggerUrl,
  type TriggerUrlInput,
} from './trigger-urls.js';
import { holdsFiles, ITEM_ID_PATTERN } from './types.js';
import { slideWindow, type RateWindows } from './rate-windows.js';
import type { WriteQueue } from '../storage/write-queue.js';

export const ON_EDIT_LIMIT = 2;
export const ON_EDIT_WINDOW_MS = 60_000;
export const DROPPED_MESSAGE = `onEdit limit of ${ON_EDIT_LIMIT} per item per ${ON_EDIT_WINDOW_MS / 1000} seconds reached; dropped, not queued.`;

export interface ItemDeps {
  db: Knex;
  /** Group commit of item and file writes with their outbox rows (src/storage/write-queue.ts). */
  writes: WriteQueue;
  secretKey: Buffer;
  addresses: AddressCheck;
  /** Redis's window when REDIS_URL is set; otherwise the window lives on the item row. */
  windows?: RateWindows | undefined;
  /** Called after a commit that left pending outbox rows. */
  wake(): void;
}

interface ItemRow {
  id: string;
  collection_id: string;
  org_id: string;
  key: string;
  sort_field: string | null;
  content: string;
  metadata: string;
  trigger_urls: string;
  edit_hits: string | null;
  created_at: string;
  updated_at: string;
}

interface Item extends ItemState {
  triggerUrls: StoredTriggerUrl[];
}

export interface ItemBody {
  /** Create only. */
  key?: string | undefined;
  content: unknown;
  metadata?: Record<string, unknown> | undefined;
  sortField?: string | undefined;
  triggerUrls?: TriggerUrlInput[] | undefined;
  triggerChanges?: boolean | undefined;
}

function checkCollection(c: CollectionRecord): void {
  if (holdsFiles(c.type)) {
    throw new AppError('ERR_COLLECTION_TYPE_MISMATCH', {
      message: `This collection is a ${c.type.replace('_', ' ')}; use /filestorage/items/upload.`,
    });
  }
}

function checkContent(c: CollectionRecord, content: unknown): void {
  if (c.type === 'unstructured_datastore') {
    if (typeof content !== 'string')
      throw new AppError('ERR_INVALID_CONTENT', {
        message: 'Items of an unstructured datastore need a string as content.',
      });
  } else if (!content || typeof content !== 'object' || Array.isArray(content)) {
    throw new AppError('ERR_INVALID_CONTENT', {
      message: `Items of a ${c.type === 'vault' ? 'vault' : 'structured datastore'} need an object as content.`,
    });
  }
}

function sealContent(deps: ItemDeps, c: CollectionRecord, content: unknown): string {
  const json = JSON.stringify(content);
  return c.type === 'vault' ? encrypt(deps.secretKey, json) : json;
}

function toItem(deps: ItemDeps, c: CollectionRecord, r: ItemRow): Item {
  return {
    id: r.id,
    key: r.key,
    sortField: r.sort_field,
    content: JSON.parse(c.type === 'vault' ? decrypt(deps.secretKey, r.content) : r.content) as unknown,
    metadata: JSON.parse(r.metadata) as Record<string, unknown>,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    triggerUrls: parseStored(r.trigger_urls),
  };
}

/** The resource API shape (openapi/resources.yaml MemoryItem); vault values never in plain text. */
export function itemView(c: CollectionRecord, item: Item) {
  const content =
    c.type === 'vault'
      ? Object.fromEntries(Object.keys(item.content as Record<string, unknown>).map((k) => [k, REDACTED]))
      : item.content;
  return {
    id: item.id,
    collectionId: c.id,
    collectionType: c.type === 'vault' ? ('vault' as const) : ('datastore' as const),
    key: item.key,
    ...(item.sortField !== null ? { sortField: item.sortField } : {}),
    content,
    metadata: item.metadata,
    triggerUrls: configuredView(item.triggerUrls),
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
  };
}

/** RFC 7396 JSON Merge Patch: objects merge recursively, `null` deletes, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!patch || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    target && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function events(
  c: CollectionRecord,
  item: Item,
  event: EventName,
  {
    targets,
    previous,
    dropped,
  }: {
    targets: StoredTriggerUrl[];
    previous?: { content: unknown; metadata: Record<string, unknown> } | undefined;
    dropped?: string | undefined;
  },
): OutboxEvent[] {
  return targets.map((target) => ({
    orgId: c.orgId,
    collectionId: c.id,
    itemId: item.id,
    event,
    target,
    payload: itemPayload(event, c, item, { level: target.triggerLevel, previous }),
    dropped,
  }));
}

function targetsOf(
  c: CollectionRecord,
  item: { triggerUrls: StoredTriggerUrl[] } | undefined,
  event: EventName,
): StoredTriggerUrl[] {
  return [...c.triggerUrls, ...(item?.triggerUrls ?? [])].filter((t) => t.event === event);
}

export async function createItem(
  deps: ItemDeps,
  c: CollectionRecord,
  body: ItemBody,
): Promise<ReturnType<typeof itemView>> {
  checkCollection(c);
  checkContent(c, body.content);
  const triggerUrls = normalizeTriggerUrls(body.triggerUrls ?? [], {
    level: 'item',
    collectionType: c.type,
    secretKey: deps.secretKey,
    addresses: deps.addresses,
  });
  const now = nowIso();
  const item: Item = {
    id: newId('item'),
    key: body.key ?? '',
    sortField: body.sortField ?? null,
    content: body.content,
    metadata: body.metadata ?? {},
    createdAt: now,
    updatedAt: now,
    triggerUrls,
  };
  let pending = 0;
  // ON CONFLICT DO NOTHING: a taken key is answered without aborting the group's transaction.
  const inserted = await deps.writes
    .run(async (trx, batch) => {
      const rows = (await trx('collection_items')
        .insert({
          id: item.id,
          collection_id: c.id,
          org_id: c.orgId,
          key: item.key,
          sort_field: item.sortField,
          content: sealContent(deps, c, item.content),
          metadata: JSON.stringify(item.metadata),
          trigger_urls: JSON.stringify(triggerUrls),
          is_public: false,
          created_at: now,
          updated_at: now,
        })
        .onConflict(['collection_id', 'key'])
        .ignore()
        .returning('id')) as unknown[];
      if (rows.length === 0) return false;
      // onCreate exists at collection level only (spec "Events").
      pending = enqueueEvents(batch, events(c, item, 'onCreate', { targets: targetsOf(c, undefined, 'onCreate') }));
      return true;
    })
    .catch((err: unknown) => {
      // The collection was deleted by another process while this one still knew it (EventsService.collection).
      if (isForeignKeyViolation(err)) throw new AppError('ERR_COLLECTION_NOT_FOUND');
      throw err;
    });
  const conflict = inserted === false;
  if (conflict)
    throw new AppError('ERR_ITEM_KEY_CONFLICT', {
      message: `An item with key ${item.key} already exists in this collection.`,
    });
  if (pending > 0) deps.wake();
  return itemView(c, item);
}

export function isForeignKeyViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e.code === '23503' || (e.code === 'SQLITE_CONSTRAINT' && /FOREIGN KEY/.test(e.message ?? ''));
}

function notFound(): AppError {
  return new AppError('ERR_ITEM_NOT_FOUND');
}

export async function updateItem(
  deps: ItemDeps,
  c: CollectionRecord,
  id: string,
  { body, mode }: { body: ItemBody; mode: 'merge' | 'replace' },
): Promise<ReturnType<typeof itemView>> {
  checkCollection(c);
  checkContent(c, body.content);
  const newTriggerUrls =
    body.triggerUrls === undefined
      ? undefined
      : normalizeTriggerUrls(body.triggerUrls, {
          level: 'item',
          collectionType: c.type,
          secretKey: deps.secretKey,
          addresses: deps.addresses,
        });
  let pending = 0;
  const result = await deps.writes.run(async (trx, batch) => {
    const now = nowIso();
    // Write first (sqlite lock upgrade) and hold the row against concurrent edits; RETURNING reads
    // it in the same statement.
    const [row] = (await trx('collection_items')
      .where({ id, collection_id: c.id })
      .update({ updated_at: now })
      .returning('*')) as ItemRow[];
    if (!row || !ITEM_ID_PATTERN.test(id)) return undefined;
    const current = toItem(deps, c, row);
    const state = nextState(c, current, body, mode);
    const item: Item = { ...current, ...state, updatedAt: now, triggerUrls: newTriggerUrls ?? current.triggerUrls };
    const targets = targetsOf(c, item, 'onEdit');
    const fires = body.triggerChanges !== false && targets.length > 0 && changed(current, state);
    // One edit is one hit of the item's window: on this row (held by this transaction) or in Redis.
    let admitted = true;
    let hits: number[] | undefined;
    if (fires) {
      const nowMs = Date.parse(now);
      if (deps.windows) admitted = await deps.windows.admit(`${c.id}:${id}`, ON_EDIT_LIMIT, ON_EDIT_WINDOW_MS, nowMs);
      else
        ({ admitted, hits } = slideWindow(
          row.edit_hits ? (JSON.parse(row.edit_hits) as number[]) : [],
          ON_EDIT_LIMIT,
          ON_EDIT_WINDOW_MS,
          nowMs,
        ));
    }
    await trx('collection_items')
      .where({ id })
      .update({
        content: sealContent(deps, c, item.content),
        metadata: JSON.stringify(item.metadata),
        sort_field: item.sortField,
        trigger_urls: JSON.stringify(item.triggerUrls),
        ...(hits ? { edit_hits: JSON.stringify(hits) } : {}),
      });
    if (fires) {
      pending = enqueueEvents(
        batch,
        events(c, item, 'onEdit', {
          targets,
          previous: { content: current.content, metadata: current.metadata },
          dropped: admitted ? undefined : DROPPED_MESSAGE,
        }),
      );
    }
    return item;
  });
  if (!result) throw notFound();
  if (pending > 0) deps.wake();
  return itemView(c, result);
}

function nextState(
  c: CollectionRecord,
  current: Item,
  body: ItemBody,
  mode: 'merge' | 'replace',
): Pick<Item, 'content' | 'metadata' | 'sortField'> {
  const merge = mode === 'merge';
  const content =
    merge && c.type !== 'unstructured_datastore' ? mergePatch(current.content, body.content) : body.content;
  const metadata =
    body.metadata === undefined
      ? merge
        ? current.metadata
        : {}
      : merge
        ? (mergePatch(current.metadata, body.metadata) as Record<string, unknown>)
        : body.metadata;
  return { content, metadata, sortField: body.sortField ?? current.sortField };
}

function changed(
  a: Pick<Item, 'content' | 'metadata' | 'sortField'>,
  b: Pick<Item, 'content' | 'metadata' | 'sortField'>,
): boolean {
  return (
    !isDeepStrictEqual(a.content, b.content) ||
    !isDeepStrictEqual(a.metadata, b.metadata) ||
    a.sortField !== b.sortField
  );
}

export async function deleteItem(deps: ItemDeps, c: CollectionRecord, id: string): Promise<void> {
  checkCollection(c);
  let pending = 0;
  const found = await deps.writes.run(async (trx, batch) => {
    // Write first (sqlite lock upgrade); RETURNING reads the row in the same statement (knex's
    // sqlite DELETE has no RETURNING).
    const [row] = (await trx('collection_items')
      .where({ id, collection_id: c.id })
      .update({ updated_at: nowIso() })
      .returning('*')) as ItemRow[];
    if (!row || !ITEM_ID_PATTERN.test(id)) return false;
    const item = toItem(deps, c, row);
    await trx('collection_items').where({ id }).delete();
    // Not suppressible: the spec offers triggerChanges on updates only.
    pending = enqueueEvents(batch, events(c, item, 'onDelete', { targets: targetsOf(c, item, 'onDelete') }));
    return true;
  });
  if (!found) throw notFound();
  if (pending > 0) deps.wake();
}

/** A sample item for the trigger tests (openapi/resources.yaml testDataCollectionTrigger). */
export function sampleItem(testData: Record<string, unknown>): ItemState {
  const now = nowIso();
  return {
    id: 'test',
    key: 'test',
    sortField: null,
    content: {},
    metadata: {},
    createdAt: now,
    updatedAt: now,
    ...testData,
  } as ItemState;
}
