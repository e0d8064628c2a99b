/**
 * Learning from use (README.md "Learning from use"): which tool a caller of an
 * organisation actually called after a capabilities_discover request, so that later requests
 * like it rank that tool higher. Off with DISCOVERY_LEARNING=false (config.discovery.learning):
 * the gateway then builds no UsageMemory, so nothing is recorded and nothing learned is used.
 *
 * - Pending discover: each discover notes (organisation, caller key, request, time). The caller
 *   key is `GatewayContext.callerId` (the API credential of a runtime token, the chat of an
 *   agent turn); without one, the organisation itself. Only the latest discover per caller is
 *   pending. Without Redis, pending discovers live in this process (at most MAX_PENDING); with
 *   REDIS_URL they are shared by the service's processes (usage-pending.ts), so a discover and
 *   its call may reach different processes.
 * - Attribution: the caller's next *successful* tools/call (no thrown error, no `isError`) of a
 *   tool within LEARNING_WINDOW_MS (2 minutes) records (request → server/tool) once and clears
 *   the pending discover, so a later unrelated call is not attributed. A failed call neither
 *   counts nor clears it (the caller may retry with fixed arguments); a call after the window
 *   clears it without recording. gateway_invoke counts as its inner target (the gateway server
 *   reports that); the discovery tools themselves, gateway_invoke and mcp/listServers never
 *   count (IGNORED).
 * - Storage (usage-store.ts, migration 010): at most MAX_ROWS_PER_ORG rows per organisation,
 *   least recently used removed. Writes are fire-and-forget: never awaited by the tool call,
 *   errors logged, no unhandled rejection. Per organisation the rows are cached in memory
 *   (at most MAX_CACHED_ORGS organisations), loaded on first use, updated in place on this
 *   process's writes and reloaded in the background after RELOAD_MS, so other service
 *   processes' uses show within that time.
 * - Matching and boost (`boosts`): see `learnedValue`.
 */
import type { GatewayContext, ToolCallObserver } from '../../gateway/index.js';
import { analyze } from './search.js';
import { knexUsageStore, type UsageRow, type UsageStore } from './usage-store.js';
import type { Pending, SharedPending } from './usage-pending.js';

/** How long after a discover a call is attributed to its request. */
export const LEARNING_WINDOW_MS = 2 * 60_000;
/** Remembered (request, tool) pairs per organisation; the least recently used go first. */
export const MAX_ROWS_PER_ORG = 500;
/** A remembered request counts for a new one from this similarity (0..1) on. */
export const MIN_SIMILARITY = 0.5;
/** A learned confidence never exceeds this: 1 stays reserved for exact tool names. */
export const LEARNED_CAP = 0.95;
/** Saturation of uses: 1 − USE_DECAY^uses (1 use 0.6, 2 uses 0.84, 3 uses 0.94). */
export const USE_DECAY = 0.4;
/** A cached organisation is reloaded from the store (in the background) after this long. */
export const RELOAD_MS = 30_000;
const MAX_PENDING = 10_000;
const MAX_CACHED_ORGS = 1_000;
/** Characters of a request's wording that are kept (capability_details shows them). */
const REQUEST_CHARS = 300;
/** Requests shown per tool by capability_details. */
const SHOWN_REQUESTS = 3;

/** Calls that are part of finding tools, not uses of one (gateway_invoke is reported as its target). */
const IGNORED = (server: string, tool: string): boolean =>
  server === 'svc-sidekick' || server === 'gateway' || (server === 'mcp' && tool === 'listServers');

/** Key of a tool in `boosts` and `learned` maps. */
export const toolKey = (server: string, tool: string): string => `${server}\u0000${tool}`;

/** What capability_details shows of a tool's learned use (DetailItem.learned). */
export interface LearnedUse {
  /** Uses after discover requests of this organisation (all remembered requests). */
  uses: number;
  /** ISO 8601 UTC of the latest. */
  lastUsedAt: string;
  /** Up to three remembered requests, most recent first. */
  requests: string[];
}

export interface UsageMemoryOptions {
  store?: UsageStore | undefined;
  windowMs?: number | undefined;
  maxRowsPerOrg?: number | undefined;
  reloadMs?: number | undefined;
  /** Clock in milliseconds (tests move it). */
  now?: (() => number) | undefined;
  /**
   * Optional vector similarity of two requests (0..1, 1 = same meaning; undefined = not known,
   * e.g. no embedding yet). The larger of it and the lexical similarity is used.
   */
  similar?: ((a: string, b: string) => number | undefined) | undefined;
  /** Pending discovers shared by the service's processes (Redis); this process's memory otherwise. */
  shared?: SharedPending | undefined;
}

interface Cached {
  terms: ReadonlySet<string>;
  row: UsageRow;
}
interface OrgRows {
  rows: Cached[];
  loadedAt: number;
  loading?: Promise<void> | undefined;
  /** Reload at the next use (a load raced with a local write). */
  stale?: boolean;
  /** Local writes so far: a load that saw a change of it may lack them, so its rows are not used. */
  gen: number;
}

/** Sorted distinct analysed terms of a request (search.ts `analyze`: stemmed, no stop words). */
export const termsOf = (request: string): string[] => [...analyze(request).original].sort();

/** Jaccard similarity of two term sets. */
function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (!a.size || !b.size) return 0;
  let shared = 0;
  for (const t of a) if (b.has(t)) shared++;
  return shared / (a.size + b.size - shared);
}

/**
 * Learned confidence of one tool (0..LEARNED_CAP, an estimate that it is the tool wanted):
 *   LEARNED_CAP × s × (1 − USE_DECAY^u) × √share
 * - s: the best similarity of a remembered request that led to the tool;
 * - u: Σ similarity × uses over those requests (uses of close wordings add up);
 * - share: u over the u of every tool used after such requests (tools used after the same kind
 *   of request compete; one stray use barely dents a habit).
 * Three uses of the same request for one tool give 0.95 × 0.936 = 0.89; one use 0.57.
 * discover.ts takes max(lexical confidence, this) and adds the tool when lexical search missed it.
 */
export function learnedValue(best: number, u: number, share: number): number {
  return LEARNED_CAP * best * (1 - USE_DECAY ** u) * Math.sqrt(share);
}

export class UsageMemory implements ToolCallObserver {
  private readonly pending = new Map<string, Pending>();
  private readonly orgs = new Map<string, OrgRows>();
  private readonly writes = new Set<Promise<void>>();
  private readonly store: UsageStore;
  private readonly windowMs: number;
  private readonly maxRows: number;
  private readonly reloadMs: number;
  private readonly now: () => number;

  constructor(private readonly opts: UsageMemoryOptions = {}) {
    this.store = opts.store ?? knexUsageStore;
    this.windowMs = opts.windowMs ?? LEARNING_WINDOW_MS;
    this.maxRows = opts.maxRowsPerOrg ?? MAX_ROWS_PER_ORG;
    this.reloadMs = opts.reloadMs ?? RELOAD_MS;
    this.now = opts.now ?? Date.now;
  }

  /**
   * A capabilities_discover call: its request is pending for the caller. Resolves once it is
   * noted (with shared pending discovers, once Redis has it, so a call that follows at once on
   * another process finds it); never rejects.
   */
  async noteDiscover(ctx: GatewayContext, request: string): Promise<void> {
    const terms = termsOf(request);
    if (!terms.length) return;
    const p: Pending = { request: request.trim().slice(0, REQUEST_CHARS), terms, at: this.now() };
    if (this.opts.shared) {
      await this.opts.shared.put(ctx.orgId, ctx.callerId ?? '', p, this.windowMs);
      return;
    }
    const key = callerKey(ctx);
    this.pending.delete(key);
    this.pending.set(key, p);
    if (this.pending.size > MAX_PENDING) this.pending.delete(this.pending.keys().next().value as string);
  }

  /**
   * ToolCallObserver: a finished tools/call. Returns at once; the take and the write run in the
   * background. With shared pending discovers the GETDEL is queued before the call's answer is
   * written and goes out in the same turn of the event loop, so it reaches Redis before the
   * caller can have the answer and make its next call. Awaiting it instead would add a Redis
   * round trip to every proxied call (bench/README.md, "Other benchmarks"), for no ordering that
   * this does not already give.
   */
  toolCalled(ctx: GatewayContext, { server, tool, ok }: { server: string; tool: string; ok: boolean }): void {
    if (!ok || IGNORED(server, tool)) return;
    if (this.opts.shared) {
      this.track(
        this.opts.shared.take(ctx.orgId, ctx.callerId ?? '').then((p) => {
          if (p) this.attribute(ctx, p, server, tool);
        }),
      );
      return;
    }
    const key = callerKey(ctx);
    const p = this.pending.get(key);
    if (!p) return;
    this.pending.delete(key);
    this.attribute(ctx, p, server, tool);
  }

  /** Records (request → tool) if the call came within the window of its discover. */
  private attribute(ctx: GatewayContext, p: Pending, server: string, tool: string): void {
    if (this.now() - p.at > this.windowMs) return;
    try {
      this.remember(ctx, p, server, tool);
    } catch (err) {
      // Learning must never turn a successful tool call into a failure.
      ctx.log.warn({ err, orgId: ctx.orgId }, 'discovery learning: a use could not be noted');
    }
  }

  /** Learned confidence per tool (toolKey) for a request; empty when nothing resembles it. */
  async boosts(ctx: GatewayContext, request: string): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    const rows = await this.rowsOf(ctx);
    if (!rows.length) return out;
    const terms = new Set(termsOf(request));
    const perTool = new Map<string, { best: number; u: number }>();
    let total = 0;
    for (const { terms: remembered, row } of rows) {
      const sim = Math.max(jaccard(terms, remembered), this.opts.similar?.(request, row.request) ?? 0);
      if (sim < MIN_SIMILARITY) continue;
      const key = toolKey(row.server, row.tool);
      const t = perTool.get(key) ?? { best: 0, u: 0 };
      t.best = Math.max(t.best, Math.min(1, sim));
      t.u += sim * row.uses;
      total += sim * row.uses;
      perTool.set(key, t);
    }
    for (const [key, t] of perTool) out.set(key, learnedValue(t.best, t.u, t.u / total));
    return out;
  }

  /** What was learned about each of `tools` (toolKey → use), for capability_details. */
  async learned(
    ctx: GatewayContext,
    tools: readonly { server: string; tool: string }[],
  ): Promise<Map<string, LearnedUse>> {
    const out = new Map<string, LearnedUse>();
    if (!tools.length) return out;
    const wanted = new Set(tools.map((t) => toolKey(t.server, t.tool)));
    // Rows are most recently used first, so the first row of a tool gives lastUsedAt.
    for (const { row } of await this.rowsOf(ctx)) {
      const key = toolKey(row.server, row.tool);
      if (!wanted.has(key)) continue;
      const use = out.get(key);
      if (!use) {
        out.set(key, { uses: row.uses, lastUsedAt: row.lastUsedAt, requests: [row.request] });
        continue;
      }
      use.uses += row.uses;
      if (use.requests.length < SHOWN_REQUESTS && !use.requests.includes(row.request)) use.requests.push(row.request);
    }
    return out;
  }

  /** Resolves when every write started so far has finished (tests; shutdown). */
  async settled(): Promise<void> {
    while (this.writes.size) await Promise.all([...this.writes]);
  }

  private remember(ctx: GatewayContext, p: Pending, server: string, tool: string): void {
    const at = new Date(this.now()).toISOString();
    const org = this.orgs.get(ctx.orgId);
    if (org) this.applyLocally(org, p, { server, tool, at });
    this.track(
      this.store
        .record(ctx, { request: p.request, terms: p.terms, server, tool, at }, this.maxRows)
        .catch((err: unknown) => {
          ctx.log.warn({ err, orgId: ctx.orgId, server, tool }, 'discovery learning: a use could not be stored');
        }),
    );
  }

  /** Background work that `settled` waits for; it must not reject. */
  private track(work: Promise<void>): void {
    const tracked = work.finally(() => this.writes.delete(tracked));
    this.writes.add(tracked);
  }

  /** The same change the store makes, on the cached rows (most recently used first, bounded). */
  private applyLocally(
    org: OrgRows,
    p: Pending,
    { server, tool, at }: { server: string; tool: string; at: string },
  ): void {
    org.gen++;
    const joined = p.terms.join(' ');
    const i = org.rows.findIndex(
      (c) => c.row.server === server && c.row.tool === tool && c.row.terms.join(' ') === joined,
    );
    const previous = i >= 0 ? org.rows.splice(i, 1)[0]!.row : undefined;
    const row: UsageRow = {
      request: p.request,
      terms: p.terms,
      server,
      tool,
      uses: (previous?.uses ?? 0) + 1,
      lastUsedAt: at,
    };
    org.rows.unshift({ terms: new Set(p.terms), row });
    if (org.rows.length > this.maxRows) org.rows.length = this.maxRows;
  }

  /**
   * The organisation's rows: loaded on first use (awaited), then served from memory and
   * reloaded in the background after RELOAD_MS. A failed load is logged and counts as no rows
   * until the next reload: learning must never fail a discover.
   */
  private async rowsOf(ctx: GatewayContext): Promise<Cached[]> {
    let org = this.orgs.get(ctx.orgId);
    if (!org) {
      org = { rows: [], loadedAt: 0, gen: 0 };
      this.orgs.set(ctx.orgId, org);
      if (this.orgs.size > MAX_CACHED_ORGS) this.orgs.delete(this.orgs.keys().next().value as string);
      await this.reload(ctx, org);
      return org.rows;
    }
    // Map order is insertion order: re-inserting marks the organisation as recently used.
    this.orgs.delete(ctx.orgId);
    this.orgs.set(ctx.orgId, org);
    if (org.loading && !org.loadedAt) await org.loading;
    else if (!org.loading && (org.stale || this.now() - org.loadedAt >= this.reloadMs)) void this.reload(ctx, org);
    return org.rows;
  }

  private reload(ctx: GatewayContext, org: OrgRows): Promise<void> {
    org.stale = false;
    const gen = org.gen;
    org.loading = this.store
      .load(ctx)
      .then(
        (rows) => {
          // A local write during the load may be missing from its rows: keep the local rows (which
          // have it) and load again at the next use.
          if (org.gen !== gen) org.stale = true;
          else org.rows = rows.slice(0, this.maxRows).map((row) => ({ terms: new Set(row.terms), row }));
        },
        (err: unknown) => {
          ctx.log.warn(
            { err, orgId: ctx.orgId },
            'discovery learning: remembered uses could not be loaded; ranking without them',
          );
        },
      )
      .finally(() => {
        org.loadedAt = this.now();
        org.loading = undefined;
      });
    return org.loading;
  }
}

/** Pending discovers are per caller of an organisation (per organisation without a caller id). */
function callerKey(ctx: GatewayContext): string {
  return `${ctx.orgId}\u0000${ctx.callerId ?? ''}`;
}
