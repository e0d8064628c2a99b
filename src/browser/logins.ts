/**
 * Saved browser logins (spec "Browser task files", saved login context entry; management API
 * `/v1/browser-logins`; tool `browser-automation_logins_list`): a Playwright storage state,
 * encrypted at rest with AES-256-GCM under a key derived from the service's secret key, handed
 * only to the organisation's own tasks (`useContextService`). Views never carry the state.
 * `status` is `expired` once every cookie with an expiry is past it, else `active`.
 */
import type { Knex } from 'knex';
import { decrypt, derivedKey, encrypt } from '../kernel/crypto.js';
import { AppError } from '../errors/index.js';
import { newId, nowIso } from '../kernel/ids.js';
import { pageRows, type Page, type PageRequest } from '../kernel/page.js';

export const LOGIN_ID_PATTERN = /^ctx_[0-9a-f]{32}$/;
/** openapi/management.yaml BrowserLoginCreate: the state is at most 1 MiB as JSON. */
export const MAX_STATE_BYTES = 1024 * 1024;

export interface StorageState {
  cookies: Array<{
    name: string;
    value: string;
    domain: string;
    path: string;
    expires?: number;
    httpOnly?: boolean;
    secure?: boolean;
    sameSite?: 'Strict' | 'Lax' | 'None';
  }>;
  origins?: Array<{ origin: string; localStorage: Array<{ name: string; value: string }> }>;
}

export interface LoginView {
  id: string;
  label: string;
  service: string;
  loginUrl: string;
  status: 'active' | 'expired';
  createdAt: string;
}

interface LoginRow {
  id: string;
  org_id: string;
  label: string;
  service: string;
  login_url: string;
  state_enc: string;
  expires_at: string | null;
  created_at: string;
}

function stateKey(secretKey: Buffer): Buffer {
  return derivedKey(secretKey, 'switchyard/browser-logins/state/v1');
}

/**
 * The latest expiry among the cookies, or null when none expires (a session cookie, or no
 * cookie at all: a state of local storage only does not expire by itself).
 */
function latestExpiry(state: StorageState): string | null {
  let latest = -Infinity;
  for (const c of state.cookies) {
    if (c.expires === undefined || c.expires < 0) return null;
    latest = Math.max(latest, c.expires);
  }
  return Number.isFinite(latest) ? new Date(latest * 1000).toISOString() : null;
}

function view(r: LoginRow, now = nowIso()): LoginView {
  return {
    id: r.id,
    label: r.label,
    service: r.service,
    loginUrl: r.login_url,
    status: r.expires_at !== null && r.expires_at < now ? 'expired' : 'active',
    createdAt: r.created_at,
  };
}

export async function createLogin(
  db: Knex,
  secretKey: Buffer,
  orgId: string,
  input: { label: string; service: string; loginUrl: string; storageState: StorageState },
): Promise<LoginView> {
  const json = JSON.stringify(input.storageState);
  if (Buffer.byteLength(json) > MAX_STATE_BYTES) {
    throw new AppError('ERR_REQUEST_INVALID', {
      message: 'storageState is larger than 1 MiB',
      details: [{ path: 'storageState', message: 'is larger than 1 MiB' }],
    });
  }
  const row: LoginRow = {
    id: newId('ctx'),
    org_id: orgId,
    label: input.label.trim(),
    service: input.service.trim(),
    login_url: input.loginUrl,
    state_enc: encrypt(stateKey(secretKey), json),
    expires_at: latestExpiry(input.storageState),
    created_at: nowIso(),
  };
  await db('browser_logins').insert(row);
  return view(row);
}

export async function getLogin(db: Knex, orgId: string, id: string): Promise<LoginView | undefined> {
  if (!LOGIN_ID_PATTERN.test(id)) return undefined;
  const row = (await db('browser_logins').where({ org_id: orgId, id }).first()) as LoginRow | undefined;
  return row ? view(row) : undefined;
}

export async function listLogins(db: Knex, orgId: string, page: PageRequest): Promise<Page<LoginView>> {
  const q = db('browser_logins').where({ org_id: orgId });
  const { rows, nextCursor } = await pageRows<LoginRow & Record<string, unknown>>(
    q,
    { list: 'browser-logins', column: 'id', keyPattern: LOGIN_ID_PATTERN },
    page,
  );
  const now = nowIso();
  return { items: rows.map((r) => view(r, now)), nextCursor };
}

/** Every saved login of the organisation (the tool lists them all; an organisation keeps a handful). */
export async function allLogins(db: Knex, orgId: string): Promise<LoginView[]> {
  const rows = (await db('browser_logins').where({ org_id: orgId }).orderBy('id').limit(1000)) as LoginRow[];
  const now = nowIso();
  return rows.map((r) => view(r, now));
}

export async function deleteLogin(db: Knex, orgId: string, id: string): Promise<boolean> {
  if (!LOGIN_ID_PATTERN.test(id)) return false;
  return (await db('browser_logins').where({ org_id: orgId, id }).delete()) > 0;
}

/** The decrypted state for a task of the same organisation, or undefined when the organisation has no such login. */
export async function loginState(
  db: Knex,
  secretKey: Buffer,
  orgId: string,
  id: string,
): Promise<StorageState | undefined> {
  if (!LOGIN_ID_PATTERN.test(id)) return undefined;
  const row = (await db('browser_logins').where({ org_id: orgId, id }).first()) as LoginRow | undefined;
  return row ? (JSON.parse(decrypt(stateKey(secretKey), row.state_enc)) as StorageState) : undefined;
}
