import type { Knex } from 'knex';
import type { Logger } from '../config/logger.js';
import { revokeUnlessLast } from './last-active.js';
import { newId, nowIso } from '../kernel/ids.js';
import { pageRows, type Page, type PageRequest } from '../kernel/page.js';
import { generateSecret, hashSecret, safeEqual } from '../kernel/crypto.js';
import { touchLastUsed } from './usage.js';

/**
 * API credentials (spec "Authentication" 4): a client id, a client secret shown once, and an
 * organisation. The secret is stored only as its SHA-256.
 *
 * Decision: a credential is active as soon as createCredential returns. The spec's "may take
 * up to 60 seconds to activate" (Limits) is an upper bound callers must tolerate; we beat it.
 */
export interface CredentialView {
  id: string;
  orgId: string;
  clientId: string;
  label: string;
  createdAt: string;
  revokedAt: string | null;
}

export interface CredentialRow {
  id: string;
  org_id: string;
  client_id: string;
  secret_hash: string;
  label: string;
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

const ID_PREFIX = 'cred';
const ID_PATTERN = new RegExp(`^${ID_PREFIX}_[0-9a-f]{32}$`);
/** Used when no row matches so a miss costs the same comparison as a hit. */
const DUMMY_HASH = hashSecret('switchyard-no-such-credential');
/** Our secrets are 44 characters; anything far longer is not one of ours. */
const MAX_SECRET_LENGTH = 256;

function toView(row: CredentialRow): CredentialView {
  return {
    id: row.id,
    orgId: row.org_id,
    clientId: row.client_id,
    label: row.label,
    createdAt: row.created_at,
    revokedAt: row.revoked_at ?? null,
  };
}

export async function createCredential(
  db: Knex,
  orgId: string,
  input: { label: string },
): Promise<{ credential: CredentialView; clientSecret: string }> {
  const clientSecret = generateSecret('sys');
  const row: CredentialRow = {
    id: newId(ID_PREFIX),
    org_id: orgId,
    client_id: newId('cli'),
    secret_hash: hashSecret(clientSecret),
    label: input.label,
    created_at: nowIso(),
    revoked_at: null,
    last_used_at: null,
  };
  await db('credentials').insert(row);
  return { credential: toView(row), clientSecret };
}

/** Oldest first, one page (src/kernel/page.ts); a cursor of another list is invalid_cursor. */
export async function listCredentials(db: Knex, orgId: string, page: PageRequest = {}): Promise<Page<CredentialView>> {
  const { rows, nextCursor } = await pageRows<CredentialRow & Record<string, unknown>>(
    db('credentials').where({ org_id: orgId }),
    { list: 'credentials', column: 'id', keyPattern: ID_PATTERN },
    page,
  );
  return { items: rows.map(toView), nextCursor };
}

/** Null when absent or owned by another organisation (every lookup is org-scoped). */
export async function getCredential(db: Knex, orgId: string, id: string): Promise<CredentialView | null> {
  const row = (await db('credentials').where({ id, org_id: orgId }).first()) as CredentialRow | undefined;
  return row ? toView(row) : null;
}

/**
 * Idempotent: a second revoke keeps the first revokedAt. Tokens already issued fail within
 * seconds through the TokenService's status cache; use TokenService.revokeCredential to also
 * evict this process's cache entry at once.
 */
export async function revokeCredential(
  db: Knex,
  orgId: string,
  id: string,
  opts: { force?: boolean } = {},
): Promise<CredentialView | null> {
  // Refused with 409 when it is the organisation's last active credential (./last-active.ts).
  const outcome = await revokeUnlessLast(db, 'credentials', {
    orgId,
    id,
    guard: {
      force: opts.force,
      refusal: 'ERR_LAST_CREDENTIAL',
    },
  });
  return outcome === 'missing' ? null : getCredential(db, orgId, id);
}

function checkSecret(row: CredentialRow | undefined, clientSecret: string): CredentialRow | null {
  const hash = hashSecret(clientSecret);
  const ok = safeEqual(row?.secret_hash ?? DUMMY_HASH, hash);
  if (!row || !ok || row.revoked_at) return null;
  return row;
}

/** OAuth client authentication (spec section 6): client id plus secret, revoked fails. */
export async function authenticateClient(
  db: Knex,
  clientId: string,
  clientSecret: string,
  log?: Logger,
): Promise<CredentialView | null> {
  if (!clientId || !clientSecret || clientSecret.length > MAX_SECRET_LENGTH || clientId.length > 64) return null;
  const row = (await db('credentials').where({ client_id: clientId }).first()) as CredentialRow | undefined;
  const ok = checkSecret(row, clientSecret);
  if (!ok) return null;
  touchLastUsed(db, { table: 'credentials', id: ok.id, log });
  return toView(ok);
}

/**
 * Legacy exchange (spec section 6, "Authentication" 4: the client secret is the API key).
 * Looked up by hash; the hash of a 238-bit random secret leaks nothing through index timing.
 */
export async function authenticateSecret(db: Knex, clientSecret: string, log?: Logger): Promise<CredentialView | null> {
  if (!clientSecret || clientSecret.length > MAX_SECRET_LENGTH) return null;
  const row = (await db('credentials')
    .where({ secret_hash: hashSecret(clientSecret) })
    .first()) as CredentialRow | undefined;
  const ok = checkSecret(row, clientSecret);
  if (!ok) return null;
  touchLastUsed(db, { table: 'credentials', id: ok.id, log });
  return toView(ok);
}
