/**
 * What a trigger call needs, in one indexed read: the trigger and its workflow's current
 * version (the definition itself comes from the engine's immutable version cache).
 */
import type { Knex } from 'knex';
import { fromJson } from '../storage/db.js';
import { TtlMemo } from '../kernel/ttl-memo.js';
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
    | {
        id: string;
        kind: TriggerKind;
        enabled: boolean | number;
        designated_output: string | null;
        workflow_id: string;
        version: number | string;
      }
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

/**
 * Per-process memo of call targets: a trigger call reads no record from the store. The
 * process that changes a trigger or workflow forgets its organisation's entries at once;
 * other processes see a change (disable, delete, new version) within `ttlMs`
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
  }

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
