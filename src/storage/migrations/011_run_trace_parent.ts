import type { Knex } from 'knex';

/**
 * The W3C `traceparent` of the span that created a run (a trigger call, a queue batch), kept so
 * the run's span joins that trace in whichever process executes it, however much later
 * (src/kernel/tracing.ts). Null when tracing is off or nothing was traced.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('runs', (t) => {
    t.string('trace_parent', 64).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('runs', (t) => {
    t.dropColumn('trace_parent');
  });
}
