/**
 * Published versions of a workflow (spec "Versioning": automationVersion, stepMap). Versions
 * are immutable; they are reached only through a workflow of the caller's organisation.
 */
import type { Knex } from 'knex';
import { AppError } from '../errors/index.js';
import { fromJson } from '../storage/db.js';
import { pageRows, type Page, type PageRequest } from '../kernel/page.js';
import type { WorkflowDefinition } from './definition.js';

export interface WorkflowVersion {
  automationId: string;
  version: number;
  name: string;
  stepMap: Record<string, number>;
  definition: WorkflowDefinition;
  createdAt: string;
}

interface VersionRow {
  workflow_id: string;
  version: number | string;
  definition: string;
  step_map: string;
  created_at: string;
}

function toView(r: VersionRow): WorkflowVersion {
  const definition = fromJson<WorkflowDefinition>(r.definition)!;
  return {
    automationId: r.workflow_id,
    version: Number(r.version),
    name: definition.name,
    stepMap: fromJson<Record<string, number>>(r.step_map) ?? {},
    definition,
    createdAt: r.created_at,
  };
}

/** Versions joined to the owning workflow so the organisation scope applies. */
function versionsOf(db: Knex, orgId: string, automationId: string): Knex.QueryBuilder {
  return db('workflow_versions as v')
    .join('workflows as w', 'w.id', 'v.workflow_id')
    .where({ 'w.org_id': orgId, 'v.workflow_id': automationId })
    .select('v.workflow_id', 'v.version', 'v.definition', 'v.step_map', 'v.created_at');
}

async function assertWorkflow(db: Knex, orgId: string, automationId: string): Promise<void> {
  const row = await db('workflows').where({ id: automationId, org_id: orgId }).first('id');
  if (!row) throw new AppError('ERR_NOT_FOUND', { message: 'Workflow not found' });
}

export async function listWorkflowVersions(
  db: Knex,
  orgId: string,
  automationId: string,
  page: PageRequest = {},
): Promise<Page<WorkflowVersion>> {
  await assertWorkflow(db, orgId, automationId);
  const { rows, nextCursor } = await pageRows<VersionRow & Record<string, unknown>>(
    versionsOf(db, orgId, automationId),
    // The page is already scoped by the path's automation: the cursor holds only a version number.
    { list: 'workflow-versions', column: 'v.version', keyType: 'number' },
    page,
  );
  return { items: rows.map(toView), nextCursor };
}

export async function getWorkflowVersion(
  db: Knex,
  orgId: string,
  automationId: string,
  version: number,
): Promise<WorkflowVersion> {
  const row = Number.isSafeInteger(version)
    ? ((await versionsOf(db, orgId, automationId).andWhere('v.version', version).first()) as VersionRow | undefined)
    : undefined;
  if (!row) {
    await assertWorkflow(db, orgId, automationId);
    throw new AppError('ERR_NOT_FOUND', { message: 'Workflow version not found' });
  }
  return toView(row);
}
