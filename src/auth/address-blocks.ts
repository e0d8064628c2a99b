/**
 * The source addresses over their failure limit, known in every process, so that a token
 * request from an address that is not blocked costs no Redis round trip (README "Token endpoint
 * limits"). With REDIS_URL the failure windows live in Redis (failure-windows.ts); the script
 * that records a failure also keeps a sorted set of blocked addresses (score: blocked until, in
 * ms) and publishes `<until> <key>` on a channel whenever an address's block begins or grows.
 * Each process:
 *
 * - notes the blocks its own failure recording finds, and those announced on the channel;
 * - on subscribing, and again on every resubscription after a dropped connection, loads the
 *   blocked set once (subscribed first, then loaded: a block announced in between is heard or
 *   in the set), so a process started during an attack refuses the attacker at once;
 * - while it is not subscribed (starting, reconnecting, or the load did not answer), cannot
 *   tell "not blocked" from "not heard of": the limiter then reads the address's window in
 *   Redis per request, as it would without this map, until the subscription is back.
 *
 * Nothing lifts a block early (a success clears no failure), so only blocks are announced,
 * and a block known here is refused without asking Redis. The map is bounded: beyond `maxKeys`
 * the least recently blocked go first, and until their blocks would have ended an address not
 * in the map is asked of Redis, so eviction never admits a blocked address.
 */
import type { Logger } from '../config/logger.js';
import { redisCommand, type RedisClient } from '../storage/redis.js';

export class AddressBlocks {
  /** Window key → blocked until (ms). Insertion order is recency: a key is re-inserted when its block grows. */
  private readonly until = new Map<string, number>();
  /** The latest end of a block evicted for room: until then a miss here proves nothing. */
  private evictedUntil = 0;
  /** Every block announced is heard here (subscribed, and the blocked set loaded since). */
  protected complete = false;

  constructor(private readonly maxKeys: number) {}

  get size(): number {
    return this.until.size;
  }

  /** Whether a miss here means "not blocked" (the limiter asks Redis otherwise). */
  get listening(): boolean {
    return this.complete;
  }

  /**
   * How long until the address is admitted again: more than 0 while it is blocked, 0 when it
   * is not, undefined when this process cannot tell (not listening, or blocks were evicted).
   */
  retryAfterMs(key: string, nowMs: number): number | undefined {
    const until = this.until.get(key);
    if (until !== undefined) {
      if (until > nowMs) return until - nowMs;
      this.until.delete(key);
    }
    return this.complete && nowMs >= this.evictedUntil ? 0 : undefined;
  }

  /** A block this process found or heard of; a shorter one than already known changes nothing. */
  note(key: string, untilMs: number, nowMs: number): void {
    if (untilMs <= nowMs) return;
    const known = this.until.get(key);
    if (known !== undefined && known >= untilMs) return;
    this.until.delete(key);
    this.until.set(key, untilMs);
    while (this.until.size > this.maxKeys) {
      const [oldest, end] = this.until.entries().next().value as [string, number];
      this.until.delete(oldest);
      this.evictedUntil = Math.max(this.evictedUntil, end);
    }
    // Ended blocks at the front go as new ones arrive, so the map shrinks back after an attack.
    for (let i = 0; i < 2; i++) {
      const first = this.until.entries().next().value;
      if (!first || first[1] > nowMs) return;
      this.until.delete(first[0]);
    }
  }

  /** One announcement, `<until ms> <key>`; anything else is ignored. */
  protected heard(message: string, nowMs: number): void {
    const space = message.indexOf(' ');
    const untilMs = Number(message.slice(0, space));
    if (space > 0 && Number.isFinite(untilMs)) this.note(message.slice(space + 1), untilMs, nowMs);
  }

  /** Blocks loaded from Redis, longest first; `more`: the set held further ones, ending no later than the last. */
  protected loaded(loaded: {
    blocks: readonly { key: string; untilMs: number }[];
    more: boolean;
    nowMs: number;
  }): void {
    const { blocks, more, nowMs } = loaded;
    for (let i = blocks.length - 1; i >= 0; i--) {
      const block = blocks[i]!;
      this.note(block.key, block.untilMs, nowMs);
    }
    const last = blocks[blocks.length - 1];
    if (more && last) this.evictedUntil = Math.max(this.evictedUntil, last.untilMs);
  }
}

export interface RedisAddressBlocksOptions {
  /** The blocked set the failure script keeps (`<prefix>:authfail:blocked`). */
  key: string;
  /** Where the failure script announces blocks (the same name). */
  channel: string;
  maxKeys: number;
  log: Logger;
  now: () => number;
  /** How long the load may take before it is retried (the subscription stays up). */
  timeoutMs?: number;
  /** How long `start` waits for the first subscription before leaving it to go on in the background. */
  startWaitMs?: number;
}

/** The blocks of every process, heard on the channel over a connection of their own. */
export class RedisAddressBlocks extends AddressBlocks {
  private sub: RedisClient | undefined;
  private subscribed = false;
  /** Bumped by every dropped connection: a load begun before it proves nothing. */
  private epoch = 0;
  /** The subscription was lost since the last load: the next one is worth a line at info. */
  private recovering = false;
  private retry: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly opts: RedisAddressBlocksOptions,
  ) {
    super(opts.maxKeys);
  }

  /**
   * Subscribes and loads the blocked set. Resolves once listening or after `startWaitMs` (a
   * Redis that does not answer must not hold up the start; until then every request asks
   * Redis, and the subscription goes on in the background); never rejects.
   */
  start(): Promise<void> {
    const sub = this.redis.duplicate() as RedisClient;
    this.sub = sub;
    sub.on('error', (err: Error) => this.lost(err.message));
    sub.on('end', () => this.lost('connection closed'));
    // The client resubscribes before it is ready again; blocks announced meanwhile are in the set.
    sub.on('ready', () => {
      if (this.subscribed) void this.load();
    });
    let timer: NodeJS.Timeout | undefined;
    const wait = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.opts.startWaitMs ?? 5000)));
    return Promise.race([this.subscribe(sub), wait]).finally(() => clearTimeout(timer));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.complete = false;
    clearTimeout(this.retry);
    const sub = this.sub;
    this.sub = undefined;
    if (sub?.isOpen) await sub.close().catch(() => undefined);
    else sub?.destroy();
  }

  private async subscribe(sub: RedisClient): Promise<void> {
    for (let attempt = 0; !this.closed && !this.subscribed; attempt++) {
      try {
        if (!sub.isOpen) await sub.connect();
        await sub.subscribe(this.opts.channel, (message: string) => this.heard(message, this.opts.now()));
        this.subscribed = true;
      } catch (err) {
        this.lost((err as Error).message);
        if (attempt === 0) {
          this.opts.log.warn(
            { err: (err as Error).message },
            'token failure limits: cannot subscribe to blocked addresses; token requests read their address in Redis, retrying',
          );
        }
        await this.pause(1000);
      }
    }
    if (this.subscribed) await this.load();
  }

  /** The subscription dropped (or never came up): announcements may be missed until the next load. */
  private lost(reason: string): void {
    this.epoch++;
    if (this.closed) return;
    if (this.complete) {
      this.complete = false;
      this.recovering = true;
      this.opts.log.warn(
        { reason },
        'token failure limits: block announcements lost; token requests read their address in Redis until resubscribed',
      );
    }
    // An error that did not drop the connection brings no new "ready": load again now.
    if (this.subscribed && this.sub?.isReady) void this.load();
  }

  /** Loads the blocked set, again every second until it answers, while the subscription holds. */
  private async load(): Promise<void> {
    const epoch = this.epoch;
    for (let attempt = 0; ; attempt++) {
      const failure = await this.loadOnce(epoch);
      if (failure === undefined || this.closed || epoch !== this.epoch || !this.sub?.isReady) return;
      if (attempt === 0) {
        this.opts.log.warn({ reason: failure }, 'token failure limits: could not load the blocked addresses; retrying');
      }
      await this.pause(1000);
    }
  }

  /** One load; undefined when done (or no longer wanted), else why it failed. */
  private async loadOnce(epoch: number): Promise<string | undefined> {
    const nowMs = this.opts.now();
    const max = this.opts.maxKeys;
    const answer = await redisCommand(this.redis, this.opts.timeoutMs ?? 500, () =>
      this.redis.zRangeWithScores(this.opts.key, '+inf', `(${nowMs}`, {
        BY: 'SCORE',
        REV: true,
        LIMIT: { offset: 0, count: max + 1 },
      }),
    );
    if (this.closed || epoch !== this.epoch || !this.sub?.isReady) return undefined;
    if (!answer.ok) return answer.reason;
    const blocks = answer.value.map((e) => ({ key: e.value, untilMs: Number(e.score) }));
    this.loaded({ blocks: blocks.slice(0, max), more: blocks.length > max, nowMs });
    this.complete = true;
    const level = this.recovering ? 'info' : 'debug';
    this.recovering = false;
    this.opts.log[level]({ blocked: blocks.length }, 'token failure limits: listening for blocked addresses');
    return undefined;
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.retry = setTimeout(resolve, ms);
      this.retry.unref();
    });
  }
}
