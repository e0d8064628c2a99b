/**
 * No lock-outs (openapi/management.yaml decision on revokeCredential and revokeApiKey): an
 * organisation's last active credential, or its last active trigger API key while a trigger
 * still needs one, is not revoked through the API. The check and the revocation happen in one
 * transaction holding the organisation row, so two concurrent revocations cannot each leave
 * the other as "the last one" and lock the organisation out together.
 */
import type { Knex } from 'knex';
import { AppError, type ErrorKey } from '../errors/index.js';
import { storeKind } from '../storage/db.js';
import { nowIso } from '../kernel/ids.js';

export interface RevokeGuard {
  /** Revoke even the last active one (the CLI's --force, for someone at the store). */
  force?: boolean | undefined;
  /** Whether the organisation still needs an active one; absent means always. */
  stillNeeded?: (trx: Knex.Transaction, orgId: string) => Promise<boolean>;
  /** The 409 raised when the row is the last one and still needed. */
  refusal: ErrorKey;
}

/** `missing` (no such row in the organisation), `unchanged` (already revoked) or `revoked`. */
export async function revokeUnlessLast(
  db: Knex,
  table: 'credentials' | 'api_keys',
  { orgId, id, guard }: { orgId: string; id: string; guard: RevokeGuard },
): Promise<'missing' | 'unchanged' | 'revoked'> {
  return db.transaction(async (trx) => {
    // Serialise revocations per organisation before reading. PostgreSQL: a row lock. sqlite:
    // a first write takes the file's write lock, so a second revocation waits on busy_timeout
    // instead of failing to upgrade its read lock (SQLITE_BUSY).
    if (storeKind(db) === 'pg') await trx('organizations').where({ id: orgId }).forUpdate().first('id');
    else await trx('organizations').where({ id: orgId }).update({ id: orgId });
    const row = (await trx(table).where({ id, org_id: orgId }).first('id', 'revoked_at')) as
      { id: string; revoked_at: string | null } | undefined;
    if (!row) return 'missing';
    if (row.revoked_at) return 'unchanged';
    if (!guard.force) {
      const other = await trx(table).where({ org_id: orgId }).whereNot({ id }).whereNull('revoked_at').first('id');
      if (!other && (!guard.stillNeeded || (await guard.stillNeeded(trx, orgId)))) throw new AppError(guard.refusal);
    }
    await trx(table).where({ id, org_id: orgId }).whereNull('revoked_at').update({ revoked_at: nowIso() });
    return 'revoked';
  });
}
