/**
 * Trigger records (management part; spec "Trigger", endpoints 1 and 2). A trigger runs one
 * workflow; its kind selects the URL form: `api` (key in X-API-KEY) or `webhook` (key as a
 * path segment). Keys are never stored with a trigger: any API key of the organisation works.
 */
import type { Knex } from 'knex';
import { findWorkflow } from '../engine/index.js';
import { AppError } from '../errors/index.js';
import { fromJson, toJson } from '../storage/db.js';
import { newId, nowIso } from '../kernel/ids.js';
import { pageRows, type Page, type PageRequest } from '../kernel/page.js';
import { failedPrecondition } from '../storage/versioned.js';
import { tableChanged } from '../storage/changes.js';

export type TriggerKind = 'api' | 'webhook';
export const TRIGGER_KINDS: readonly TriggerKind[] = ['api', 'webhook'];

export interface DesignatedOutput {
  /** 0-based index of a step of the workflow's current version. */
  stepIndex: number;
  fileName: string;
}

export interface TriggerRecord {
  triggerId: string;
  automationId: string;
  kind: TriggerKind;
  name: string;
  enabled: boolean;
  designatedOutput: DesignatedOutput | null;
  version: number;
  createdAt: string;
  updatedAt: string;
}

export interface TriggerCreate {
  automationId: string;
  kind: TriggerKind;
  name?: string | undefined;
  enabled?: boolean | undefined;
  designatedOutput?: DesignatedOutput | null | undefined;
}

export interface TriggerPatch {
  name?: string | undefined;
  enabled?: boolean | undefined;
  designatedOutput?: DesignatedOutput | null | undefined;
}

export interface TriggerFilter {
  automationId?: string | undefined;
  kind?: TriggerKind | undefined;
}

interface TriggerRow {
  id: string;
  workflow_id: string;
  kind: TriggerKind;
  name: string;
  enabled: boolean | number;
  designated_output: string | null;
  version: number | string;
  created_at: string;
  updated_at: string;
}

function toRecord(r: TriggerRow): TriggerRecord {
  return {
    triggerId: r.id,
    automationId: r.workflow_id,
    kind: r.kind,
    name: r.name,
    enabled: Boolean(r.enabled),
    designatedOutput: fromJson<DesignatedOutput>(r.designated_output),
    version: Number(r.version),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/**
 * Workflow triggers of the organisation. The table allows rows without a workflow; they are
 * not managed here.
 */
function scoped(db: Knex, orgId: string): Knex.QueryBuilder {
  return db('triggers').where('org_id', orgId).whereNotNull('workflow_id');
}

const invalid = (message: string, details?: unknown) => new AppError('ERR_REQUEST_INVALID', { message, details });

/** designatedOutput.stepIndex must name a step of the workflow's current version (400). */
async function checkDesignatedOutput(
  db: Knex,
  orgId: string,
  automationId: string,
  out: DesignatedOutput,
): Promise<void> {
  const wf = await findWorkflow(db, orgId, automationId);
  if (!wf) throw new AppError('ERR_NOT_FOUND', { message: 'Workflow not found' });
  const steps = wf.definition.steps.length;
  if (!Number.isInteger(out.stepIndex) || out.stepIndex < 0 || out.stepIndex >= steps) {
    throw invalid(`designatedOutput.stepIndex must name a step of workflow version ${wf.version} (0 to ${steps - 1})`, {
      field: 'designatedOutput.stepIndex',
      stepCount: steps,
      automationVersion: wf.version,
    });
  }
  if (typeof out.fileName !== 'string' || out.fileName.length < 1 || out.fileName.length > 255) {
    throw invalid('designatedOutput.fileName must be 1 to 255 characters', { field: 'designatedOutput.fileName' });
  }
}

function checkName(name: unknown): void {
  if (typeof name !== 'string' || name.trim().length < 1 || name.length > 200) {
    throw invalid('name must be 1 to 200 characters', { field: 'name' });
  }
}

export async function createTrigger(db: Knex, orgId: string, input: TriggerCreate): Promise<TriggerRecord> {
  if (!TRIGGER_KINDS.includes(input.kind)) throw invalid('kind must be api or webhook', { field: 'kind' });
  const wf = await findWorkflow(db, orgId, input.automationId);
  if (!wf) throw new AppError('ERR_NOT_FOUND', { message: 'Workflow not found' });
  if (input.name !== undefined) checkName(input.name);
  if (input.designatedOutput) await checkDesignatedOutput(db, orgId, input.automationId, input.designatedOutput);
  const now = nowIso();
  const id = newId('trg');
  await db('triggers').insert({
    id,
    org_id: orgId,
    workflow_id: input.automationId,
    kind: input.kind,
    name: input.name ?? (input.kind === 'api' ? 'API trigger' : 'Webhook trigger'),
    enabled: input.enabled ?? true,
    designated_output: toJson(input.designatedOutput ?? null),
    version: 1,
    created_at: now,
    updated_at: now,
  });
  tableChanged(db, 'triggers', orgId);
  return getTrigger(db, orgId, id);
}

export async function findTrigger(db: Knex, orgId: string, triggerId: string): Promise<TriggerRecord | undefined> {
  const row = (await scoped(db, orgId).andWhere('id', triggerId).first()) as TriggerRow | undefined;
  return row ? toRecord(row) : undefined;
}

export async function getTrigger(db: Knex, orgId: string, triggerId: string): Promise<TriggerRecord> {
  const t = await findTrigger(db, orgId, triggerId);
  if (!t) throw new AppError('ERR_NOT_FOUND', { message: 'Trigger not found' });
  return t;
}

export async function listTriggers(
  db: Knex,
  orgId: string,
  filter: TriggerFilter = {},
  page: PageRequest = {},
): Promise<Page<TriggerRecord>> {
  const q = scoped(db, orgId).select('*');
  if (filter.automationId !== undefined) q.andWhere('workflow_id', filter.automationId);
  if (filter.kind !== undefined) q.andWhere('kind', filter.kind);
  const { rows, nextCursor } = await pageRows<TriggerRow & Record<string, unknown>>(
    q,
    { list: 'triggers', column: 'id' },
    page,
  );
  return { items: rows.map(toRecord), nextCursor };
}

/** Conditional on the expected version (optimistic lock): stale → 412, absent → 404. */
export async function updateTrigger(
  db: Knex,
  orgId: string,
  triggerId: string,
  { expectedVersion, patch }: { expectedVersion: number; patch: TriggerPatch },
): Promise<TriggerRecord> {
  const set: Record<string, unknown> = {};
  if (patch.name !== undefined) {
    checkName(patch.name);
    set.name = patch.name;
  }
  if (patch.enabled !== undefined) set.enabled = Boolean(patch.enabled);
  if (patch.designatedOutput !== undefined) set.designated_output = toJson(patch.designatedOutput);
  if (Object.keys(set).length === 0) throw invalid('Nothing to update: send name, enabled or designatedOutput');
  const existing = await getTrigger(db, orgId, triggerId);
  if (patch.designatedOutput) await checkDesignatedOutput(db, orgId, existing.automationId, patch.designatedOutput);
  const updated = await scoped(db, orgId)
    .andWhere({ id: triggerId, version: expectedVersion })
    .update({ ...set, version: expectedVersion + 1, updated_at: nowIso() });
  if (updated !== 1) await failedPrecondition(db, 'triggers', { orgId, id: triggerId, what: 'Trigger' });
  tableChanged(db, 'triggers', orgId);
  return getTrigger(db, orgId, triggerId);
}

export async function deleteTrigger(
  db: Knex,
  orgId: string,
  triggerId: string,
  expectedVersion?: number,
): Promise<void> {
  const where: Record<string, unknown> = { id: triggerId };
  if (expectedVersion !== undefined) where.version = expectedVersion;
  const deleted = await scoped(db, orgId).andWhere(where).delete();
  if (deleted !== 1) await failedPrecondition(db, 'triggers', { orgId, id: triggerId, what: 'Trigger' });
  tableChanged(db, 'triggers', orgId);
}

/**
 * Whether an enabled trigger of the organisation needs a trigger API key: the guard of
 * `revokeApiKey` (auth), which the composition hands it, since auth does not read this table.
 */
export async function hasEnabledTriggers(db: Knex, orgId: string): Promise<boolean> {
  return Boolean(await db('triggers').where({ org_id: orgId, enabled: true }).first('id'));
}
