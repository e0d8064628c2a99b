import type { Knex } from 'knex';

/**
 * Queues and CSV batches (spec section 15, "Queue batch", batch states; openapi/queues.yaml):
 * - queues: a workflow trigger, a concurrency limit, a priority, retries and a paused flag;
 *   `dispatch_seq` is bumped by every dispatch pass, so the pass's transaction starts with a
 *   write that locks the queue row (PostgreSQL) or the database (sqlite) across processes.
 * - csv_uploads: one presigned upload (csvKey), bound to its queue and declared size; `batch_id`
 *   is set once a batch is made from it (a key makes one batch).
 * - queue_batches: the batch, its counters and the loader's resume point (`resume_offset`,
 *   `resume_row`: where the next chunk starts) with the loader's lease.
 * - queue_items: one row per good CSV record. The record's bytes stay in the stored upload:
 *   an item holds its byte range (`byte_start`, `byte_end`), not a copy of its payload, so a
 *   1 GiB file is not written into the store a second time.
 * - batch_row_errors: the skipped records (BatchRowError).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('queues', (t) => {
    t.string('id', 64).primary();
    t.string('org_id', 64).notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('name', 200).notNullable();
    t.text('description').notNullable();
    t.string('trigger_id', 64).notNullable();
    t.integer('concurrency_limit').notNullable();
    t.integer('priority').notNullable();
    t.integer('max_retries').notNullable();
    t.boolean('paused').notNullable().defaultTo(false);
    t.integer('version').notNullable();
    t.bigInteger('dispatch_seq').notNullable().defaultTo(0);
    t.string('created_at', 32).notNullable();
    t.string('updated_at', 32).notNullable();
    t.index(['org_id', 'id']);
  });

  await db.schema.createTable('csv_uploads', (t) => {
    t.string('csv_key', 64).primary();
    t.string('org_id', 64).notNullable();
    t.string('queue_id', 64).notNullable().references('queues.id').onDelete('CASCADE');
    t.string('filename', 255).notNullable();
    t.bigInteger('declared_size').notNullable();
    t.bigInteger('size_bytes');
    t.string('sha256', 64);
    t.string('blob_key', 255); // a fresh key per PUT, so a replaced file never changes under a batch
    t.string('expires_at', 32).notNullable();
    t.string('uploaded_at', 32);
    t.string('batch_id', 64);
    t.string('created_at', 32).notNullable();
    t.index(['queue_id']);
  });

  await db.schema.createTable('queue_batches', (t) => {
    t.string('id', 64).primary();
    t.string('org_id', 64).notNullable();
    t.string('queue_id', 64).notNullable().references('queues.id').onDelete('CASCADE');
    t.string('csv_key', 64).notNullable();
    t.string('trigger_id', 64).notNullable();
    t.string('filename', 255).notNullable();
    t.bigInteger('size_bytes').notNullable();
    t.string('sha256', 64).notNullable();
    t.string('blob_key', 255).notNullable();
    t.text('columns'); // JSON string[] once validated
    t.string('status', 16).notNullable();
    t.integer('total_rows');
    t.integer('loaded_rows').notNullable().defaultTo(0);
    t.integer('skipped_rows').notNullable().defaultTo(0);
    t.integer('runs_completed').notNullable().defaultTo(0);
    t.integer('runs_failed').notNullable().defaultTo(0);
    t.integer('runs_cancelled').notNullable().defaultTo(0);
    t.boolean('loaded').notNullable().defaultTo(false);
    t.bigInteger('resume_offset').notNullable().defaultTo(0);
    t.integer('resume_row').notNullable().defaultTo(2);
    t.string('loader_id', 128);
    t.string('lease_until', 32);
    t.text('failure_reason');
    t.string('created_at', 32).notNullable();
    t.string('updated_at', 32).notNullable();
    t.index(['queue_id', 'id']);
    t.index(['status']);
  });

  await db.schema.createTable('queue_items', (t) => {
    t.increments('seq');
    t.string('batch_id', 64).notNullable().references('queue_batches.id').onDelete('CASCADE');
    t.string('queue_id', 64).notNullable();
    t.integer('row_number').notNullable();
    t.bigInteger('byte_start').notNullable();
    t.bigInteger('byte_end').notNullable();
    t.string('status', 16).notNullable(); // queued | dispatched | completed | failed | cancelled
    t.string('run_id', 64);
    t.integer('attempts').notNullable().defaultTo(0);
    t.string('updated_at', 32);
    t.unique(['batch_id', 'row_number']);
    // Dispatch reads `status = queued AND queue_id = ? ORDER BY seq` and the few `dispatched` items.
    t.index(['status', 'queue_id', 'seq']);
    t.index(['run_id']);
  });

  await db.schema.createTable('batch_row_errors', (t) => {
    t.string('batch_id', 64).notNullable().references('queue_batches.id').onDelete('CASCADE');
    t.integer('row_number').notNullable();
    t.string('reason', 32).notNullable();
    t.text('message').notNullable();
    t.text('raw_excerpt').notNullable();
    t.primary(['batch_id', 'row_number']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('batch_row_errors');
  await db.schema.dropTableIfExists('queue_items');
  await db.schema.dropTableIfExists('queue_batches');
  await db.schema.dropTableIfExists('csv_uploads');
  await db.schema.dropTableIfExists('queues');
}
