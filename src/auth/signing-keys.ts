import type { Knex } from 'knex';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { newId } from '../kernel/ids.js';
import { decrypt, encrypt } from '../kernel/crypto.js';

/**
 * Token signing keys (ES256) in table `signing_keys`. The public JWK is stored as JSON text;
 * the private JWK is sealed with AES-256-GCM under config.secretKey.
 *
 * Life cycle: one active key (retired_at null) signs. Rotation retires it with
 * expires_at = now + token TTL + RETIRED_GRACE_S, so every token it signed stays verifiable
 * until that token expires (spec "Limits": tokens live 60 minutes); after expires_at the key
 * leaves the JWKS and verification and its row is deleted at the next rotation.
 */
export const SIGNING_ALG = 'ES256';
/** Covers clock skew and processes that have not yet reloaded the key set (they reload every 60 s). */
export const RETIRED_GRACE_S = 300;

export interface SigningKeyRecord {
  kid: string;
  publicJwk: JWK;
  createdAtMs: number;
  retiredAtMs: number | null;
  expiresAtMs: number | null;
}

interface SigningKeyRow {
  kid: string;
  alg: string;
  public_jwk: string;
  private_jwk_enc: string;
  created_at: string;
  retired_at: string | null;
  expires_at: string | null;
}

const iso = (ms: number): string => new Date(ms).toISOString();
const ms = (value: string | null): number | null => (value ? Date.parse(value) : null);

function toRecord(row: SigningKeyRow): SigningKeyRecord {
  return {
    kid: row.kid,
    publicJwk: JSON.parse(row.public_jwk) as JWK,
    createdAtMs: Date.parse(row.created_at),
    retiredAtMs: ms(row.retired_at),
    expiresAtMs: ms(row.expires_at),
  };
}

async function newKeyRow(secretKey: Buffer, nowMs: number): Promise<SigningKeyRow> {
  const { publicKey, privateKey } = await generateKeyPair(SIGNING_ALG, { extractable: true });
  const pub = await exportJWK(publicKey);
  const priv = await exportJWK(privateKey);
  const kid = newId('sk');
  const publicJwk: JWK = { kty: pub.kty, crv: pub.crv, x: pub.x, y: pub.y };
  return {
    kid,
    alg: SIGNING_ALG,
    public_jwk: JSON.stringify(publicJwk),
    private_jwk_enc: encrypt(secretKey, JSON.stringify(priv)),
    created_at: iso(nowMs),
    retired_at: null,
    expires_at: null,
  };
}

/** Keys usable at nowMs: active ones, and retired ones whose tokens may still be alive. */
export async function loadUsableKeys(db: Knex, nowMs: number): Promise<SigningKeyRecord[]> {
  const rows = (await db('signing_keys')
    .select('kid', 'public_jwk', 'created_at', 'retired_at', 'expires_at')
    .where((q) => q.whereNull('expires_at').orWhere('expires_at', '>', iso(nowMs)))
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'kid', order: 'desc' },
    ])) as SigningKeyRow[];
  return rows.map(toRecord);
}

/** The newest unretired key signs; several can exist briefly when two processes start on an empty store. */
export function pickActive(keys: SigningKeyRecord[]): SigningKeyRecord | undefined {
  return keys.find((k) => k.retiredAtMs === null);
}

export async function loadPrivateJwk(db: Knex, secretKey: Buffer, kid: string): Promise<JWK> {
  const row = (await db('signing_keys').select('private_jwk_enc').where({ kid }).first()) as
    Pick<SigningKeyRow, 'private_jwk_enc'> | undefined;
  if (!row) throw new Error(`signing key ${kid} is missing`);
  return JSON.parse(decrypt(secretKey, row.private_jwk_enc)) as JWK;
}

export async function createSigningKey(db: Knex, secretKey: Buffer, nowMs: number): Promise<{ kid: string }> {
  const row = await newKeyRow(secretKey, nowMs);
  await db('signing_keys').insert(row);
  return { kid: row.kid };
}

/**
 * Makes a new key the signing key and retires every active one. With `ifActiveKid` (automatic
 * rotation by age) it only proceeds while that key is still active, so processes that notice
 * the same old key at the same time rotate once: the row lock on PostgreSQL (and sqlite's
 * single writer) lets one transaction win and the others see 0 rows updated.
 */
export async function rotateSigningKeys(
  db: Knex,
  secretKey: Buffer,
  opts: { tokenTtlSeconds: number; nowMs: number; ifActiveKid?: string },
): Promise<{ kid: string } | null> {
  const row = await newKeyRow(secretKey, opts.nowMs);
  const retire = {
    retired_at: iso(opts.nowMs),
    expires_at: iso(opts.nowMs + (opts.tokenTtlSeconds + RETIRED_GRACE_S) * 1000),
  };
  return db.transaction(async (trx) => {
    if (opts.ifActiveKid) {
      const won = await trx('signing_keys').where({ kid: opts.ifActiveKid }).whereNull('retired_at').update(retire);
      if (won === 0) return null;
    }
    await trx('signing_keys').whereNull('retired_at').update(retire);
    // Private material of keys past their expiry is of no further use: drop it.
    await trx('signing_keys').whereNotNull('expires_at').andWhere('expires_at', '<=', iso(opts.nowMs)).delete();
    await trx('signing_keys').insert(row);
    return { kid: row.kid };
  });
}
