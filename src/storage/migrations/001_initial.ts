import type { Knex } from 'knex';

/**
 * The base schema: organisations, credentials, signing keys, API keys,
 * workflows and versions, triggers, runs and steps, files, connections, application servers.
 * Timestamps are ISO 8601 UTC strings (sortable, identical on sqlite and PostgreSQL); JSON
 * columns are text. Every org-owned table carries org_id and is always queried with it.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('organizations', (t) => {
    t.string('id', 64).primary();
    t.string('name', 200).notNullable();
    t.string('created_at', 32).notNullable();
  });

  await db.schema.createTable('credentials', (t) => {
    t.string('id', 64).primary();
    t.string('org_id', 64).notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('client_id', 64).notNullable().unique();
    t.string('secret_hash', 128).notNullable().unique();
    t.string('label', 200).notNullable();
    t.string('created_at', 32).notNullable();
    t.string('revoked_at', 32);
    t.string('last_used_at', 32);
    t.index(['org_id', 'id']);
  });

  await db.schema.createTable('signing_keys', (t) => {
    t.string('kid', 64).primary();
    t.string('alg', 16).notNullable();
    t.text('public_jwk').notNullable();
    t.text('private_jwk_enc').notNullable();
    t.string('created_at', 32).notNullable();
    // After retired_at the key no longer signs; it stays in the JWKS until expires_at.
    t.string('retired_at', 32);
    t.string('expires_at', 32);
  });

  await db.schema.createTable('api_keys', (t) => {
    t.string('id', 64).primary();
    t.string('org_id', 64).notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('label', 200).notNullable();
    t.string('secret_hash', 128).notNullable().unique();
    t.string('hint', 16).notNullable();
    t.string('created_at', 32).notNullable();
    t.string('revoked_at', 32);
    t.string('last_used_at', 32);
    t.index(['org_id', 'id']);
  });

  await db.schema.createTable('workflows', (t) => {
    t.string('id', 64).primary();
    t.string('org_id', 64).notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('name', 200).notNullable();
    t.text('description');
    t.integer('version').notNullable();
    t.string('created_at', 32).notNullable();
    t.string('updated_at', 32).notNullable();
    t.index(['org_id', 'id']);
  });

  await db.schema.createTable('workflow_versions', (t) => {
    t.string('workflow_id', 64).notNullable().references('workflows.id').onDelete('CASCADE');
    t.integer('version').notNullable();
    t.text('definition').notNullable();
    // JSON map step index -> step version (spec "stepMap").
    t.text('step_map').notNullable();
    t.string('created_at', 32).notNullable();
    t.primary(['workflow_id', 'version']);
  });

  await db.schema.createTable('triggers', (t) => {
    t.string('id', 64).primary();
    t.string('org_id', 64).notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('workflow_id', 64).references('workflows.id').onDelete('CASCADE');
    t.string('kind', 16).notNullable(); // api | webhook
    t.string('name', 200).notNullable();
    t.boolean('enabled').notNullable().defaultTo(true);
    t.text('designated_output'); // JSON {stepIndex, fileName}
    t.integer('version').notNullable().defaultTo(1);
    t.string('created_at', 32).notNullable();
    t.string('updated_at', 32).notNullable();
    t.index(['org_id', 'id']);
    t.index(['workflow_id']);
  });

  await db.schema.createTable('runs', (t) => {
    t.string('id', 64).primary();
    t.string('org_id', 64).notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('workflow_id', 64).notNullable();
    t.integer('workflow_version').notNullable();
    t.string('trigger_id', 64);
    t.string('status', 16).notNullable();
    t.text('inputs');
    t.string('started_by', 200);
    t.string('idempotency_key', 255);
    t.text('error');
    t.string('created_at', 32).notNullable();
    t.string('started_at', 32);
    t.string('finished_at', 32);
    t.index(['org_id', 'id']);
    t.index(['status']);
    t.index(['trigger_id', 'idempotency_key']);
  });

  await db.schema.createTable('run_steps', (t) => {
    t.string('run_id', 64).notNullable().references('runs.id').onDelete('CASCADE');
    t.integer('step_index').notNullable();
    t.integer('step_version').notNullable();
    t.string('name', 200).notNullable();
    t.string('status', 16).notNullable();
    t.integer('execution_order');
    t.string('result_type', 16);
    t.text('result');
    t.integer('exit_code');
    t.integer('duration_ms');
    t.string('started_at', 32);
    t.string('finished_at', 32);
    t.primary(['run_id', 'step_index']);
  });

  await db.schema.createTable('files', (t) => {
    t.string('id', 64).primary();
    t.string('org_id', 64).notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('run_id', 64);
    t.integer('step_index');
    t.string('kind', 16).notNullable(); // attachment | step | upload
    t.string('filename', 255).notNullable();
    t.string('mime_type', 255).notNullable();
    t.bigInteger('size').notNullable();
    t.string('blob_key', 255).notNullable();
    t.string('created_at', 32).notNullable();
    t.string('expires_at', 32);
    t.index(['org_id', 'id']);
    t.index(['run_id']);
  });

  await db.schema.createTable('connections', (t) => {
    t.string('id', 64).primary(); // the PCID
    t.string('org_id', 64).notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('name', 200).notNullable();
    t.string('service_key', 100).notNullable();
    t.string('status', 16).notNullable();
    t.text('secret_enc'); // AES-256-GCM, never returned
    t.text('metadata');
    t.integer('version').notNullable().defaultTo(1);
    t.string('created_at', 32).notNullable();
    t.string('updated_at', 32).notNullable();
    t.index(['org_id', 'id']);
    t.index(['org_id', 'service_key']);
  });

  await db.schema.createTable('app_servers', (t) => {
    t.string('id', 64).primary();
    t.string('org_id', 64).notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('path', 100).notNullable();
    t.string('name', 200).notNullable();
    t.text('description');
    t.string('service_key', 100).notNullable();
    t.string('parent_path', 100);
    t.text('upstream').notNullable(); // JSON
    t.text('auth').notNullable(); // JSON: how the connection secret reaches the upstream
    t.integer('version').notNullable().defaultTo(1);
    t.string('created_at', 32).notNullable();
    t.string('updated_at', 32).notNullable();
    t.unique(['org_id', 'path']);
    t.index(['org_id', 'id']);
  });
}

export async function down(db: Knex): Promise<void> {
  for (const table of [
    'app_servers',
    'connections',
    'files',
    'run_steps',
    'runs',
    'triggers',
    'workflow_versions',
    'workflows',
    'api_keys',
    'signing_keys',
    'credentials',
    'organizations',
  ]) {
    await db.schema.dropTableIfExists(table);
  }
}
