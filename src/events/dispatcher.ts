/**
 * Delivers the outbox (src/events/outbox.ts): claims pending rows, POSTs each payload to its
 * trigger URL with `X-API-KEY` (openapi/resources.yaml: no signature, 10-second timeout, no
 * redirects, never retried), and records the outcomes in batches. Woken at once by writes in
 * this process; other processes' writes are found by polling. Runs wherever run workers run
 * (RUN_CONCURRENCY > 0), so an HTTP-only process never delivers.
 *
 * Delivery never blocks or fails the write that caused it: the write only inserts rows. Claims
 * and outcomes go through the events' write queue, so they share commits with item writes, and
 * they are coalesced: a wake or a finished call schedules one tick TICK_MS later, which records
 * every outcome since the last tick and claims what is pending, so a steady stream of edits
 * costs a few dispatcher statements per tick rather than two transactions per edit
 * (bench/events.ts measures the service's CPU per edit).
 */
import type { WriteQueue } from '../storage/write-queue.js';
import type { Logger } from '../config/logger.js';
import { nowIso } from '../kernel/ids.js';
import { claimPending, pruneDeliveries, recordOutcomes, type DeliveryOutcome, type OutboxRow } from './outbox.js';
import { revealKey } from './trigger-urls.js';
import { eventDeliveries } from '../kernel/metrics.js';
import { underTraceparent } from '../kernel/tracing.js';

const delivered = { sent: eventDeliveries.labels('sent'), failed: eventDeliveries.labels('failed') };

export interface PostResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  durationMs: number;
}

/** An event call, made for the organisation whose change it reports. */
export interface PostCall {
  orgId: string;
  url: string;
  body: string;
  headers: Record<string, string>;
}

/** One guarded POST (src/kernel/outbound.ts); rejects with a message fit for the delivery log. */
export type Poster = (call: PostCall) => Promise<PostResult>;

export interface DispatcherOptions {
  concurrency?: number;
  leaseMs?: number;
  pollMs?: number;
}

const MAX_ERROR = 500;
/** The delivery log keeps finished entries 7 days (openapi/management.yaml listCollectionDeliveries). */
export const DELIVERY_LOG_DAYS = 7;
const PRUNE_EVERY_MS = 3_600_000;
/**
 * How long a wake or an outcome waits for others to share its tick (one claim, one UPDATE of
 * outcomes): a call starts at most this much later, and the log shows `pending` at most this
 * much longer.
 */
const TICK_MS = 5;

/** The outbox's writes, the key event-call signatures use, the poster that delivers them, the log. */
export interface EventDispatcherDeps {
  writes: WriteQueue;
  secretKey: Buffer;
  post: Poster;
  log: Logger;
}

export class EventDispatcher {
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private inFlight = 0;
  private readonly settled = new Set<Promise<void>>();
  private outcomes: DeliveryOutcome[] = [];
  private pumping = false;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private timerDue = 0;
  private stopped = true;
  private pruner: NodeJS.Timeout | undefined;

  private readonly writes: WriteQueue;
  private readonly secretKey: Buffer;
  private readonly post: Poster;
  private readonly log: Logger;

  constructor(deps: EventDispatcherDeps, opts: DispatcherOptions = {}) {
    this.writes = deps.writes;
    this.secretKey = deps.secretKey;
    this.post = deps.post;
    this.log = deps.log;
    this.concurrency = opts.concurrency ?? 64;
    this.leaseMs = opts.leaseMs ?? 30_000;
    this.pollMs = opts.pollMs ?? 1000;
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
    const prune = () => {
      this.writes
        .run((trx) => pruneDeliveries(trx, new Date(Date.now() - DELIVERY_LOG_DAYS * 86_400_000).toISOString()))
        .catch((err: Error) => this.log.warn({ err: err.message }, 'event outbox: pruning the delivery log failed'));
    };
    prune();
    this.pruner = setInterval(prune, PRUNE_EVERY_MS);
    this.pruner.unref();
  }

  /** A write in this process committed outbox rows (or a call finished): claim at the next tick. */
  wake(): void {
    if (this.stopped) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.schedule(TICK_MS);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.pruner) clearInterval(this.pruner);
    while (this.settled.size > 0) await Promise.all([...this.settled]);
    await this.flush();
  }

  /** Keeps an earlier pending pump: a stream of wakes must not postpone it forever. */
  private schedule(ms: number): void {
    const due = Date.now() + ms;
    if (this.timer && this.timerDue <= due) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerDue = due;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.pump();
    }, ms);
    this.timer.unref();
  }

  private async pump(): Promise<void> {
    if (this.stopped || this.pumping) return;
    this.pumping = true;
    let full = false;
    try {
      this.again = false;
      do {
        const free = this.concurrency - this.inFlight;
        // Outcomes and the claim are two operations of the write queue queued together: they share
        // a commit (with any item writes of the moment), and one failing leaves the other standing.
        const recorded = this.flush();
        const rows = free > 0 ? await this.writes.run((trx) => claimPending(trx, free, this.leaseMs)) : [];
        await recorded;
        full = free > 0 && rows.length === free;
        for (const row of rows) this.track(this.deliver(row));
        // A full claim means a backlog: claim again at once. Wakes during the tick wait for the next.
      } while (full && !this.stopped && this.inFlight < this.concurrency);
    } catch (err) {
      this.log.error({ err: (err as Error).message }, 'event outbox: claim failed; retrying');
    } finally {
      this.pumping = false;
    }
    if (!this.stopped) this.schedule(this.again || this.outcomes.length > 0 ? TICK_MS : this.pollMs);
  }

  private track(p: Promise<void>): void {
    this.inFlight++;
    this.settled.add(p);
    // The call's outcome woke the next tick, which finds this slot free.
    void p.finally(() => {
      this.inFlight--;
      this.settled.delete(p);
    });
  }

  private async deliver(row: OutboxRow): Promise<void> {
    let outcome: DeliveryOutcome;
    const started = performance.now();
    try {
      const key = revealKey(this.secretKey, row.api_key_enc);
      // The delivery's span joins the trace of the request that made the change.
      const res = await underTraceparent(row.trace_parent, () =>
        this.post({
          orgId: row.org_id,
          url: row.url,
          body: row.payload,
          headers: { 'content-type': 'application/json', 'x-api-key': key },
        }),
      );
      const runId = res.headers['x-pf-run-id'];
      const ok = res.status >= 200 && res.status < 300;
      outcome = {
        id: row.id,
        status: ok ? 'sent' : 'failed',
        httpStatus: res.status,
        durationMs: Math.round(res.durationMs),
        runId: typeof runId === 'string' ? runId.slice(0, 64) : null,
        error: ok ? null : `The trigger URL answered ${res.status}`,
        finishedAt: nowIso(),
      };
    } catch (err) {
      outcome = {
        id: row.id,
        status: 'failed',
        httpStatus: null,
        durationMs: Math.round(performance.now() - started),
        runId: null,
        error: ((err as Error).message || 'delivery failed').slice(0, MAX_ERROR),
        finishedAt: nowIso(),
      };
    }
    delivered[outcome.status].inc();
    this.outcomes.push(outcome);
    this.wake();
  }

  /** Group commit of outcomes: one statement records every outcome since the last tick. */
  private async flush(): Promise<void> {
    const batch = this.outcomes;
    this.outcomes = [];
    if (batch.length === 0) return;
    try {
      await this.writes.run((trx) => recordOutcomes(trx, batch));
    } catch (err) {
      // The rows stay pending under their lease and are delivered again after it: at least once.
      this.log.error({ err: (err as Error).message, count: batch.length }, 'event outbox: recording outcomes failed');
    }
  }
}
