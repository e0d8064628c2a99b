/**
 * Connections (spec "Connection"; id = the PCID passed to application tools). The secret is
 * write-only: encrypted at rest with AES-256-GCM under config.secretKey
 * and never returned; views only say whether one is set.
 */
import type { Knex } from 'knex';
import { decrypt, encrypt } from '../kernel/crypto.js';
import type { Config } from '../config/index.js';
import { AppError } from '../errors/index.js';
import { fromJson, toJson } from '../storage/db.js';
import { newId, nowIso } from '../kernel/ids.js';
import { pageRows, type Page, type PageRequest } from '../kernel/page.js';
import { CONNECTION_STATUSES, isConnectionStatus, type ConnectionStatus } from './statuses.js';
import { failedPrecondition, orgStamp } from '../storage/versioned.js';
import { tableChanged } from '../storage/changes.js';

export type ConnectionSecret = string | Record<string, unknown>;
type KeyConfig = Pick<Config, 'secretKey'>;

export interface Connection {
  id: string;
  name: string;
  service_key: string;
  status: ConnectionStatus;
  metadata: Record<string, unknown>;
  hasSecret: boolean;
  version: number;
  createdAt: string;
  updatedAt: string;
}

/** Exactly the spec's Connection fields (section 10 listing). */
export interface UserConnection {
  id: string;
  name: string;
  service_key: string;
  status: ConnectionStatus;
}

export interface ConnectionCreate {
  name: string;
  service_key: string;
  status?: ConnectionStatus | undefined;
  secret: ConnectionSecret;
  metadata?: Record<string, unknown> | undefined;
}

export interface ConnectionPatch {
  name?: string | undefined;
  status?: ConnectionStatus | undefined;
  secret?: ConnectionSecret | undefined;
  metadata?: Record<string, unknown> | undefined;
}

export interface ConnectionFilter {
  serviceKey?: string | undefined;
  statuses?: readonly ConnectionStatus[] | undefined;
}

/** The stored row; the gateway decrypts `secret_enc` with decryptConnectionSecret. */
export interface ConnectionRow {
  id: string;
  org_id: string;
  name: string;
  service_key: string;
  status: ConnectionStatus;
  secret_enc: string | null;
  metadata: string | null;
  version: number | string;
  created_at: string;
  updated_at: string;
}

export const SERVICE_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
const MAX_SECRET_BYTES = 64 * 1024;
const MAX_METADATA_BYTES = 16 * 1024;

const invalid = (message: string, field: string) =>
  new AppError('ERR_REQUEST_INVALID', { message, details: { field } });

function toView(r: ConnectionRow): Connection {
  return {
    id: r.id,
    name: r.name,
    service_key: r.service_key,
    status: r.status,
    metadata: fromJson<Record<string, unknown>>(r.metadata) ?? {},
    hasSecret: r.secret_enc !== null && r.secret_enc !== undefined,
    version: Number(r.version),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function checkName(v: unknown): void {
  if (typeof v !== 'string' || v.trim() === '' || v.length > 200)
    throw invalid('name must be 1 to 200 characters', 'name');
}

function checkStatus(v: unknown): void {
  if (!isConnectionStatus(v)) throw invalid(`status must be one of ${CONNECTION_STATUSES.join(', ')}`, 'status');
}

function sealSecret(config: KeyConfig, secret: unknown): string {
  const ok = (typeof secret === 'string' && secret.length > 0) || isPlainObject(secret);
  if (!ok) throw invalid('secret must be a non-empty string or an object', 'secret');
  const json = JSON.stringify(secret);
  if (Buffer.byteLength(json) > MAX_SECRET_BYTES) throw invalid('secret is larger than 64 KiB', 'secret');
  return encrypt(config.secretKey, json);
}

function checkMetadata(v: unknown): void {
  if (!isPlainObject(v)) throw invalid('metadata must be an object', 'metadata');
  if (Buffer.byteLength(JSON.stringify(v)) > MAX_METADATA_BYTES)
    throw invalid('metadata is larger than 16 KiB', 'metadata');
}

/** The decrypted secret of a stored connection, or null when it has none. */
export function decryptConnectionSecret(
  config: KeyConfig,
  row: Pick<ConnectionRow, 'secret_enc'>,
): ConnectionSecret | null {
  if (!row.secret_enc) return null;
  return JSON.parse(decrypt(config.secretKey, row.secret_enc)) as ConnectionSecret;
}

export async function createConnection(
  db: Knex,
  orgId: string,
  input: ConnectionCreate,
  config: KeyConfig,
): Promise<Connection> {
  checkName(input.name);
  if (typeof input.service_key !== 'string' || !SERVICE_KEY_PATTERN.test(input.service_key)) {
    throw invalid('service_key must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$', 'service_key');
  }
  const status = input.status ?? 'connected';
  checkStatus(status);
  if (input.metadata !== undefined) checkMetadata(input.metadata);
  const now = nowIso();
  const row = {
    id: newId('pcid'),
    org_id: orgId,
    name: input.name,
    service_key: input.service_key,
    status,
    secret_enc: sealSecret(config, input.secret),
    metadata: toJson(input.metadata ?? {}),
    version: 1,
    created_at: now,
    updated_at: now,
  };
  await db('connections').insert(row);
  tableChanged(db, 'connections', orgId);
  return toView(row);
}

export async function findConnectionRow(
  db: Knex,
  orgId: string,
  connectionId: string,
): Promise<ConnectionRow | undefined> {
  return (await db('connections').where({ id: connectionId, org_id: orgId }).first()) as ConnectionRow | undefined;
}

export async function getConnection(db: Knex, orgId: string, connectionId: string): Promise<Connection> {
  const row = await findConnectionRow(db, orgId, connectionId);
  if (!row) throw new AppError('ERR_NOT_FOUND', { message: 'Connection not found' });
  return toView(row);
}

function filtered(db: Knex, orgId: string, filter: ConnectionFilter): Knex.QueryBuilder {
  const q = db('connections').where('org_id', orgId);
  if (filter.serviceKey !== undefined) q.andWhere('service_key', filter.serviceKey);
  if (filter.statuses !== undefined) q.whereIn('status', [...filter.statuses]);
  return q;
}

export async function listConnections(
  db: Knex,
  orgId: string,
  filter: ConnectionFilter = {},
  page: PageRequest = {},
): Promise<Page<Connection>> {
  const { rows, nextCursor } = await pageRows<ConnectionRow & Record<string, unknown>>(
    filtered(db, orgId, filter).select('*'),
    { list: 'connections', column: 'id' },
    page,
  );
  return { items: rows.map(toView), nextCursor };
}

/**
 * Spec section 10: every connection of the organisation in the given statuses, unpaged and
 * sorted by name (case-insensitive) then id, as openapi/connect.yaml decides.
 */
export async function listUserConnections(
  db: Knex,
  orgId: string,
  statuses: readonly ConnectionStatus[],
): Promise<UserConnection[]> {
  const rows = (await filtered(db, orgId, { statuses })
    .select('id', 'name', 'service_key', 'status')
    .orderByRaw('lower(name) asc, id asc')) as UserConnection[];
  return rows.map((r) => ({ id: r.id, name: r.name, service_key: r.service_key, status: r.status }));
}

/** Conditional on the expected version (optimistic lock): stale → 412, absent → 404. */
export async function updateConnection(
  db: Knex,
  orgId: string,
  connectionId: string,
  { expectedVersion, patch, config }: { expectedVersion: number; patch: ConnectionPatch; config: KeyConfig },
): Promise<Connection> {
  const set: Record<string, unknown> = {};
  if (patch.name !== undefined) {
    checkName(patch.name);
    set.name = patch.name;
  }
  if (patch.status !== undefined) {
    checkStatus(patch.status);
    set.status = patch.status;
  }
  if (patch.secret !== undefined) set.secret_enc = sealSecret(config, patch.secret);
  if (patch.metadata !== undefined) {
    checkMetadata(patch.metadata);
    set.metadata = toJson(patch.metadata);
  }
  if (Object.keys(set).length === 0) throw invalid('Nothing to update: send name, status, secret or metadata', 'body');
  const updated = await db('connections')
    .where({ id: connectionId, org_id: orgId, version: expectedVersion })
    .update({ ...set, version: expectedVersion + 1, updated_at: nowIso() });
  if (updated !== 1) await failedPrecondition(db, 'connections', { orgId, id: connectionId, what: 'Connection' });
  tableChanged(db, 'connections', orgId);
  return getConnection(db, orgId, connectionId);
}

export async function deleteConnection(
  db: Knex,
  orgId: string,
  connectionId: string,
  expectedVersion?: number,
): Promise<void> {
  const where: Record<string, unknown> = { id: connectionId, org_id: orgId };
  if (expectedVersion !== undefined) where.version = expectedVersion;
  const deleted = await db('connections').where(where).delete();
  if (deleted !== 1) await failedPrecondition(db, 'connections', { orgId, id: connectionId, what: 'Connection' });
  tableChanged(db, 'connections', orgId);
}

/** Changes whenever a connection of the organisation is added, changed or removed (discovery's fingerprint). */
export function connectionsStamp(db: Knex, orgId: string): Promise<string> {
  return orgStamp(db, 'connections', orgId);
}
