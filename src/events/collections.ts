/**
 * Collection records (spec section 14, "Events"): datastores, filestores, knowledge bases and
 * vaults of one organisation, with their collection-level trigger URLs. Versioned like the
 * other management resources (openapi/management.yaml conventions): every change raises
 * `version`, updates are conditional on it.
 */
import type { Knex } from 'knex';
import { AppError } from '../errors/index.js';
import { newId, nowIso } from '../kernel/ids.js';
import { pageRows, type Page, type PageRequest } from '../kernel/page.js';
import { failedPrecondition, orgStamp } from '../storage/versioned.js';
import { configuredView, parseStored, type ConfiguredTriggerUrl, type StoredTriggerUrl } from './trigger-urls.js';
import { COLLECTION_ID_PATTERN, type CollectionType } from './types.js';
import { tableChanged } from '../storage/changes.js';

export interface CollectionRecord {
  id: string;
  orgId: string;
  name: string;
  description: string;
  type: CollectionType;
  triggerUrls: StoredTriggerUrl[];
  version: number;
  createdAt: string;
  updatedAt: string;
}

interface CollectionRow {
  id: string;
  org_id: string;
  name: string;
  description: string;
  type: CollectionType;
  trigger_urls: string;
  version: number | string;
  created_at: string;
  updated_at: string;
}

function toRecord(r: CollectionRow): CollectionRecord {
  return {
    id: r.id,
    orgId: r.org_id,
    name: r.name,
    description: r.description,
    type: r.type,
    triggerUrls: parseStored(r.trigger_urls),
    version: Number(r.version),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export async function createCollection(
  db: Knex,
  orgId: string,
  input: {
    name: string;
    description?: string | undefined;
    type: CollectionType;
    triggerUrls?: StoredTriggerUrl[] | undefined;
  },
): Promise<CollectionRecord> {
  const now = nowIso();
  const row: CollectionRow = {
    id: newId('col'),
    org_id: orgId,
    name: input.name,
    description: input.description ?? '',
    type: input.type,
    trigger_urls: JSON.stringify(input.triggerUrls ?? []),
    version: 1,
    created_at: now,
    updated_at: now,
  };
  await db('collections').insert(row);
  tableChanged(db, 'collections', orgId);
  return toRecord(row);
}

/** The collection of this organisation, or undefined (another organisation's id is unknown here). */
export async function findCollection(db: Knex, orgId: string, id: string): Promise<CollectionRecord | undefined> {
  if (!COLLECTION_ID_PATTERN.test(id)) return undefined;
  const row = (await db('collections').where({ id, org_id: orgId }).first()) as CollectionRow | undefined;
  return row ? toRecord(row) : undefined;
}

export async function listCollections(
  db: Knex,
  orgId: string,
  filter: { type?: CollectionType | undefined },
  page: PageRequest,
): Promise<Page<CollectionRecord>> {
  const q = db('collections').where({ org_id: orgId });
  if (filter.type) q.andWhere({ type: filter.type });
  const { rows, nextCursor } = await pageRows<CollectionRow & Record<string, unknown>>(
    q,
    { list: 'collections', column: 'id', keyPattern: COLLECTION_ID_PATTERN },
    page,
  );
  return { items: rows.map(toRecord), nextCursor };
}

export async function countItems(db: Knex, collectionIds: readonly string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>(collectionIds.map((id) => [id, 0]));
  if (collectionIds.length === 0) return out;
  const rows = (await db('collection_items')
    .whereIn('collection_id', collectionIds)
    .groupBy('collection_id')
    .select('collection_id')
    .count({ n: '*' })) as Array<{ collection_id: string; n: number | string }>;
  for (const r of rows) out.set(r.collection_id, Number(r.n));
  return out;
}

/** Conditional on `expectedVersion` (412/404 via failedPrecondition). */
export async function updateCollection(
  db: Knex,
  orgId: string,
  id: string,
  {
    expectedVersion,
    patch,
  }: { expectedVersion: number; patch: { name?: string | undefined; description?: string | undefined } },
): Promise<CollectionRecord> {
  const changes: Record<string, unknown> = { version: expectedVersion + 1, updated_at: nowIso() };
  if (patch.name !== undefined) changes.name = patch.name;
  if (patch.description !== undefined) changes.description = patch.description;
  const n = await db('collections').where({ id, org_id: orgId, version: expectedVersion }).update(changes);
  if (n === 0) await failedPrecondition(db, 'collections', { orgId, id, what: 'Collection' });
  tableChanged(db, 'collections', orgId);
  return (await findCollection(db, orgId, id))!;
}

/** Replaces the collection-level list (PATCH /datacollection/{collectionId}); raises the version. */
export async function setCollectionTriggerUrls(
  db: Knex,
  orgId: string,
  id: string,
  entries: StoredTriggerUrl[],
): Promise<CollectionRecord> {
  const n = await db('collections')
    .where({ id, org_id: orgId })
    .update({ trigger_urls: JSON.stringify(entries), version: db.raw('version + 1'), updated_at: nowIso() });
  if (n === 0) throw new AppError('ERR_COLLECTION_NOT_FOUND');
  tableChanged(db, 'collections', orgId);
  return (await findCollection(db, orgId, id))!;
}

/**
 * Deletes the collection; items, and outbox rows through the caller, go with it. Returns the
 * ids of the `files` rows its files used, for the caller to remove with their blobs.
 */
export async function deleteCollection(
  db: Knex,
  orgId: string,
  id: string,
  expectedVersion: number | undefined,
): Promise<string[] | undefined> {
  return db.transaction(async (trx) => {
    const where: Record<string, unknown> = { id, org_id: orgId };
    if (expectedVersion !== undefined) where.version = expectedVersion;
    // Write first: on sqlite a transaction that reads before it writes can fail to upgrade its lock.
    const n = await trx('collections').where(where).update({ updated_at: nowIso() });
    if (n === 0) {
      if (expectedVersion === undefined) return undefined;
      await failedPrecondition(trx, 'collections', { orgId, id, what: 'Collection' });
    }
    const files = (await trx('collection_items')
      .where({ collection_id: id })
      .whereNotNull('file_id')
      .pluck('file_id')) as string[];
    await trx('event_outbox').where({ collection_id: id }).delete();
    await trx('collection_items').where({ collection_id: id }).delete();
    await trx('collections').where({ id }).delete();
    tableChanged(trx, 'collections', orgId);
    return files;
  });
}

export interface CollectionView {
  collectionId: string;
  name: string;
  description: string;
  type: CollectionType;
  triggerUrls: ConfiguredTriggerUrl[];
  itemCount: number;
  version: number;
  createdAt: string;
  updatedAt: string;
}

/** The management API shape (openapi/management.yaml Collection). */
export function collectionView(c: CollectionRecord, itemCount: number): CollectionView {
  return {
    collectionId: c.id,
    name: c.name,
    description: c.description,
    type: c.type,
    triggerUrls: configuredView(c.triggerUrls),
    itemCount,
    version: c.version,
    createdAt: c.createdAt,
    updatedAt: c.updatedAt,
  };
}

/** The resource API shape (openapi/resources.yaml DataCollection). */
export function dataCollectionView(c: CollectionRecord) {
  return {
    id: c.id,
    name: c.name,
    type: c.type,
    triggerUrls: configuredView(c.triggerUrls),
    createdAt: c.createdAt,
    updatedAt: c.updatedAt,
  };
}

/** Changes whenever a collection of the organisation is added, changed or removed (discovery's fingerprint). */
export function collectionsStamp(db: Knex, orgId: string): Promise<string> {
  return orgStamp(db, 'collections', orgId);
}

/**
 * The organisation's collections by id, with what discovery indexes of them (name, description,
 * type; spec section 14): items are not listed one by one.
 */
export async function collectionSummaries(
  db: Knex,
  orgId: string,
): Promise<{ id: string; name: string; description: string; type: CollectionType }[]> {
  return (await db('collections')
    .where({ org_id: orgId })
    .orderBy('id')
    .select('id', 'name', 'description', 'type')) as {
    id: string;
    name: string;
    description: string;
    type: CollectionType;
  }[];
}
