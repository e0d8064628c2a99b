import type { Knex } from 'knex';

/**
 * Embeddings of discovery texts (src/servers/sidekick/README.md "Semantic ranking"):
 * one row per scope, model and SHA-256 of the embedded text, so a text is embedded once and an
 * edited tool only once more. `scope` is the organisation's id, or `*` for the service's own
 * texts (built-in tools and skills), which are the same for every organisation. `vector` holds
 * the unit vector as little-endian float32.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('discovery_embeddings', (t) => {
    t.string('scope', 64).notNullable();
    t.string('model', 200).notNullable();
    t.string('content_hash', 64).notNullable();
    t.integer('dims').notNullable();
    t.binary('vector').notNullable();
    t.string('created_at', 32).notNullable();
    t.primary(['scope', 'model', 'content_hash']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('discovery_embeddings');
}
