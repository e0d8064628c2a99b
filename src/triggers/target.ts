/**
 * What a trigger call needs: the trigger, its workflow's current version (the engine's
 * `currentWorkflowVersion`) and that version's definition (the engine's immutable version
 * cache). Memoised per process, so a trigger call usually reads no record at all.
 */
import type { Knex } from 'knex';
import { fromJson } from '../storage/db.js';
import { TtlMemo } from '../kernel/ttl-memo.js';
import { currentWorkflowVersion, loadVersion, type PinnedVersion } from '../engine/index.js';
import { watchTables } from '../storage/changes.js';
import { hasEnabledTriggers, type DesignatedOutput, type TriggerKind } from './triggers.js';

export interface CallTarget extends PinnedVersion {
  triggerId: string;
  kind: TriggerKind;
  enabled: boolean;
  designatedOutput: DesignatedOutput | null;
  automationId: string;
  version: number;
}

export async function loadCallTarget(db: Knex, orgId: string, triggerId: string): Promise<CallTarget | undefined> {
  const row = (await db('triggers')
    .where({ id: triggerId, org_id: orgId })
    .first('id', 'kind', 'enabled', 'designated_output', 'workflow_id')) as
    | {
        id: string;
        kind: TriggerKind;
        enabled: boolean | number;
        designated_output: string | null;
        workflow_id: string;
      }
    | undefined;
  if (!row) return undefined;
  const version = await currentWorkflowVersion(db, orgId, row.workflow_id);
  if (version === undefined) return undefined;
  const pinned = await loadVersion(db, row.workflow_id, version);
  if (!pinned) return undefined;
  return {
    triggerId: row.id,
    kind: row.kind,
    enabled: Boolean(row.enabled),
    designatedOutput: fromJson<DesignatedOutput>(row.designated_output),
    automationId: row.workflow_id,
    version,
    ...pinned,
  };
}

/**
 * Per-process memo of call targets: a trigger call reads no record from the store. A change
 * to a trigger or a workflow made in this process through the owners' write functions
 * (`tableChanged`: triggers, engine) forgets the organisation's entries at once; other processes see a change (disable, delete, new version) within `ttlMs`
 * (REVOCATION_CACHE_MS, the bound already promised for key revocation). Unknown triggers are
 * not remembered, so a trigger created by another process works on its first call.
 */
export class CallTargets {
  private readonly memo: TtlMemo<CallTarget | undefined>;

  constructor(
    private readonly db: Knex,
    ttlMs: number,
  ) {
    this.memo = new TtlMemo(ttlMs);
    watchTables(db, ['triggers', 'workflows'], this);
  }

  /**
   * Whether an enabled trigger of the organisation still needs an API key to be called, read in
   * the caller's transaction (auth refuses to revoke the last key then; src/auth/api-keys.ts).
   */
  readonly triggersNeedKey = (trx: Knex.Transaction, orgId: string): Promise<boolean> => hasEnabledTriggers(trx, orgId);

  async get(orgId: string, triggerId: string): Promise<CallTarget | undefined> {
    const key = `${orgId}\u0000${triggerId}`;
    const target = await this.memo.get(key, () => loadCallTarget(this.db, orgId, triggerId));
    if (!target) this.memo.delete(key);
    return target;
  }

  forgetOrg(orgId: string): void {
    this.memo.deletePrefix(`${orgId}\u0000`);
  }
}
