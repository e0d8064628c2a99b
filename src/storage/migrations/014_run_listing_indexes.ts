import type { Knex } from 'knex';

/**
 * The runs listing (GET /v1/runs, src/runs/list.ts) walks an organisation's runs newest first by
 * id. Filtered by a workflow, a trigger or a status that few of its runs have, the walk over
 * `(org_id, id)` reads every run of the organisation to fill a page: hundreds of milliseconds on
 * sqlite over 100,000 runs (bench/console-runs.ts). Each of these indexes serves one filter in
 * the listing's order, so a page reads about as many index entries as it returns. Workflow and
 * trigger never change after the insert; the status index is rewritten on each state change,
 * as `(status, created_at)` already is.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('runs', (t) => {
    t.index(['org_id', 'workflow_id', 'id'], 'runs_org_workflow_id');
    t.index(['org_id', 'trigger_id', 'id'], 'runs_org_trigger_id');
    t.index(['org_id', 'status', 'id'], 'runs_org_status_id');
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('runs', (t) => {
    t.dropIndex(['org_id', 'workflow_id', 'id'], 'runs_org_workflow_id');
    t.dropIndex(['org_id', 'trigger_id', 'id'], 'runs_org_trigger_id');
    t.dropIndex(['org_id', 'status', 'id'], 'runs_org_status_id');
  });
}
