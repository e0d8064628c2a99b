import type { Knex } from 'knex';
import { AppError } from '../errors/index.js';

/**
 * After a conditional write (`WHERE id = ? AND org_id = ? AND version = ?`) touched no row:
 * 404 when the row does not exist in this organisation, otherwise 412 with its current
 * version (optimistic locking, management API conventions).
 */
export async function failedPrecondition(
  db: Knex,
  table: string,
  { orgId, id, what }: { orgId: string; id: string; what: string },
): Promise<never> {
  const row = (await db(table).where({ id, org_id: orgId }).first('version')) as
    { version: number | string } | undefined;
  if (!row) throw new AppError('ERR_NOT_FOUND', { message: `${what} not found` });
  throw new AppError('ERR_VERSION_CONFLICT', { details: { currentVersion: Number(row.version) } });
}

/**
 * Count and newest change of an organisation's rows in `table` (which has `org_id` and
 * `updated_at`): changes when a row is added, changed or removed. The owning context calls it
 * with its own table (discovery's fingerprint, src/gateway/catalog.ts).
 */
export async function orgStamp(db: Knex, table: string, orgId: string): Promise<string> {
  const row = (await db(table).where('org_id', orgId).count({ n: '*' }).max({ at: 'updated_at' }).first()) as
    { n: number | string; at: string | null } | undefined;
  return `${row?.n ?? 0}@${row?.at ?? ''}`;
}
