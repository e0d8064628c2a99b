/**
 * Keep-alive connection pools per organisation. A pool shared by organisations is a cache of
 * warm connections: a call that reuses a connection another organisation left open is answered
 * sooner (no TCP or TLS handshake), which would tell its organisation that someone called that
 * origin lately (a workflow `http` step's duration, an event delivery's `durationMs`, an
 * upstream's latency). So each organisation's outbound calls travel on pools of their own
 * (README "Caches").
 *
 * Bounded: beyond `max` organisations the least recently used one's pools are dropped, and
 * released with `release` when given (calls under way finish); its next call makes new ones.
 * Dropped http agents need no release: their idle sockets close after IDLE_SOCKET_MS.
 */
import http from 'node:http';
import https from 'node:https';
import { LRUCache } from 'lru-cache';
import type { Agent } from 'undici';

/** Organisations whose pools are kept by default. */
export const ORG_POOLS_MAX = 1000;
/** Idle keep-alive sockets of per-organisation agents are closed after this. */
export const IDLE_SOCKET_MS = 30_000;

export class OrgPools<P extends NonNullable<unknown>> {
  private readonly pools: LRUCache<string, P>;

  constructor(
    private readonly make: () => P,
    opts: { release?: (pool: P) => void; max?: number } = {},
  ) {
    const { release } = opts;
    this.pools = new LRUCache<string, P>({
      max: opts.max ?? ORG_POOLS_MAX,
      ...(release ? { dispose: (pool: P) => release(pool) } : {}),
    });
  }

  /** The organisation's pools, made on first use. */
  of(orgId: string): P {
    let pool = this.pools.get(orgId);
    if (!pool) {
      pool = this.make();
      this.pools.set(orgId, pool);
    }
    return pool;
  }

  /** Every organisation's pools (shutdown closes them). */
  all(): P[] {
    return [...this.pools.values()];
  }

  /** Drops (and releases) every organisation's pools. */
  clear(): void {
    this.pools.clear();
  }
}

export interface AgentPair {
  http: http.Agent;
  https: https.Agent;
}

/** http and https keep-alive agents whose idle sockets close after IDLE_SOCKET_MS. */
export function agentPair(extra: Partial<http.AgentOptions> = {}): AgentPair {
  const options: http.AgentOptions = { keepAlive: true, timeout: IDLE_SOCKET_MS, ...extra };
  return { http: new http.Agent(options), https: new https.Agent(options) };
}

/** Closes an undici dispatcher once its calls under way have ended. */
export function releaseDispatcher(dispatcher: Agent): void {
  void dispatcher.close().catch(() => undefined);
}
