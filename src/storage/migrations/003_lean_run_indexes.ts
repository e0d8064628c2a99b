import type { Knex } from 'knex';

/**
 * Every accepted trigger call inserts a run, so each index on `runs` is paid on the hot path
 * (bench/triggers.ts). Two never serve a query: `(status)` is a prefix of
 * `(status, created_at)`, and `(trigger_id, idempotency_key)` indexes a column nothing writes
 * (Idempotency-Key has its own table, made by migration 002).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('runs', (t) => {
    t.dropIndex(['status']);
    t.dropIndex(['trigger_id', 'idempotency_key']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('runs', (t) => {
    t.index(['status']);
    t.index(['trigger_id', 'idempotency_key']);
  });
}
