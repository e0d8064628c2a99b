import type { Knex } from 'knex';

/**
 * Run execution (spec "States and transitions"): leases for crash-safe claiming, attempts, the run deadline, step
 * logs, and idempotency keys (24 h per trigger).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('runs', (t) => {
    t.integer('attempts').notNullable().defaultTo(0);
    t.string('claimed_by', 100);
    t.string('lease_until', 32);
    t.integer('timeout_ms');
    t.index(['status', 'created_at']);
  });
  await db.schema.alterTable('run_steps', (t) => {
    t.text('logs');
  });
  await db.schema.createTable('idempotency_keys', (t) => {
    t.string('trigger_id', 64).notNullable();
    t.string('idem_key', 255).notNullable();
    t.string('org_id', 64).notNullable();
    t.string('run_id', 64).notNullable();
    t.string('created_at', 32).notNullable();
    t.primary(['trigger_id', 'idem_key']);
    t.index(['created_at']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('idempotency_keys');
  await db.schema.alterTable('run_steps', (t) => {
    t.dropColumn('logs');
  });
  await db.schema.alterTable('runs', (t) => {
    t.dropIndex(['status', 'created_at']);
    t.dropColumn('attempts');
    t.dropColumn('claimed_by');
    t.dropColumn('lease_until');
    t.dropColumn('timeout_ms');
  });
}
