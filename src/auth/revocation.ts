import type { Knex } from 'knex';

/**
 * Credential status cache behind token verification. The spec leaves revocation open
 * ("Authentication" 6); our rule is that tokens of a revoked credential fail within 5 s. Each
 * process re-reads a credential's status from the store once its entry is older than
 * `ttlMs` (config.revocationCacheMs, at most 5000), so other processes' revocations are seen in
 * time, while verification of a busy credential costs one query per TTL instead of per request.
 */
interface Status {
  active: boolean;
  orgId: string | null;
  /** When the status was read (TTL). */
  at: number;
  /** Write order, so a slow lookup never overwrites a newer in-process revocation. */
  seq: number;
}

const MAX_ENTRIES = 100_000;

export class CredentialStatusCache {
  private entries = new Map<string, Status>();
  private inflight = new Map<string, Promise<Status>>();
  private seq = 0;

  constructor(
    private readonly db: Knex,
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  /** True when the credential exists, is not revoked, and belongs to `orgId`. */
  async isActive(credentialId: string, orgId: string): Promise<boolean> {
    const cached = this.entries.get(credentialId);
    const status = cached && this.now() - cached.at < this.ttlMs ? cached : await this.lookup(credentialId);
    return status.active && status.orgId === orgId;
  }

  /** In-process revocation: effective for this process at once, without waiting for the TTL. */
  markRevoked(credentialId: string): void {
    this.inflight.delete(credentialId);
    this.entries.set(credentialId, { active: false, orgId: null, at: this.now(), seq: ++this.seq });
  }

  evict(credentialId: string): void {
    this.inflight.delete(credentialId);
    this.entries.delete(credentialId);
  }

  private lookup(credentialId: string): Promise<Status> {
    const pending = this.inflight.get(credentialId);
    if (pending) return pending;
    const startedAt = this.now();
    const seqAtStart = this.seq;
    const p = (async (): Promise<Status> => {
      const row = (await this.db('credentials').select('org_id', 'revoked_at').where({ id: credentialId }).first()) as
        { org_id: string; revoked_at: string | null } | undefined;
      const status: Status = {
        active: !!row && !row.revoked_at,
        orgId: row?.org_id ?? null,
        at: startedAt,
        seq: ++this.seq,
      };
      // A revocation recorded while this query ran wins over its (older) answer.
      const current = this.entries.get(credentialId);
      if (!current || current.seq <= seqAtStart) {
        if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
        this.entries.set(credentialId, status);
      }
      return this.entries.get(credentialId) ?? status;
    })().finally(() => {
      if (this.inflight.get(credentialId) === p) this.inflight.delete(credentialId);
    });
    this.inflight.set(credentialId, p);
    return p;
  }
}
