/**
 * Application server registrations (spec section 7): a server path of the organisation,
 * proxied to a remote MCP server or to an HTTP API described by an OpenAPI document, reached
 * with the secret of a connection (PCID). Children (parentPath) share the parent's PCID and
 * only change the server path. The proxying itself is in upstream/.
 */
import type { Knex } from 'knex';
import { AppError } from '../errors/index.js';
import { fromJson, toJson } from '../storage/db.js';
import { newId, nowIso } from '../kernel/ids.js';
import { pageRows, type Page, type PageRequest } from '../kernel/page.js';
import {
  checkAuth,
  checkDescription,
  checkName,
  checkPath,
  checkServiceKey,
  checkUpstream,
  type Upstream,
  type UpstreamAuth,
} from './registry-validate.js';
import { failedPrecondition, orgStamp } from '../storage/versioned.js';
import { tableChanged } from '../storage/changes.js';

export interface AppServer {
  serverId: string;
  path: string;
  name: string;
  description: string | null;
  service_key: string;
  parentPath: string | null;
  upstream: Upstream;
  auth: UpstreamAuth;
  version: number;
  createdAt: string;
  updatedAt: string;
}

export interface AppServerCreate {
  path: string;
  name: string;
  description?: string | null | undefined;
  service_key: string;
  parentPath?: string | null | undefined;
  upstream: Upstream;
  auth: UpstreamAuth;
}

export type AppServerPatch = Partial<AppServerCreate>;

interface ServerRow {
  id: string;
  path: string;
  name: string;
  description: string | null;
  service_key: string;
  parent_path: string | null;
  upstream: string;
  auth: string;
  version: number | string;
  created_at: string;
  updated_at: string;
}

function toView(r: ServerRow): AppServer {
  return {
    serverId: r.id,
    path: r.path,
    name: r.name,
    description: r.description ?? null,
    service_key: r.service_key,
    parentPath: r.parent_path ?? null,
    upstream: fromJson<Upstream>(r.upstream)!,
    auth: fromJson<UpstreamAuth>(r.auth)!,
    version: Number(r.version),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

const notFound = () => new AppError('ERR_NOT_FOUND', { message: 'Application server not found' });
const duplicatePath = (path: string) =>
  new AppError('ERR_CONFLICT', {
    message: `An application server with path "${path}" already exists`,
    details: { field: 'path' },
  });

function isUniqueViolation(e: unknown): boolean {
  const err = e as { code?: string; message?: string };
  return err?.code === '23505' || (err?.code === 'SQLITE_CONSTRAINT' && /UNIQUE/i.test(err.message ?? ''));
}

async function byPath(db: Knex, orgId: string, path: string): Promise<ServerRow | undefined> {
  return (await db('app_servers').where({ org_id: orgId, path }).first()) as ServerRow | undefined;
}

async function hasChildren(db: Knex, orgId: string, path: string): Promise<boolean> {
  return Boolean(await db('app_servers').where({ org_id: orgId, parent_path: path }).first('id'));
}

/** One level of nesting: the parent exists in the organisation and is not itself a child. */
async function checkParent(db: Knex, orgId: string, parentPath: string, ownPath: string): Promise<void> {
  if (parentPath === ownPath)
    throw new AppError('ERR_REQUEST_INVALID', {
      message: 'parentPath cannot be the server itself',
      details: { field: 'parentPath' },
    });
  const parent = await byPath(db, orgId, parentPath);
  if (!parent) {
    throw new AppError('ERR_REQUEST_INVALID', {
      message: `parentPath "${parentPath}" is not an application server of this organisation`,
      details: { field: 'parentPath' },
    });
  }
  if (parent.parent_path) {
    throw new AppError('ERR_REQUEST_INVALID', {
      message: 'parentPath must name a top-level server (one level of children)',
      details: { field: 'parentPath' },
    });
  }
}

export async function createAppServer(db: Knex, orgId: string, input: AppServerCreate): Promise<AppServer> {
  const path = checkPath(input.path);
  checkName(input.name);
  if (input.description !== undefined) checkDescription(input.description);
  checkServiceKey(input.service_key);
  const upstream = checkUpstream(input.upstream);
  const auth = checkAuth(input.auth);
  const parentPath = input.parentPath ?? null;
  if (parentPath !== null) await checkParent(db, orgId, checkPath(parentPath, 'parentPath'), path);
  if (await byPath(db, orgId, path)) throw duplicatePath(path);
  const now = nowIso();
  const row = {
    id: newId('srv'),
    org_id: orgId,
    path,
    name: input.name,
    description: input.description ?? null,
    service_key: input.service_key,
    parent_path: parentPath,
    upstream: toJson(upstream),
    auth: toJson(auth),
    version: 1,
    created_at: now,
    updated_at: now,
  };
  try {
    await db('app_servers').insert(row);
  } catch (e) {
    if (isUniqueViolation(e)) throw duplicatePath(path); // lost a race with a concurrent create
    throw e;
  }
  tableChanged(db, 'app_servers', orgId);
  return toView(row as ServerRow);
}

export async function getAppServer(db: Knex, orgId: string, serverId: string): Promise<AppServer> {
  const row = (await db('app_servers').where({ id: serverId, org_id: orgId }).first()) as ServerRow | undefined;
  if (!row) throw notFound();
  return toView(row);
}

/** Looks a registration up by its server path (the gateway router's key). */
export async function findAppServerByPath(db: Knex, orgId: string, path: string): Promise<AppServer | undefined> {
  const row = await byPath(db, orgId, path);
  return row ? toView(row) : undefined;
}

export async function listAppServers(db: Knex, orgId: string, page: PageRequest = {}): Promise<Page<AppServer>> {
  const { rows, nextCursor } = await pageRows<ServerRow & Record<string, unknown>>(
    db('app_servers').where('org_id', orgId).select('*'),
    { list: 'app-servers', column: 'id' },
    page,
  );
  return { items: rows.map(toView), nextCursor };
}

/** Conditional on the expected version (optimistic lock): stale → 412, absent → 404. */
export async function updateAppServer(
  db: Knex,
  orgId: string,
  serverId: string,
  { expectedVersion, patch }: { expectedVersion: number; patch: AppServerPatch },
): Promise<AppServer> {
  if (Object.values(patch).every((v) => v === undefined)) {
    throw new AppError('ERR_REQUEST_INVALID', { message: 'Nothing to update', details: { field: 'body' } });
  }
  const current = await getAppServer(db, orgId, serverId);
  const set: Record<string, unknown> = {};
  if (patch.path !== undefined && patch.path !== current.path) {
    set.path = checkPath(patch.path);
    if (await hasChildren(db, orgId, current.path)) {
      throw new AppError('ERR_CONFLICT', {
        message: 'The path of a server with children cannot change',
        details: { field: 'path' },
      });
    }
    if (await byPath(db, orgId, patch.path)) throw duplicatePath(patch.path);
  }
  if (patch.name !== undefined) {
    checkName(patch.name);
    set.name = patch.name;
  }
  if (patch.description !== undefined) {
    checkDescription(patch.description);
    set.description = patch.description;
  }
  if (patch.service_key !== undefined) {
    checkServiceKey(patch.service_key);
    set.service_key = patch.service_key;
  }
  if (patch.upstream !== undefined) set.upstream = toJson(checkUpstream(patch.upstream));
  if (patch.auth !== undefined) set.auth = toJson(checkAuth(patch.auth));
  if (patch.parentPath !== undefined) {
    if (patch.parentPath !== null) {
      await checkParent(
        db,
        orgId,
        checkPath(patch.parentPath, 'parentPath'),
        (set.path as string | undefined) ?? current.path,
      );
      if (await hasChildren(db, orgId, current.path)) {
        throw new AppError('ERR_REQUEST_INVALID', {
          message: 'A server with children cannot become a child',
          details: { field: 'parentPath' },
        });
      }
    }
    set.parent_path = patch.parentPath;
  }
  let updated: number;
  try {
    updated = await db('app_servers')
      .where({ id: serverId, org_id: orgId, version: expectedVersion })
      .update({ ...set, version: expectedVersion + 1, updated_at: nowIso() });
  } catch (e) {
    if (isUniqueViolation(e)) throw duplicatePath(String(set.path));
    throw e;
  }
  if (updated !== 1) await failedPrecondition(db, 'app_servers', { orgId, id: serverId, what: 'Application server' });
  tableChanged(db, 'app_servers', orgId);
  return getAppServer(db, orgId, serverId);
}

/** A server with children cannot be deleted (409) until its children are. */
export async function deleteAppServer(
  db: Knex,
  orgId: string,
  serverId: string,
  expectedVersion?: number,
): Promise<void> {
  const current = await getAppServer(db, orgId, serverId);
  if (await hasChildren(db, orgId, current.path)) {
    throw new AppError('ERR_CONFLICT', { message: 'Delete the child servers first', details: { children: true } });
  }
  const where: Record<string, unknown> = { id: serverId, org_id: orgId };
  if (expectedVersion !== undefined) where.version = expectedVersion;
  const deleted = await db('app_servers').where(where).delete();
  if (deleted !== 1) await failedPrecondition(db, 'app_servers', { orgId, id: serverId, what: 'Application server' });
  tableChanged(db, 'app_servers', orgId);
}

/** Every registration of the organisation (the gateway's catalogue; bounded by what an org registers). */
export async function allAppServers(db: Knex, orgId: string): Promise<AppServer[]> {
  const rows = (await db('app_servers').where('org_id', orgId).orderBy('path')) as ServerRow[];
  return rows.map(toView);
}

/** Changes whenever a registration of the organisation is added, changed or removed (discovery's fingerprint). */
export function appServersStamp(db: Knex, orgId: string): Promise<string> {
  return orgStamp(db, 'app_servers', orgId);
}
