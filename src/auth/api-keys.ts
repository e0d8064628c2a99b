import type { Knex } from 'knex';
import { revokeUnlessLast } from './last-active.js';
import { TtlMemo } from '../kernel/ttl-memo.js';
import type { Logger } from '../config/logger.js';
import { newId, nowIso } from '../kernel/ids.js';
import { pageRows, type Page, type PageRequest } from '../kernel/page.js';
import { generateSecret, hashSecret, safeEqual } from '../kernel/crypto.js';
import { touchLastUsed } from './usage.js';
import { tableChanged, watchTables } from '../storage/changes.js';

/**
 * Trigger API keys per organisation (spec "Authentication" 1: header `X-API-KEY`, or the path
 * segment of webhook and polling URLs). Shown once, stored as SHA-256 only; the hint (last 4
 * characters) lets people recognise a key in lists without exposing it.
 */
export interface ApiKeyView {
  id: string;
  label: string;
  hint: string;
  createdAt: string;
  revokedAt: string | null;
}

interface ApiKeyRow {
  id: string;
  org_id: string;
  label: string;
  secret_hash: string;
  hint: string;
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

const ID_PREFIX = 'key';
const ID_PATTERN = new RegExp(`^${ID_PREFIX}_[0-9a-f]{32}$`);
const MAX_SECRET_LENGTH = 256;

function toView(row: ApiKeyRow): ApiKeyView {
  return { id: row.id, label: row.label, hint: row.hint, createdAt: row.created_at, revokedAt: row.revoked_at ?? null };
}

export async function createApiKey(
  db: Knex,
  orgId: string,
  input: { label: string },
): Promise<{ apiKey: ApiKeyView; secret: string }> {
  const secret = generateSecret('syk');
  const row: ApiKeyRow = {
    id: newId(ID_PREFIX),
    org_id: orgId,
    label: input.label,
    secret_hash: hashSecret(secret),
    hint: secret.slice(-4),
    created_at: nowIso(),
    revoked_at: null,
    last_used_at: null,
  };
  await db('api_keys').insert(row);
  return { apiKey: toView(row), secret };
}

/** Oldest first, one page (src/kernel/page.ts); a cursor of another list is invalid_cursor. */
export async function listApiKeys(db: Knex, orgId: string, page: PageRequest = {}): Promise<Page<ApiKeyView>> {
  const { rows, nextCursor } = await pageRows<ApiKeyRow & Record<string, unknown>>(
    db('api_keys').where({ org_id: orgId }),
    { list: 'api-keys', column: 'id', keyPattern: ID_PATTERN },
    page,
  );
  return { items: rows.map(toView), nextCursor };
}

export async function getApiKey(db: Knex, orgId: string, id: string): Promise<ApiKeyView | null> {
  const row = (await db('api_keys').where({ id, org_id: orgId }).first()) as ApiKeyRow | undefined;
  return row ? toView(row) : null;
}

/**
 * Idempotent; a revoked key fails verification from the next request on in this process (the
 * ApiKeyVerifier watches `api_keys`) and within its TTL in every other one. Refused with 409
 * when it is the organisation's last active key while an enabled trigger still needs one
 * (./last-active.ts); with no enabled trigger the last key may go. Whether a trigger needs one
 * is the triggers context's answer (`triggersNeedKey`, its `hasEnabledTriggers`): auth sits
 * below triggers and does not read their table.
 */
export async function revokeApiKey(
  db: Knex,
  orgId: string,
  id: string,
  opts: { force?: boolean; triggersNeedKey: (trx: Knex.Transaction, orgId: string) => Promise<boolean> },
): Promise<ApiKeyView | null> {
  const outcome = await revokeUnlessLast(db, 'api_keys', {
    orgId,
    id,
    guard: { force: opts.force, refusal: 'ERR_LAST_API_KEY', stillNeeded: opts.triggersNeedKey },
  });
  if (outcome === 'revoked') tableChanged(db, 'api_keys', orgId);
  return outcome === 'missing' ? null : getApiKey(db, orgId, id);
}

/**
 * Hot path of every trigger call: one indexed lookup by hash, a constant-time check, and a
 * last-use write scheduled after the answer (at most once a minute per key).
 */
export async function verifyApiKey(
  db: Knex,
  secret: string,
  log?: Logger,
): Promise<{ orgId: string; keyId: string } | null> {
  if (typeof secret !== 'string' || secret.length === 0 || secret.length > MAX_SECRET_LENGTH) return null;
  const hash = hashSecret(secret);
  const row = (await db('api_keys')
    .select('id', 'org_id', 'secret_hash', 'revoked_at')
    .where({ secret_hash: hash })
    .first()) as Pick<ApiKeyRow, 'id' | 'org_id' | 'secret_hash' | 'revoked_at'> | undefined;
  if (!row || !safeEqual(row.secret_hash, hash) || row.revoked_at) return null;
  touchLastUsed(db, { table: 'api_keys', id: row.id, log });
  return { orgId: row.org_id, keyId: row.id };
}

/**
 * Per-process memo of `verifyApiKey` for the trigger hot path. Our rule for revocation (as
 * for credentials): a revoked key stops working within `ttlMs` (≤ 5 s) in every process, and
 * at once in the process that revoked it (`forgetOrg`, told by `revokeApiKey`). Unknown keys are remembered too, so a
 * caller hammering with a wrong key does not reach the store on every request.
 */
export class ApiKeyVerifier {
  private readonly memo: TtlMemo<{ orgId: string; keyId: string } | null>;

  constructor(
    private readonly db: Knex,
    ttlMs: number,
    private readonly log?: Logger,
  ) {
    this.memo = new TtlMemo(ttlMs);
    watchTables(db, ['api_keys'], this);
  }

  verify(secret: string): Promise<{ orgId: string; keyId: string } | null> {
    // Keyed by the hash: no plaintext key is held in a long-lived map.
    return this.memo.get(hashSecret(secret), () => verifyApiKey(this.db, secret, this.log));
  }

  /**
   * Drops every remembered answer of this process, after a revocation made here through
   * `revokeApiKey` (entries are keyed by the secret's hash, not by organisation).
   */
  forgetOrg(): void {
    this.memo.clear();
  }
}
