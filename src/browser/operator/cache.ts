/**
 * The operator's action cache (migration 008_browser_action_cache; README.md in this folder):
 * per organisation, keyed by `cacheKey` plus the SHA-256 of the task text and its start URL.
 * An entry holds the steps a successful run resolved (locators, not snapshot refs), the reads
 * its result quotes and the result; it is encrypted at rest and served until it expires.
 * Every lookup takes the caller's clock (`now`), so expiry is testable without waiting days.
 */
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { decrypt, derivedKey, encrypt } from '../../kernel/crypto.js';
import type { RecordedStep } from './actions.js';

const ENTRY_VERSION = 1;

export interface CacheEntry {
  v: number;
  startUrl: string | null;
  steps: RecordedStep[];
  /** The finishing `done` result, verbatim; reads (extract steps) are substituted on replay. */
  result: string;
  /**
   * The page's state (URL, title, accessibility snapshot, hashed) when the result was made. A
   * replay of a result that quotes no read answers it only on the same page; an entry without it
   * is not checked that way.
   */
  view?: string | undefined;
}

export interface CacheSlot {
  orgId: string;
  cacheKey: string;
  taskHash: string;
}

export function taskHash(task: string, startUrl: string | null): string {
  return createHash('sha256')
    .update(JSON.stringify([task, startUrl ?? '']))
    .digest('hex');
}

function entryKey(secretKey: Buffer): Buffer {
  return derivedKey(secretKey, 'switchyard/browser-operator/cache/v1');
}

/** The live entry of the slot at `now`, or undefined (none, expired, or unreadable under this key). */
export async function lookupEntry(
  db: Knex,
  secretKey: Buffer,
  slot: CacheSlot,
  now: number,
): Promise<CacheEntry | undefined> {
  const row = (await db('browser_action_cache')
    .where({ org_id: slot.orgId, cache_key: slot.cacheKey, task_hash: slot.taskHash })
    .where('expires_at', '>', new Date(now).toISOString())
    .first('entry_enc')) as { entry_enc: string } | undefined;
  if (!row) return undefined;
  try {
    const entry = JSON.parse(decrypt(entryKey(secretKey), row.entry_enc)) as CacheEntry;
    return entry.v === ENTRY_VERSION && Array.isArray(entry.steps) ? entry : undefined;
  } catch {
    return undefined;
  }
}

/** Writes (or rewrites, after a heal or a live run) the slot's entry, valid `days` from `now`. */
export async function saveEntry(
  db: Knex,
  secretKey: Buffer,
  slot: CacheSlot,
  { entry, days, now }: { entry: Omit<CacheEntry, 'v'>; days: number; now: number },
): Promise<void> {
  const at = new Date(now).toISOString();
  const row = {
    org_id: slot.orgId,
    cache_key: slot.cacheKey,
    task_hash: slot.taskHash,
    entry_enc: encrypt(entryKey(secretKey), JSON.stringify({ v: ENTRY_VERSION, ...entry })),
    steps: entry.steps.length,
    hits: 0,
    created_at: at,
    updated_at: at,
    expires_at: new Date(now + days * 86_400_000).toISOString(),
  };
  await db('browser_action_cache')
    .insert(row)
    .onConflict(['org_id', 'cache_key', 'task_hash'])
    .merge(['entry_enc', 'steps', 'hits', 'updated_at', 'expires_at']);
}

export async function countHit(db: Knex, slot: CacheSlot): Promise<void> {
  await db('browser_action_cache')
    .where({ org_id: slot.orgId, cache_key: slot.cacheKey, task_hash: slot.taskHash })
    .increment('hits', 1);
}

/** Drops entries that expired before `before` (the sweep). */
export async function pruneExpired(db: Knex, before: string): Promise<number> {
  return db('browser_action_cache').where('expires_at', '<', before).delete();
}
