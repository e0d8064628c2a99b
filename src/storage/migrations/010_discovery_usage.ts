import type { Knex } from 'knex';

/**
 * Discovery's learning from use (src/servers/sidekick/README.md "Learning from
 * use"): one row per organisation, remembered request and tool — the tool a caller of the
 * organisation called successfully within the window after a capabilities_discover with that
 * request. `request_hash` is the SHA-256 of the request's sorted analysed terms (`terms`), so
 * wordings that analyse alike share a row; `request` keeps the latest wording (at most 300
 * characters) for capability_details. Bounded per organisation by the writer (least recently
 * used rows removed beyond MAX_ROWS_PER_ORG, usage-store.ts); `id` only orders that pruning.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('discovery_usage', (t) => {
    t.increments('id').primary();
    t.string('org_id', 64).notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('request_hash', 64).notNullable();
    t.text('request').notNullable();
    t.text('terms').notNullable();
    t.string('server', 200).notNullable();
    t.string('tool', 200).notNullable();
    t.integer('uses').notNullable().defaultTo(1);
    t.string('created_at', 32).notNullable();
    t.string('last_used_at', 32).notNullable();
    t.unique(['org_id', 'request_hash', 'server', 'tool']);
    t.index(['org_id', 'last_used_at']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('discovery_usage');
}
