/**
 * Tool lists of application servers as listServers and discovery read them (one slow upstream
 * must not stall everyone). Per process, keyed by organisation, registration
 * version and the connection the list was asked with:
 * - a list younger than `freshMs` is served as it is;
 * - an older one, or one whose last refresh failed, is served at once, marked stale, while one
 *   refresh runs in the background;
 * - with no list yet, the caller waits at most `budgetMs` for it; past that it gets no tools,
 *   marked stale with the reason, and the listing goes on in the background for the next call.
 * A failed listing keeps the last good list and records the error, which callers show.
 * Each organisation has a generation that turns whenever one of its lists arrives with other
 * tools than it held (a first answer included): discovery stamps its index with it, so a list
 * that lands after the index was built is indexed on the next lookup.
 */
import type { ToolDef } from '../types.js';

export interface Listing {
  tools: ToolDef[];
  /** True when the tools are not a fresh answer of the upstream (older, failed or still pending). */
  stale: boolean;
  /** Why the upstream's list is not fresh: its last error, or that it has not answered yet. */
  error?: string | undefined;
}

interface Entry {
  /** The organisation the list belongs to (the key's first part). */
  orgId: string;
  tools: ToolDef[];
  /** When the tools were last listed (epoch ms); 0 = never. */
  at: number;
  /** When the last listing failed (epoch ms); 0 = it did not. */
  failedAt: number;
  error: string | undefined;
  pending: Promise<void> | undefined;
  /** A caller already waited the budget for the first list: later callers do not wait again. */
  waited: boolean;
}

/**
 * How this process last listed one server's tools for an organisation (openapi/management.yaml
 * `AppServerHealth`): `unknown` before any answer, `failing` while a list's last refresh failed,
 * `stale` when the newest list is older than the freshness window, `fresh` otherwise.
 */
export interface ListingHealth {
  status: 'unknown' | 'fresh' | 'stale' | 'failing';
  lastListedAt: string | null;
  lastError: string | null;
}

export const UNKNOWN_HEALTH: ListingHealth = Object.freeze({ status: 'unknown', lastListedAt: null, lastError: null });

const MAX_ENTRIES = 10_000;
/** A failed upstream is asked again at most this often. */
const RETRY_MS = 10_000;

export class ToolListings {
  /** Map order is recency order. */
  private readonly entries = new Map<string, Entry>();
  /** Per organisation, the sequence number of the last change of one of its lists. */
  private readonly generations = new Map<string, number>();
  private sequence = 0;
  /** The highest generation dropped from `generations`: what a dropped organisation reads. */
  private dropped = 0;

  constructor(private readonly opts: { freshMs: number; budgetMs: number }) {}

  async get(key: string, fetch: () => Promise<ToolDef[]>, now = Date.now()): Promise<Listing> {
    let entry = this.entries.get(key);
    if (entry) {
      this.entries.delete(key);
      this.entries.set(key, entry);
    } else {
      entry = {
        orgId: key.slice(0, Math.max(0, key.indexOf('\u0000'))),
        tools: [],
        at: 0,
        failedAt: 0,
        error: undefined,
        pending: undefined,
        waited: false,
      };
      this.entries.set(key, entry);
      while (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
    }
    if (entry.error === undefined && entry.at > 0 && now - entry.at < this.opts.freshMs)
      return { tools: entry.tools, stale: false };
    if (entry.at > 0 || entry.failedAt > 0) {
      // Answered before: serve that at once; refresh in the background (a failed upstream at most every RETRY_MS).
      if (entry.error === undefined || now - entry.failedAt >= RETRY_MS) void this.refresh(entry, fetch);
      return this.view(entry, now);
    }
    const first = this.refresh(entry, fetch);
    if (entry.waited) return this.notYet();
    // Never listed: wait for the first answer, within the budget, once.
    let timer: NodeJS.Timeout | undefined;
    const budget = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.opts.budgetMs);
      timer.unref();
    });
    await Promise.race([first, budget]);
    clearTimeout(timer);
    if (entry.at === 0 && entry.failedAt === 0) {
      entry.waited = true;
      return this.notYet();
    }
    return this.view(entry, Date.now());
  }

  private notYet(): Listing {
    return {
      tools: [],
      stale: true,
      error: `the upstream has not listed its tools yet (no answer within ${this.opts.budgetMs} ms; still asking)`,
    };
  }

  /**
   * The lists held, by state (the metrics' listing staleness): fresh, stale (older than
   * `freshMs`, or never answered yet) or failed (the last refresh failed); and the age of the
   * oldest list answered (seconds).
   */
  census(now = Date.now()): { fresh: number; stale: number; failed: number; oldestSeconds: number } {
    const out = { fresh: 0, stale: 0, failed: 0, oldestSeconds: 0 };
    for (const entry of this.entries.values()) {
      if (entry.error !== undefined) out.failed++;
      else if (entry.at > 0 && now - entry.at < this.opts.freshMs) out.fresh++;
      else out.stale++;
      if (entry.at > 0) out.oldestSeconds = Math.max(out.oldestSeconds, (now - entry.at) / 1000);
    }
    return out;
  }

  /**
   * Turns whenever a list of the organisation arrives with other tools than it held: the
   * listing part of discovery's fingerprint (src/gateway/catalog.ts). Values are unique across
   * organisations and only grow, so an index stamped with one is never taken for current after
   * a change (an organisation dropped beyond MAX_ENTRIES reads the highest dropped value).
   */
  generation(orgId: string): number {
    return this.generations.get(orgId) ?? this.dropped;
  }

  private changed(orgId: string): void {
    this.generations.delete(orgId);
    this.generations.set(orgId, ++this.sequence);
    for (const [oldest, value] of this.generations) {
      if (this.generations.size <= MAX_ENTRIES) break;
      this.generations.delete(oldest);
      this.dropped = Math.max(this.dropped, value);
    }
  }

  /** The health of the lists whose keys start with `prefix` (one server, every connection). */
  health(prefix: string, now = Date.now()): ListingHealth {
    return this.healthBy((key) => (key.startsWith(prefix) ? prefix : undefined), now).get(prefix) ?? UNKNOWN_HEALTH;
  }

  /**
   * The health of lists grouped by `group(key)` (undefined leaves a list out), in one pass over
   * the entries: a page of servers costs one walk, not one per server.
   */
  healthBy(group: (key: string) => string | undefined, now = Date.now()): Map<string, ListingHealth> {
    const seen = new Map<string, { at: number; failedAt: number; error: string | undefined }>();
    for (const [key, entry] of this.entries) {
      const g = group(key);
      if (g === undefined) continue;
      let s = seen.get(g);
      if (!s) seen.set(g, (s = { at: 0, failedAt: 0, error: undefined }));
      s.at = Math.max(s.at, entry.at);
      if (entry.error !== undefined && entry.failedAt >= s.failedAt) {
        s.failedAt = entry.failedAt;
        s.error = entry.error;
      }
    }
    const out = new Map<string, ListingHealth>();
    for (const [g, { at, error }] of seen) {
      const status =
        error !== undefined ? 'failing' : at === 0 ? 'unknown' : now - at < this.opts.freshMs ? 'fresh' : 'stale';
      out.set(g, { status, lastListedAt: at > 0 ? new Date(at).toISOString() : null, lastError: error ?? null });
    }
    return out;
  }

  /** Forgets every list of an organisation (after a registration or connection change in this process). */
  forgetOrg(orgId: string): void {
    for (const key of this.entries.keys()) if (key.startsWith(`${orgId}\u0000`)) this.entries.delete(key);
  }

  private view(entry: Entry, now: number): Listing {
    const fresh = entry.error === undefined && now - entry.at < this.opts.freshMs;
    return { tools: entry.tools, stale: !fresh, ...(entry.error !== undefined ? { error: entry.error } : {}) };
  }

  /** One listing at a time per entry; its outcome lands in the entry. */
  private refresh(entry: Entry, fetch: () => Promise<ToolDef[]>): Promise<void> {
    entry.pending ??= fetch()
      .then(
        (tools) => {
          if (entry.at === 0 || !sameTools(entry.tools, tools)) this.changed(entry.orgId);
          entry.tools = tools;
          entry.at = Date.now();
          entry.error = undefined;
        },
        (err: unknown) => {
          entry.error = err instanceof Error ? err.message : String(err);
          entry.failedAt = Date.now();
        },
      )
      .finally(() => {
        entry.pending = undefined;
      });
    return entry.pending;
  }
}

/** The same tools in the same order, as an index would see them (names, descriptions, schemas). */
function sameTools(a: ToolDef[], b: ToolDef[]): boolean {
  return a.length === b.length && JSON.stringify(a) === JSON.stringify(b);
}
