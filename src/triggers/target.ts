/**
 * What a trigger call needs, in one indexed read: the trigger and its workflow's current
 * version. Workflow versions are immutable, so their definitions are memoised per process by
 * (workflow id, version): an update publishes a new version and is seen by the next call.
 */
import type { Knex } from 'knex';
import { fromJson } from '../storage/db.js';
import type { WorkflowDefinition } from '../engine/definition.js';
import type { DesignatedOutput, TriggerKind } from './triggers.js';

export interface CallTarget {
  triggerId: string;
  kind: TriggerKind;
  enabled: boolean;
  designatedOutput: DesignatedOutput | null;
  automationId: string;
  version: number;
  definition: WorkflowDefinition;
  stepMap: Record<string, number>;
}

interface PinnedVersion { definition: WorkflowDefinition; stepMap: Record<string, number> }

const versions = new Map<string, PinnedVersion>();
const MAX_VERSIONS = 5_000;

/** The pinned definition of one workflow version (immutable, so memoised). */
export async function loadVersion(db: Knex, automationId: string, version: number): Promise<PinnedVersion | undefined> {
  const key = `${automationId}@${version}`;
  const hit = versions.get(key);
  if (hit) return hit;
  const row = (await db('workflow_versions').where({ workflow_id: automationId, version }).first('definition', 'step_map')) as { definition: string; step_map: string } | undefined;
  if (!row) return undefined;
  const pinned = { definition: fromJson<WorkflowDefinition>(row.definition)!, stepMap: fromJson<Record<string, number>>(row.step_map) ?? {} };
  if (versions.size >= MAX_VERSIONS) versions.delete(versions.keys().next().value as string);
  versions.set(key, pinned);
  return pinned;
}

export async function loadCallTarget(db: Knex, orgId: string, triggerId: string): Promise<CallTarget | undefined> {
  const row = (await db('triggers as t')
    .join('workflows as w', 'w.id', 't.workflow_id')
    .where({ 't.id': triggerId, 't.org_id': orgId })
    .first('t.id', 't.kind', 't.enabled', 't.designated_output', 't.workflow_id', 'w.version')) as
    | { id: string; kind: TriggerKind; enabled: boolean | number; designated_output: string | null; workflow_id: string; version: number | string }
    | undefined;
  if (!row) return undefined;
  const pinned = await loadVersion(db, row.workflow_id, Number(row.version));
  if (!pinned) return undefined;
  return {
    triggerId: row.id,
    kind: row.kind,
    enabled: Boolean(row.enabled),
    designatedOutput: fromJson<DesignatedOutput>(row.designated_output),
    automationId: row.workflow_id,
    version: Number(row.version),
    ...pinned,
  };
}
