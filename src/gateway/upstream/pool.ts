/**
 * The upstream pool: per-process state of proxied application servers (spec sections 5 and
 * 7). It holds
 * - upstream MCP sessions keyed by (organisation, server and its version, PCID and the
 *   connection's version, forwarded header values) — spec section 5: different forwarded
 *   values never share a session; a changed secret or registration opens a new one;
 * - the short-lived connection cache used by resolvePcid;
 * - the tool catalogues of OpenAPI-described servers, per registration version.
 *
 * Sessions are evicted after `idleMs` without use (a sweep timer that never keeps the process
 * alive) and least-recently-used first beyond `maxSessions` (sessions with calls in flight
 * are never evicted, so the bound is soft under load). Concurrent first calls share one
 * connect; a session the upstream says is gone is re-opened once (MCP Streamable HTTP
 * "Session Management": HTTP 404 on a request with a session id).
 *
 * The pool also owns the keep-alive agents that sessions' calls travel on (mcp-post.ts) and the
 * fetch of SDK transports and plain HTTP calls: per organisation (kernel/org-pools.ts), so an
 * organisation's calls reuse its own warm sockets to an upstream and never another
 * organisation's (whose handshake saved would show, by timing, that someone called it lately).
 *
 * Every upstream connection passes the outbound policy (src/kernel/outbound.ts, as workflow
 * `http` steps do): the SDK transports and plain HTTP calls use the pool's `fetch`
 * (policyFetch: IP literals checked before connecting, names after DNS, redirect hops
 * included), and the agents check the address of every new socket in their `lookup`. The
 * service's own origins and allow-listed host names go on agents without that check.
 */
import type http from 'node:http';
import { defaults } from '../../config/defaults.js';
import { policyDispatcher, policyFetch, type OutboundPolicy } from '../../kernel/outbound.js';
import { agentPair, IDLE_SOCKET_MS, OrgPools, releaseDispatcher, type AgentPair } from '../../kernel/org-pools.js';
import { tracedFetch } from '../../kernel/tracing.js';
import type { Logger } from '../../config/logger.js';
import { createLogger } from '../../config/logger.js';
import { GatewayError, RPC } from '../types.js';
import { isSessionGone, type Deadline } from './deadline.js';
import type { McpSession } from './mcp-session.js';
import { ConnectionCache } from './pcid.js';
import { ToolListings } from './listings.js';
import { sampleOnScrape, upstreamListingAge, upstreamListings } from '../../kernel/metrics.js';

export interface UpstreamPoolOptions {
  /** The policy every upstream connection passes (built from OUTBOUND_ALLOWLIST and the service's own origins). */
  outbound: OutboundPolicy;
  /** Idle time after which an upstream session is closed (default 5 min). */
  idleMs?: number | undefined;
  /** Upstream sessions kept at most (default 1000). */
  maxSessions?: number | undefined;
  /** Time limit of one upstream operation, connect included (default 30 s). */
  timeoutMs?: number | undefined;
  /** How long a connection lookup is trusted (default 2 s): status changes apply within it. */
  connectionTtlMs?: number | undefined;
  /** How long an upstream's tool list is reused within a session (default 30 s). */
  toolsTtlMs?: number | undefined;
  /** How long listServers and discovery wait for an upstream's first tool list (default 1 s). */
  listBudgetMs?: number | undefined;
  /** Pool-level events (evictions); calls log with their own context logger. */
  log?: Logger | undefined;
}

interface Slot {
  ready: Promise<McpSession>;
  session: McpSession | undefined;
  inflight: number;
  lastUsed: number;
}

/** OpenAPI catalogues kept at most (one per registration version). */
const MAX_CATALOGUES = 1000;
/**
 * Sockets per upstream origin (open and idle alike): above the concurrency one gateway
 * process sees, while bounding what a slow upstream can pile up.
 */
const MAX_SOCKETS_PER_ORIGIN = 256;
/** Idle keep-alive sockets are closed after IDLE_SOCKET_MS; a server's shorter Keep-Alive hint wins. */
const agentOptions: http.AgentOptions = {
  keepAlive: true,
  maxSockets: MAX_SOCKETS_PER_ORIGIN,
  maxFreeSockets: MAX_SOCKETS_PER_ORIGIN,
  timeout: IDLE_SOCKET_MS,
  scheduling: 'lifo',
};

/** One organisation's connections: agents for MCP posts, a dispatcher for fetch. */
interface OrgConnections {
  /** Agents whose new sockets pass `outbound`'s address check (lookup) … */
  checked: AgentPair;
  /** … and agents for the origins the policy trusts without one. */
  trusted: AgentPair;
  dispatcher: ReturnType<typeof policyDispatcher>;
  fetch: typeof fetch;
}

export class UpstreamPool {
  readonly idleMs: number;
  readonly maxSessions: number;
  readonly timeoutMs: number;
  readonly toolsTtlMs: number;
  readonly connections: ConnectionCache;
  /** Tool lists as listServers and discovery read them (listings.ts). */
  readonly listings: ToolListings;
  private readonly log: Logger;
  /** Map order is recency order: a used slot is re-inserted at the end. */
  private readonly slots = new Map<string, Slot>();
  private readonly catalogues = new Map<string, unknown>();
  private readonly sweeper: NodeJS.Timeout;
  /** The outbound policy of every upstream connection. */
  readonly outbound: OutboundPolicy;
  /** Each organisation's agents and fetch (every connection passes `outbound`). */
  private readonly orgConnections: OrgPools<OrgConnections>;
  private closed = false;
  private readonly unsample: () => void;

  constructor(options: UpstreamPoolOptions) {
    this.outbound = options.outbound;
    const outbound = options.outbound;
    const lookup = outbound.lookup();
    this.orgConnections = new OrgPools<OrgConnections>(
      () => {
        const dispatcher = policyDispatcher(outbound);
        return {
          checked: agentPair({ ...agentOptions, lookup }),
          trusted: agentPair(agentOptions),
          dispatcher,
          // Upstream MCP and HTTP requests carry the trace context (traceparent) in client spans.
          fetch: tracedFetch(policyFetch(outbound, dispatcher)),
        };
      },
      { release: (c) => releaseDispatcher(c.dispatcher) },
    );
    this.idleMs = options.idleMs ?? defaults.upstreamIdleMs;
    this.maxSessions = Math.max(1, options.maxSessions ?? defaults.upstreamMaxSessions);
    this.timeoutMs = options.timeoutMs ?? defaults.upstreamTimeoutMs;
    this.toolsTtlMs = options.toolsTtlMs ?? defaults.upstreamToolsTtlMs;
    this.connections = new ConnectionCache(options.connectionTtlMs ?? defaults.upstreamConnectionTtlMs);
    this.listings = new ToolListings({
      freshMs: this.toolsTtlMs,
      budgetMs: options.listBudgetMs ?? defaults.upstreamListBudgetMs,
    });
    this.log = options.log ?? createLogger('silent');
    const every = Math.max(25, Math.min(this.idleMs, 60_000) / 2);
    this.sweeper = setInterval(() => this.sweep(), every);
    this.sweeper.unref();
    const stops = [
      sampleOnScrape(upstreamListings, () => {
        const c = this.listings.census();
        for (const state of ['fresh', 'stale', 'failed'] as const) upstreamListings.set({ state }, c[state]);
      }),
      sampleOnScrape(upstreamListingAge, () => upstreamListingAge.set(this.listings.census().oldestSeconds)),
    ];
    this.unsample = () => stops.forEach((stop) => stop());
  }

  /** Open upstream sessions (connecting ones included). */
  get size(): number {
    return this.slots.size;
  }

  /**
   * The organisation's keep-alive agent for an upstream URL: per scheme, checking each new
   * socket's address unless the policy trusts the origin. A session's URL has passed the policy
   * when the SDK client opened it (an IP literal never reaches `lookup`).
   */
  agentFor(orgId: string, url: URL): http.Agent {
    const own = this.orgConnections.of(orgId);
    const pair = this.outbound.allowsOrigin(url) ? own.trusted : own.checked;
    return url.protocol === 'https:' ? pair.https : pair.http;
  }

  /** The organisation's fetch for SDK transports and plain HTTP calls. */
  fetchFor(orgId: string): typeof fetch {
    return this.orgConnections.of(orgId).fetch;
  }

  /**
   * Runs `fn` on the session of `key`, opening it with `open` when there is none (concurrent
   * callers share that connect). When the upstream says the session is gone, the session is
   * dropped, re-opened and `fn` retried once.
   */
  async use<T>(
    key: string,
    open: () => Promise<McpSession>,
    deadline: Deadline,
    fn: (s: McpSession) => Promise<T>,
  ): Promise<T> {
    if (this.closed) throw new GatewayError(RPC.INTERNAL, 'the upstream pool is closed');
    for (let attempt = 0; ; attempt++) {
      const slot = this.slot(key, open);
      slot.inflight++;
      try {
        // A failed connect is final: only an established session can be "gone". An open
        // session is used at once (no race with the deadline to set up per call).
        const session = slot.session ?? (await deadline.race(slot.ready));
        try {
          return await fn(session);
        } catch (err) {
          if (attempt === 0 && isSessionGone(err)) {
            this.log.debug('upstream session gone; re-initialising');
            this.drop(key, slot);
            continue;
          }
          throw err;
        }
      } finally {
        slot.inflight--;
        slot.lastUsed = Date.now();
      }
    }
  }

  private slot(key: string, open: () => Promise<McpSession>): Slot {
    const existing = this.slots.get(key);
    if (existing) {
      this.slots.delete(key);
      this.slots.set(key, existing);
      return existing;
    }
    const slot: Slot = { ready: open(), session: undefined, inflight: 0, lastUsed: Date.now() };
    slot.ready.then(
      (session) => {
        slot.session = session;
        session.onClose = () => this.drop(key, slot);
        // The pool may have dropped the slot (closed, evicted) while it was connecting.
        if (this.slots.get(key) !== slot) void session.close();
      },
      () => this.drop(key, slot),
    );
    this.slots.set(key, slot);
    this.enforceMax();
    return slot;
  }

  /** Removes `slot` if it is still the one stored for `key`, and closes its session. */
  private drop(key: string, slot: Slot): void {
    if (this.slots.get(key) === slot) this.slots.delete(key);
    const s = slot.session;
    slot.session = undefined;
    if (s) void s.close();
  }

  private enforceMax(): void {
    if (this.slots.size <= this.maxSessions) return;
    for (const [key, slot] of this.slots) {
      if (this.slots.size <= this.maxSessions) break;
      if (slot.inflight > 0 || !slot.session) continue;
      this.log.debug('upstream session evicted (max sessions)');
      this.drop(key, slot);
    }
  }

  private sweep(): void {
    const cutoff = Date.now() - this.idleMs;
    for (const [key, slot] of this.slots) {
      if (slot.inflight === 0 && slot.session && slot.lastUsed <= cutoff) {
        this.log.debug('upstream session evicted (idle)');
        this.drop(key, slot);
      }
    }
  }

  /** A memo per registration version (OpenAPI tool catalogues). */
  catalogue<T>(key: string, build: () => T): T {
    const hit = this.catalogues.get(key);
    if (hit !== undefined) return hit as T;
    const value = build();
    if (this.catalogues.size >= MAX_CATALOGUES) this.catalogues.delete(this.catalogues.keys().next().value as string);
    this.catalogues.set(key, value);
    return value;
  }

  /** Closes every session and stops the sweep timer. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    this.unsample();
    const sessions = [...this.slots.values()];
    this.slots.clear();
    this.connections.clear();
    this.catalogues.clear();
    // Open sessions are closed politely; one still connecting is not waited for (an upstream that
    // never answers would hold the shutdown for the whole upstream timeout): destroying the
    // agents' sockets below ends its connect, and it is closed if it opens anyway.
    await Promise.all(
      sessions.map(async (slot) => {
        if (slot.session) await slot.session.close();
        else
          void slot.ready.then(
            (s) => s.close(),
            () => undefined,
          );
      }),
    );
    for (const own of this.orgConnections.all()) {
      for (const pair of [own.checked, own.trusted]) {
        pair.http.destroy();
        pair.https.destroy();
      }
      void own.dispatcher.destroy().catch(() => undefined);
    }
    this.orgConnections.clear();
  }
}
