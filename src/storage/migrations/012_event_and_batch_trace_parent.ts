import type { Knex } from 'knex';

/**
 * The W3C `traceparent` of the request that wrote an item change's event calls (`event_outbox`)
 * or created a CSV batch (`queue_batches`), kept so the delivery's span and the batch load's span
 * join that request's trace when the delivery thread or the loader gets to them, in whichever
 * process (src/kernel/tracing.ts). Null when tracing is off or nothing was traced.
 */
export async function up(db: Knex): Promise<void> {
  for (const table of ['event_outbox', 'queue_batches'])
    await db.schema.alterTable(table, (t) => {
      t.string('trace_parent', 64).nullable();
    });
}

export async function down(db: Knex): Promise<void> {
  for (const table of ['event_outbox', 'queue_batches'])
    await db.schema.alterTable(table, (t) => {
      t.dropColumn('trace_parent');
    });
}
