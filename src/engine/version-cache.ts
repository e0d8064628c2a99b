/**
 * The pinned definition of one workflow version. Versions are immutable, so they are
 * memoised per process by (workflow id, version): an update publishes a new version and is
 * seen by the next call; runs read the version they pinned.
 */
import type { Knex } from 'knex';
import { fromJson } from '../storage/db.js';
import type { WorkflowDefinition } from './definition.js';

export interface PinnedVersion {
  definition: WorkflowDefinition;
  stepMap: Record<string, number>;
}

const versions = new Map<string, PinnedVersion>();
const MAX_VERSIONS = 5_000;

export async function loadVersion(db: Knex, automationId: string, version: number): Promise<PinnedVersion | undefined> {
  const key = `${automationId}@${version}`;
  const hit = versions.get(key);
  if (hit) return hit;
  const row = (await db('workflow_versions')
    .where({ workflow_id: automationId, version })
    .first('definition', 'step_map')) as { definition: string; step_map: string } | undefined;
  if (!row) return undefined;
  const pinned = {
    definition: fromJson<WorkflowDefinition>(row.definition)!,
    stepMap: fromJson<Record<string, number>>(row.step_map) ?? {},
  };
  if (versions.size >= MAX_VERSIONS) versions.delete(versions.keys().next().value as string);
  versions.set(key, pinned);
  return pinned;
}
