import type { Knex } from 'knex';

/**
 * Collections and their event triggers (spec section 14, "Trigger URL entry", "Events"):
 * - collections: datastores (structured, unstructured), filestores, knowledge bases, vaults;
 *   `trigger_urls` is the collection-level list (JSON, each apiKey encrypted).
 * - collection_items: items of datastores and vaults (`content` JSON; a vault's is encrypted)
 *   and files of filestores and knowledge bases (`file_id` names the `files` row, kind
 *   `collection`); `trigger_urls` is the item- or file-level list.
 * - event_outbox: one row per event call, written in the transaction of the change that
 *   caused it (the transactional outbox), then delivered and kept as the delivery log:
 *   status pending → sent | failed, or dropped at once by the onEdit window.
 * The store-backed onEdit window (2 per rolling 60 s per item or file) is `edit_hits` on the
 * item row (JSON epoch-ms admission times): the edit's own transaction holds that row, so the
 * window is atomic across processes at no extra statement. Redis sorted sets replace it when
 * REDIS_URL is set.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('collections', (t) => {
    t.string('id', 64).primary();
    t.string('org_id', 64).notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('name', 200).notNullable();
    t.text('description').notNullable();
    t.string('type', 32).notNullable();
    t.text('trigger_urls').notNullable(); // JSON [{event, url, apiKeyEnc, apiKeyLast4, triggerLevel}]
    t.integer('version').notNullable();
    t.string('created_at', 32).notNullable();
    t.string('updated_at', 32).notNullable();
    t.index(['org_id', 'id']);
  });

  await db.schema.createTable('collection_items', (t) => {
    t.string('id', 64).primary();
    t.string('collection_id', 64).notNullable().references('collections.id').onDelete('CASCADE');
    t.string('org_id', 64).notNullable();
    t.string('key', 255); // items only
    t.string('sort_field', 255);
    t.text('content'); // JSON, or the encrypted JSON of a vault item
    t.text('metadata').notNullable(); // JSON
    t.text('trigger_urls').notNullable(); // JSON, as on collections
    t.string('file_id', 64); // files only
    t.string('filename', 255);
    t.bigInteger('file_size');
    t.string('mime_type', 255);
    t.boolean('is_public').notNullable().defaultTo(false);
    t.text('edit_hits'); // JSON [epoch ms] of admitted onEdit events in the current window
    t.string('created_at', 32).notNullable();
    t.string('updated_at', 32).notNullable();
    t.unique(['collection_id', 'key']);
    t.index(['collection_id', 'id']);
  });

  await db.schema.createTable('event_outbox', (t) => {
    t.string('id', 64).primary(); // the payload's eventId
    t.string('org_id', 64).notNullable();
    t.string('collection_id', 64).notNullable();
    t.string('item_id', 64).notNullable();
    t.string('event', 16).notNullable();
    t.string('trigger_level', 16).notNullable();
    t.string('url', 2048).notNullable();
    t.text('api_key_enc').notNullable();
    t.text('payload').notNullable(); // JSON, secret-free (vault content is redacted)
    t.string('status', 16).notNullable(); // pending | sent | failed | dropped
    t.integer('http_status');
    t.integer('duration_ms');
    t.string('run_id', 64);
    t.text('error');
    t.integer('attempts').notNullable().defaultTo(0);
    t.string('claimed_until', 32);
    t.string('created_at', 32).notNullable();
    t.string('finished_at', 32);
    t.index(['status', 'id']);
    t.index(['collection_id', 'id']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('event_outbox');
  await db.schema.dropTableIfExists('collection_items');
  await db.schema.dropTableIfExists('collections');
}
