/**
 * PCID rules for application tools (spec sections 7 and Authentication 5): the `PCID`
 * argument names a connection of the caller's organisation, of the server's service key (a
 * child server shares its parent's), in status `connected`. When it is missing and the
 * organisation has exactly one connected connection for the service, that one is used.
 *
 * Lookups go through a short-lived per-process cache (default 2 s, the same bound as key
 * revocation): a status change, a new secret or a deletion is honoured within that time.
 * Misses are not cached, so a connection created a moment ago is found at once.
 */
import {
  decryptConnectionSecret,
  findConnectionRow,
  listConnections,
  type ConnectionSecret,
  type ConnectionStatus,
} from '../../connections/index.js';
import { TtlMemo } from '../../kernel/ttl-memo.js';
import { GatewayError, RPC, type GatewayContext } from '../types.js';

export interface ResolvedConnection {
  id: string;
  name: string;
  serviceKey: string;
  status: ConnectionStatus;
  /** Changes whenever the record changes (new secret, status): part of the session key. */
  version: number;
  secret: ConnectionSecret | null;
}

/** At most this many connections are named when a missing PCID is ambiguous. */
const MAX_LISTED = 20;

export class ConnectionCache {
  private readonly byId: TtlMemo<ResolvedConnection | undefined>;
  private readonly byService: TtlMemo<Array<{ id: string; name: string }>>;

  constructor(ttlMs: number, maxEntries = 10_000) {
    this.byId = new TtlMemo(ttlMs, maxEntries);
    this.byService = new TtlMemo(ttlMs, maxEntries);
  }

  /** The connection `id` of the organisation (decrypted secret included), or undefined. */
  async get(ctx: GatewayContext, id: string): Promise<ResolvedConnection | undefined> {
    const key = `${ctx.orgId}\0${id}`;
    const found = await this.byId.get(key, async () => {
      const { db, config } = ctx.services;
      const row = await findConnectionRow(db, ctx.orgId, id);
      if (!row) return undefined;
      return {
        id: row.id,
        name: row.name,
        serviceKey: row.service_key,
        status: row.status,
        version: Number(row.version),
        secret: decryptConnectionSecret(config, row),
      };
    });
    if (!found) this.byId.delete(key); // misses are not remembered
    return found;
  }

  /** Connected connections of the organisation for these service keys (id order). */
  connected(ctx: GatewayContext, serviceKeys: readonly string[]): Promise<Array<{ id: string; name: string }>> {
    return this.byService.get(`${ctx.orgId}\0${serviceKeys.join('\0')}`, async () => {
      const found: Array<{ id: string; name: string }> = [];
      for (const serviceKey of serviceKeys) {
        const page = await listConnections(
          ctx.services.db,
          ctx.orgId,
          { serviceKey, statuses: ['connected'] },
          { limit: MAX_LISTED + 1 },
        );
        for (const c of page.items) found.push({ id: c.id, name: c.name });
      }
      return found.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    });
  }

  /** Forgets one organisation's entries (after a connection change in this process). */
  forgetOrg(orgId: string): void {
    this.byId.deletePrefix(`${orgId}\0`);
    this.byService.deletePrefix(`${orgId}\0`);
  }

  clear(): void {
    this.byId.clear();
    this.byService.clear();
  }
}

const fail = (message: string) => new GatewayError(RPC.SERVER, message);

/** Quotes caller input in messages, bounded. */
const shown = (v: string) => JSON.stringify(v.length > 100 ? `${v.slice(0, 100)}…` : v);

/**
 * The connection a call uses. `serviceKeys[0]` is the server's own key (named in messages);
 * a child server also accepts its parent's. Failures are GatewayError(-32000) whose messages
 * reveal nothing about other organisations: a PCID of another organisation is "unknown".
 */
export async function resolvePcid(
  ctx: GatewayContext,
  serviceKeys: readonly string[],
  pcid: unknown,
  cache: ConnectionCache,
): Promise<ResolvedConnection> {
  const service = serviceKeys[0]!;
  if (pcid === undefined || pcid === null || pcid === '') {
    const candidates = await cache.connected(ctx, serviceKeys);
    if (candidates.length === 0) {
      throw fail(`PCID is required: no connected connection exists for service "${service}" in this organisation`);
    }
    if (candidates.length > 1) {
      const listed = candidates
        .slice(0, MAX_LISTED)
        .map((c) => `${c.name} (${c.id})`)
        .join(', ');
      const more = candidates.length > MAX_LISTED ? ', …' : '';
      throw fail(
        `PCID is required: several connected connections exist for service "${service}": ${listed}${more}; pass one as PCID`,
      );
    }
    pcid = candidates[0]!.id;
  }
  if (typeof pcid !== 'string') throw fail('PCID must be a string (the connection id)');
  const conn = await cache.get(ctx, pcid);
  if (!conn) throw fail(`unknown PCID ${shown(pcid)}: no such connection in this organisation`);
  if (!serviceKeys.includes(conn.serviceKey)) {
    throw fail(`PCID ${conn.id} is a connection for service "${conn.serviceKey}", not "${service}"`);
  }
  if (conn.status !== 'connected') {
    throw fail(`connection ${conn.name} (${conn.id}) is ${conn.status}, not connected`);
  }
  return conn;
}
