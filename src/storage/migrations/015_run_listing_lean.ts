import type { Knex } from 'knex';

/**
 * The runs listing's indexes without a cost to accepting a run. A trigger call inserts a
 * PENDING run, so every index holding PENDING rows is paid on the busiest write path
 * (bench/triggers.ts). The listing (src/runs/list.ts) now reads:
 *
 * - `(org_id, status, id)` for every page: a status filter walks it directly, and the
 *   unfiltered list merges one walk per status. It takes the place of `(org_id, id)`, so a new
 *   run still writes the same number of index entries as before the listing existed.
 * - `(org_id, workflow_id, id)` and `(org_id, trigger_id, id)` only for finished runs (partial
 *   indexes): a run enters them once, when it finishes; neither the trigger call nor the claim
 *   writes them. A workflow or trigger filter merges them with the organisation's PENDING and
 *   RUNNING runs read from the status index.
 */
const FINISHED_SQL = "status in ('COMPLETE', 'FAILED', 'TIMEOUT')";
/** A literal, not a bound value: the listing's queries carry the same term, which is how sqlite matches a partial index. */
const FINISHED = (db: Knex) => db.queryBuilder().whereRaw(FINISHED_SQL);

export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('runs', (t) => {
    t.dropIndex(['org_id', 'workflow_id', 'id'], 'runs_org_workflow_id');
    t.dropIndex(['org_id', 'trigger_id', 'id'], 'runs_org_trigger_id');
    t.dropIndex(['org_id', 'id']);
  });
  await db.schema.alterTable('runs', (t) => {
    t.index(['org_id', 'workflow_id', 'id'], 'runs_org_workflow_finished', { predicate: FINISHED(db) });
    t.index(['org_id', 'trigger_id', 'id'], 'runs_org_trigger_finished', { predicate: FINISHED(db) });
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('runs', (t) => {
    t.dropIndex(['org_id', 'workflow_id', 'id'], 'runs_org_workflow_finished');
    t.dropIndex(['org_id', 'trigger_id', 'id'], 'runs_org_trigger_finished');
  });
  await db.schema.alterTable('runs', (t) => {
    t.index(['org_id', 'id']);
    t.index(['org_id', 'workflow_id', 'id'], 'runs_org_workflow_id');
    t.index(['org_id', 'trigger_id', 'id'], 'runs_org_trigger_id');
  });
}
