import type { Knex } from 'knex';

/**
 * The operator's action cache (spec section 12 `cacheKey`, `disableCache`, `cacheDurationDays`;
 * src/browser/operator/README.md): one entry per organisation, `cacheKey` and task hash (SHA-256
 * of the task text and its start URL). `entry_enc` holds the resolved actions — element
 * locators, typed text, the result — encrypted with the service's key, since typed text can be
 * a password. An entry is served until `expires_at`, rewritten by a heal or a new live run.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('browser_action_cache', (t) => {
    t.string('org_id', 64).notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('cache_key', 16).notNullable();
    t.string('task_hash', 64).notNullable();
    t.text('entry_enc').notNullable();
    t.integer('steps').notNullable();
    t.integer('hits').notNullable().defaultTo(0);
    t.string('created_at', 32).notNullable();
    t.string('updated_at', 32).notNullable();
    t.string('expires_at', 32).notNullable();
    t.primary(['org_id', 'cache_key', 'task_hash']);
    t.index(['expires_at']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('browser_action_cache');
}
