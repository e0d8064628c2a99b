/**
 * What a trigger call needs, in one indexed read: the trigger and its workflow's current
 * version (the definition itself comes from the engine's immutable version cache).
 */
import type { Knex } from 'knex';
import { fromJson } from '../storage/db.js';
import { loadVersion, type PinnedVersion } from '../engine/index.js';
import type { DesignatedOutput, TriggerKind } from './triggers.js';

export interface CallTarget extends PinnedVersion {
  triggerId: string;
  kind: TriggerKind;
  enabled: boolean;
  designatedOutput: DesignatedOutput | null;
  automationId: string;
  version: number;
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
