import type { Knex } from 'knex';

/**
 * Browser tasks (spec section 12, browser task states; src/browser/README.md): one row per
 * `playwright_run` or `operator_run`, so a poll answered by any process of the installation
 * sees the task. The process running a task renews `heartbeat_at`; a RUNNING task whose
 * heartbeat is older than the stale limit, or whose deadline has passed, is failed by the next
 * poll or sweep, never left RUNNING. `files` is the JSON list of saved files (file ids in the
 * collection, names, types, sizes, sources); `log` the task log as text.
 *
 * browser_logins: saved login contexts (spec "Browser task files"; openapi/management.yaml
 * Browser logins): the Playwright storage state encrypted with the service's key
 * (`state_enc`), and the latest cookie expiry it holds (`expires_at`, null when a cookie never
 * expires), from which `status` is told without decrypting.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('browser_tasks', (t) => {
    t.string('id', 64).primary();
    t.string('org_id', 64).notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('kind', 16).notNullable();
    t.string('status', 16).notNullable();
    t.string('build_id', 200).notNullable();
    t.string('collection_id', 64).notNullable();
    t.string('log_file_name', 255).notNullable();
    t.text('message').notNullable();
    t.text('result');
    t.text('files').notNullable();
    t.text('log').notNullable();
    t.string('heartbeat_at', 32).notNullable();
    t.string('deadline_at', 32).notNullable();
    t.string('created_at', 32).notNullable();
    t.string('finished_at', 32);
    t.index(['org_id', 'id']);
    t.index(['status', 'heartbeat_at']);
  });
  await db.schema.createTable('browser_logins', (t) => {
    t.string('id', 64).primary();
    t.string('org_id', 64).notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('label', 200).notNullable();
    t.string('service', 200).notNullable();
    t.text('login_url').notNullable();
    t.text('state_enc').notNullable();
    t.string('expires_at', 32);
    t.string('created_at', 32).notNullable();
    t.index(['org_id', 'id']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('browser_logins');
  await db.schema.dropTableIfExists('browser_tasks');
}
