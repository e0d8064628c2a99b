/**
 * Workflow records (the spec's "automation"; automationId = workflow id). Every version is
 * kept in workflow_versions with its definition and stepMap (spec "Versioning"); the
 * workflows row holds the current version. All queries are scoped by organisation.
 */
import type { Knex } from 'knex';
import { AppError } from '../errors/index.js';
import { fromJson, toJson } from '../storage/db.js';
import { newId, nowIso } from '../kernel/ids.js';
import { pageRows, type Page, type PageRequest } from '../kernel/page.js';
import { nextStepMap, validateDefinition, type WorkflowDefinition } from './definition.js';
import { failedPrecondition } from '../storage/versioned.js';
import { tableChanged } from '../storage/changes.js';

export interface Workflow {
  automationId: string;
  name: string;
  description: string | null;
  version: number;
  stepMap: Record<string, number>;
  definition: WorkflowDefinition;
  createdAt: string;
  updatedAt: string;
}

interface JoinedRow {
  id: string;
  name: string;
  description: string | null;
  version: number | string;
  definition: string;
  step_map: string;
  created_at: string;
  updated_at: string;
}

const COLUMNS = [
  'w.id',
  'w.name',
  'w.description',
  'w.version',
  'w.created_at',
  'w.updated_at',
  'v.definition',
  'v.step_map',
];

function toView(r: JoinedRow): Workflow {
  return {
    automationId: r.id,
    name: r.name,
    description: r.description ?? null,
    version: Number(r.version),
    stepMap: fromJson<Record<string, number>>(r.step_map) ?? {},
    definition: fromJson<WorkflowDefinition>(r.definition)!,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** Workflows of the organisation joined with their current version. */
function current(db: Knex, orgId: string): Knex.QueryBuilder {
  return db('workflows as w')
    .join('workflow_versions as v', function joinCurrent() {
      this.on('v.workflow_id', '=', 'w.id').andOn('v.version', '=', 'w.version');
    })
    .where('w.org_id', orgId)
    .select(COLUMNS);
}

export async function createWorkflow(db: Knex, orgId: string, input: unknown): Promise<Workflow> {
  const definition = validateDefinition(input);
  const id = newId('wf');
  const now = nowIso();
  const stepMap = nextStepMap(undefined, definition);
  await db.transaction(async (trx) => {
    await trx('workflows').insert({
      id,
      org_id: orgId,
      name: definition.name,
      description: definition.description ?? null,
      version: 1,
      created_at: now,
      updated_at: now,
    });
    await trx('workflow_versions').insert({
      workflow_id: id,
      version: 1,
      definition: toJson(definition),
      step_map: toJson(stepMap),
      created_at: now,
    });
  });
  return getWorkflow(db, orgId, id);
}

export async function findWorkflow(db: Knex, orgId: string, automationId: string): Promise<Workflow | undefined> {
  const row = (await current(db, orgId).andWhere('w.id', automationId).first()) as JoinedRow | undefined;
  return row ? toView(row) : undefined;
}

/** The workflow's current version number (trigger call targets), or undefined when it is gone. */
export async function currentWorkflowVersion(
  db: Knex,
  orgId: string,
  automationId: string,
): Promise<number | undefined> {
  const row = (await db('workflows').where({ id: automationId, org_id: orgId }).first('version')) as
    { version: number | string } | undefined;
  return row ? Number(row.version) : undefined;
}

export async function getWorkflow(db: Knex, orgId: string, automationId: string): Promise<Workflow> {
  const wf = await findWorkflow(db, orgId, automationId);
  if (!wf) throw new AppError('ERR_NOT_FOUND', { message: 'Workflow not found' });
  return wf;
}

export async function listWorkflows(db: Knex, orgId: string, page: PageRequest = {}): Promise<Page<Workflow>> {
  const { rows, nextCursor } = await pageRows<JoinedRow & Record<string, unknown>>(
    current(db, orgId),
    { list: 'workflows', column: 'w.id' },
    page,
  );
  return { items: rows.map(toView), nextCursor };
}

/**
 * Publishes a new version of the workflow. The version bump is conditional on the expected
 * version (optimistic lock, no read-then-write race) and happens in the same transaction as
 * the insert of the new workflow_versions row.
 */
export async function updateWorkflow(
  db: Knex,
  orgId: string,
  automationId: string,
  { expectedVersion, input }: { expectedVersion: number; input: unknown },
): Promise<Workflow> {
  const definition = validateDefinition(input);
  const now = nowIso();
  await db.transaction(async (trx) => {
    const bumped = await trx('workflows')
      .where({ id: automationId, org_id: orgId, version: expectedVersion })
      .update({
        version: expectedVersion + 1,
        name: definition.name,
        description: definition.description ?? null,
        updated_at: now,
      });
    if (bumped !== 1) await failedPrecondition(trx, 'workflows', { orgId, id: automationId, what: 'Workflow' });
    const prev = (await trx('workflow_versions')
      .where({ workflow_id: automationId, version: expectedVersion })
      .first('definition', 'step_map')) as { definition: string; step_map: string } | undefined;
    const previous = prev
      ? {
          definition: fromJson<WorkflowDefinition>(prev.definition)!,
          stepMap: fromJson<Record<string, number>>(prev.step_map) ?? {},
        }
      : undefined;
    await trx('workflow_versions').insert({
      workflow_id: automationId,
      version: expectedVersion + 1,
      definition: toJson(definition),
      step_map: toJson(nextStepMap(previous, definition)),
      created_at: now,
    });
  });
  tableChanged(db, 'workflows', orgId);
  return getWorkflow(db, orgId, automationId);
}

/**
 * Deletes the workflow and all its versions in one transaction. Its triggers go with it by the
 * foreign key `triggers.workflow_id → workflows.id ON DELETE CASCADE` (migration 001; sqlite
 * enforces it with `PRAGMA foreign_keys = ON`, src/storage/db.ts): the engine, below triggers,
 * never names their table. With `expectedVersion` the delete is conditional like an update.
 */
export async function deleteWorkflow(
  db: Knex,
  orgId: string,
  automationId: string,
  expectedVersion?: number,
): Promise<void> {
  await db.transaction(async (trx) => {
    const where: Record<string, unknown> = { id: automationId, org_id: orgId };
    if (expectedVersion !== undefined) where.version = expectedVersion;
    const owned = await trx('workflows').where(where).first('id');
    if (!owned) await failedPrecondition(trx, 'workflows', { orgId, id: automationId, what: 'Workflow' });
    await trx('workflow_versions').where({ workflow_id: automationId }).delete();
    const deleted = await trx('workflows').where(where).delete();
    if (deleted !== 1) await failedPrecondition(trx, 'workflows', { orgId, id: automationId, what: 'Workflow' });
  });
  tableChanged(db, 'workflows', orgId);
}
