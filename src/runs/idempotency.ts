/**
 * `Idempotency-Key` (our extension, openapi/triggers.yaml): within 24 hours the same key on the same
 * trigger replays the original run instead of starting a second one. The runs context owns the
 * `idempotency_keys` table (a key names the run it started, claimed in that run's transaction);
 * the trigger call (src/triggers/call.ts) uses these functions, and run retention purges the
 * expired keys.
 */
import type { Knex } from 'knex';
import { nowIso } from '../kernel/ids.js';

export const IDEMPOTENCY_WINDOW_MS = 24 * 3_600_000;

/** Thrown inside the run transaction when another call won the same key first. */
export class IdempotencyRace extends Error {
  constructor(readonly runId: string) {
    super('idempotency key already used');
  }
}

export async function lookupIdempotent(db: Knex, triggerId: string, key: string): Promise<string | undefined> {
  const since = new Date(Date.now() - IDEMPOTENCY_WINDOW_MS).toISOString();
  const row = (await db('idempotency_keys')
    .where({ trigger_id: triggerId, idem_key: key })
    .andWhere('created_at', '>=', since)
    .first('run_id')) as { run_id: string } | undefined;
  return row?.run_id;
}

/** Claims the key for `runId` in the run's transaction; an expired claim is replaced. */
export async function rememberIdempotent(
  trx: Knex.Transaction,
  e: { orgId: string; triggerId: string; key: string; runId: string },
): Promise<void> {
  const since = new Date(Date.now() - IDEMPOTENCY_WINDOW_MS).toISOString();
  await trx('idempotency_keys')
    .where({ trigger_id: e.triggerId, idem_key: e.key })
    .andWhere('created_at', '<', since)
    .delete();
  const inserted = await trx('idempotency_keys')
    .insert({ trigger_id: e.triggerId, idem_key: e.key, org_id: e.orgId, run_id: e.runId, created_at: nowIso() })
    .onConflict(['trigger_id', 'idem_key'])
    .ignore()
    .returning('run_id');
  if ((inserted as unknown[]).length === 0) {
    const winner = (await trx('idempotency_keys')
      .where({ trigger_id: e.triggerId, idem_key: e.key })
      .first('run_id')) as { run_id: string };
    throw new IdempotencyRace(winner.run_id);
  }
}

/** Removes the keys older than the window (run retention); returns how many went. */
export async function purgeExpiredIdempotencyKeys(db: Knex, now = Date.now()): Promise<number> {
  return db('idempotency_keys')
    .where('created_at', '<', new Date(now - IDEMPOTENCY_WINDOW_MS).toISOString())
    .delete();
}
