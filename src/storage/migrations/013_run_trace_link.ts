import type { Knex } from 'knex';

/**
 * The W3C `traceparent` a run's span links to without being its child: for a run a queue starts
 * from a CSV row, the request that created the batch. Each such run begins a trace of its own
 * (up to 500,000 children of one request would make a trace no backend can show) and its span
 * carries a link to that request's span. Null for every other run, and when tracing is off.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('runs', (t) => {
    t.string('trace_link', 64).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('runs', (t) => {
    t.dropColumn('trace_link');
  });
}
