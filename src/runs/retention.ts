import type { Knex } from 'knex';
import type { BlobStore } from '../kernel/blobs.js';
import { deleteRunFiles, deleteUnattachedAttachments } from '../files/index.js';
import { purgeExpiredIdempotencyKeys } from './idempotency.js';

/**
 * Retention (README "Scaling out"): finished runs older than `days`, with their steps, files and
 * attachments, are deleted; expired idempotency keys (24 h) too. Returns the runs pruned.
 */
export async function pruneFinishedRuns(db: Knex, blobs: BlobStore, days: number, now = Date.now()): Promise<number> {
  const cutoff = new Date(now - days * 86_400_000).toISOString();
  const old = (await db('runs')
    .whereIn('status', ['COMPLETE', 'FAILED', 'TIMEOUT'])
    .andWhere('finished_at', '<', cutoff)
    .select('id', 'org_id')
    .limit(1000)) as { id: string; org_id: string }[];
  for (const { id: runId, org_id: orgId } of old) {
    await deleteRunFiles(db, blobs, orgId, runId);
    await db.transaction(async (trx) => {
      await trx('run_steps').where({ run_id: runId }).delete();
      await trx('runs').where({ id: runId }).delete();
    });
  }
  await purgeExpiredIdempotencyKeys(db, now);
  // Attachments whose request never became a run (crash between upload and insert).
  await deleteUnattachedAttachments(db, blobs, new Date(now - 3_600_000).toISOString());
  return old.length;
}
