import type { Knex } from 'knex';
import type { Logger } from '../config/logger.js';

/**
 * `last_used_at` bookkeeping for credentials and API keys. It is informational, so it must
 * never slow down or fail an authentication: writes happen after the caller has its answer,
 * at most once a minute per row and process, and the SQL condition keeps several processes
 * from rewriting the same row more often either.
 */
const TOUCH_INTERVAL_MS = 60_000;
const MAX_TRACKED = 10_000;

const lastTouched = new Map<string, number>();
const pending = new Set<Promise<void>>();

export function touchLastUsed(
  db: Knex,
  {
    table,
    id,
    log,
    now = Date.now(),
  }: { table: 'credentials' | 'api_keys'; id: string; log?: Logger | undefined; now?: number },
): void {
  const key = `${table}:${id}`;
  const prev = lastTouched.get(key);
  if (prev !== undefined && now - prev < TOUCH_INTERVAL_MS) return;
  if (lastTouched.size >= MAX_TRACKED) lastTouched.clear();
  lastTouched.set(key, now);
  const nowIso = new Date(now).toISOString();
  const threshold = new Date(now - TOUCH_INTERVAL_MS).toISOString();
  const write = new Promise<void>((resolve) => setImmediate(resolve))
    .then(() =>
      db(table)
        .where({ id })
        .andWhere((q) => q.whereNull('last_used_at').orWhere('last_used_at', '<', threshold))
        .update({ last_used_at: nowIso }),
    )
    .then(
      () => undefined,
      (err: unknown) => log?.warn({ err, table, id }, 'could not record last use'),
    );
  pending.add(write);
  void write.finally(() => pending.delete(write));
}

/** Waits for scheduled last-use writes (graceful shutdown and tests). */
export async function settleUsageWrites(): Promise<void> {
  while (pending.size > 0) await Promise.all([...pending]);
}

/** Forgets the per-process throttle (tests). */
export function resetUsageThrottle(): void {
  lastTouched.clear();
}
