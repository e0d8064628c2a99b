/**
 * Messages on one chat run one at a time, in arrival order (openapi/triggers.yaml
 * `sendChannelMessage`: "messages to the same chat are processed one at a time in arrival
 * order"), across processes when REDIS_URL is set.
 * - In one process: a promise chain per chat, dropped when the chat goes idle.
 * - With Redis: a fair (FIFO) ticket lock per chat. INCR hands out tickets; `serving` says whose
 *   turn it is; the holder keeps a lease key alive while it runs and, when done, advances
 *   `serving` (only if it is still its own) and publishes a wake-up, so waiters need not poll
 *   fast (a slow poll stays as the safety net for a lost message). A ticket whose holder died
 *   (no lease for longer than the lease) is skipped by a waiter, so a dead process never blocks
 *   a chat. Every key expires after a day of idleness.
 */
import type { Logger } from '../config/logger.js';
import type { RedisClient } from '../storage/redis.js';

export interface ChatOrder {
  /** Runs fn when every earlier message of this chat (in arrival order) has finished; never two at once per chat. */
  run<T>(chatId: string, fn: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** Per-chat promise chains; a chat's entry is removed once its last call has settled. */
export class InProcessChatOrder implements ChatOrder {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(chatId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(chatId) ?? Promise.resolve();
    const result = previous.then(fn);
    const tail = result.catch(() => undefined);
    this.tails.set(chatId, tail);
    void tail.then(() => {
      if (this.tails.get(chatId) === tail) this.tails.delete(chatId);
    });
    return result;
  }

  /** Number of chats with calls running or waiting (for tests: idle chats leave nothing). */
  get activeChats(): number {
    return this.tails.size;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

const IDLE_EXPIRY_S = 86_400;
const POLL_MS = 200;

/**
 * KEYS ticket, serving. Takes the next ticket and refreshes both expiries together, so the two
 * counters always expire at once. Ticket 1 means a fresh (or expired) chat: serving restarts.
 */
const TAKE = `
local t = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[1])
if t == 1 then redis.call('SET', KEYS[2], 1, 'EX', ARGV[1])
else redis.call('EXPIRE', KEYS[2], ARGV[1]) end
return t`;

/** KEYS serving, lease. Sets (or renews) the lease only while it is still this ticket's turn. */
const HOLD = `
if tonumber(redis.call('GET', KEYS[1]) or '1') ~= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return 1`;

/**
 * KEYS serving, lease, ticket, channel. Advances `serving` past ARGV[1] only if it still equals
 * it (compare-and-set). ARGV[4] = '1' marks a skip of a dead holder: then only if that ticket
 * holds no lease, so a holder that claimed its turn at the last moment is not skipped.
 */
const ADVANCE = `
local cur = tonumber(redis.call('GET', KEYS[1]) or '1')
if cur ~= tonumber(ARGV[1]) then return 0 end
if ARGV[4] == '1' and redis.call('GET', KEYS[2]) == ARGV[1] then return 0 end
redis.call('SET', KEYS[1], cur + 1, 'EX', ARGV[2])
redis.call('EXPIRE', KEYS[3], ARGV[2])
redis.call('DEL', KEYS[2])
redis.call('PUBLISH', KEYS[4], ARGV[3])
return 1`;

export interface RedisChatOrderOptions {
  /** Key and channel prefix, e.g. `switchyard:`. */
  prefix: string;
  /** How long a turn's holder may go unheard before waiters skip it (default 15 s). */
  leaseMs?: number | undefined;
  log: Logger;
}

export class RedisChatOrder implements ChatOrder {
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly channel: string;
  private subscriber: RedisClient | undefined;
  private subscribing: Promise<void> | undefined;
  private readonly waiters = new Map<string, Set<() => void>>();
  /** Per chat, the last ticket request of this process: tickets are taken in call order. */
  private readonly taking = new Map<string, Promise<unknown>>();
  private readonly renewals = new Set<NodeJS.Timeout>();

  constructor(
    private readonly redis: RedisClient,
    private readonly opts: RedisChatOrderOptions,
  ) {
    this.leaseMs = opts.leaseMs ?? 15_000;
    this.pollMs = Math.min(POLL_MS, Math.max(20, Math.floor(this.leaseMs / 3)));
    this.channel = `${opts.prefix}chat-order`;
  }

  private keys(chatId: string) {
    const base = `${this.opts.prefix}chat:${chatId}`;
    return { ticket: `${base}:ticket`, serving: `${base}:serving`, lease: `${base}:lease` };
  }

  async run<T>(chatId: string, fn: () => Promise<T>): Promise<T> {
    const release = await this.acquire(chatId);
    try {
      return await fn();
    } finally {
      await release();
    }
  }

  /** Chained per chat so that calls made in order here get tickets in that order. */
  private takeTicket(chatId: string): Promise<number> {
    const k = this.keys(chatId);
    const previous = this.taking.get(chatId) ?? Promise.resolve();
    const ticket = previous.then(async () =>
      Number(await this.redis.eval(TAKE, { keys: [k.ticket, k.serving], arguments: [String(IDLE_EXPIRY_S)] })),
    );
    const tail = ticket.catch(() => undefined);
    this.taking.set(chatId, tail);
    void tail.then(() => {
      if (this.taking.get(chatId) === tail) this.taking.delete(chatId);
    });
    return ticket;
  }

  /**
   * The lower half of run: takes a ticket now (in call order), waits for its turn and holds the
   * lease; resolves to the release, which must be called exactly once.
   */
  async acquire(chatId: string): Promise<() => Promise<void>> {
    const k = this.keys(chatId);
    const ticketPromise = this.takeTicket(chatId);
    await this.subscribe();
    let ticket = await ticketPromise;
    let missing: { serving: number; since: number } | undefined;
    for (;;) {
      const wake = this.wakeup(chatId); // registered before reading, so no wake-up is missed
      const [servingRaw, lease] = await this.redis.mGet([k.serving, k.lease]);
      const serving = Number(servingRaw ?? '1');
      if (serving === ticket) {
        wake.cancel();
        if (await this.hold(k, ticket)) break;
        continue; // skipped between the read and the hold: the next round sees it
      }
      if (serving > ticket) {
        // Skipped as dead (this process went unheard for a whole lease): queue again rather
        // than run beside the current holder.
        this.opts.log.warn({ chatId, ticket }, 'chat order: turn was skipped, queueing again');
        ticket = await this.takeTicket(chatId);
        wake.cancel();
        continue;
      }
      if (lease !== null && Number(lease) === serving) missing = undefined;
      else if (missing?.serving !== serving) missing = { serving, since: Date.now() };
      else if (Date.now() - missing.since > this.leaseMs) {
        this.opts.log.warn({ chatId, ticket: serving }, 'chat order: skipping a message whose process stopped');
        await this.advance(chatId, serving, { skip: true });
        missing = undefined;
        wake.cancel();
        continue;
      }
      await wake.promise;
    }
    return this.holdWhileRunning(chatId, ticket);
  }

  private async hold(k: { serving: string; lease: string }, ticket: number): Promise<boolean> {
    return (
      Number(
        await this.redis.eval(HOLD, { keys: [k.serving, k.lease], arguments: [String(ticket), String(this.leaseMs)] }),
      ) === 1
    );
  }

  private advance(chatId: string, ticket: number, { skip }: { skip: boolean }): Promise<unknown> {
    const k = this.keys(chatId);
    return this.redis.eval(ADVANCE, {
      keys: [k.serving, k.lease, k.ticket, this.channel],
      arguments: [String(ticket), String(IDLE_EXPIRY_S), chatId, skip ? '1' : '0'],
    });
  }

  /** Renews the lease every third of it while fn runs; the release advances the turn. */
  private holdWhileRunning(chatId: string, ticket: number): () => Promise<void> {
    const k = this.keys(chatId);
    let warned = false;
    const renew = setInterval(
      () => {
        this.hold(k, ticket).then(
          (held) => {
            if (!held && !warned)
              this.opts.log.warn({ chatId, ticket }, 'chat order: lost the turn while running (lease ran out)');
            warned ||= !held;
          },
          (err: Error) => this.opts.log.warn({ chatId, err: err.message }, 'chat order: lease renewal failed'),
        );
      },
      Math.max(20, Math.floor(this.leaseMs / 3)),
    );
    renew.unref();
    this.renewals.add(renew);
    return async () => {
      clearInterval(renew);
      this.renewals.delete(renew);
      await this.advance(chatId, ticket, { skip: false });
    };
  }

  /** One subscriber connection per instance, shared by every waiting chat; polling if it fails. */
  private subscribe(): Promise<void> {
    this.subscribing ??= (async () => {
      const sub = this.redis.duplicate();
      sub.on('error', (err: Error) => this.opts.log.warn({ err: err.message }, 'chat order: redis subscriber error'));
      this.subscriber = sub;
      try {
        await sub.connect();
        await sub.subscribe(this.channel, (chatId: string) => {
          for (const wake of this.waiters.get(chatId) ?? []) wake();
        });
      } catch (err) {
        this.opts.log.warn({ err: (err as Error).message }, 'chat order: no wake-ups, polling');
      }
    })();
    return this.subscribing;
  }

  /** Resolves on a wake-up for this chat or after the poll interval, whichever comes first. */
  private wakeup(chatId: string): { promise: Promise<void>; cancel: () => void } {
    let set = this.waiters.get(chatId);
    if (!set) this.waiters.set(chatId, (set = new Set()));
    const waiters = set;
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    const done = () => {
      clearTimeout(timer);
      waiters.delete(done);
      if (waiters.size === 0 && this.waiters.get(chatId) === waiters) this.waiters.delete(chatId);
      resolve();
    };
    const timer = setTimeout(done, this.pollMs);
    waiters.add(done);
    return { promise, cancel: done };
  }

  /** Stops lease renewals (turns still running here lose the chat after the lease) and the subscriber. */
  async close(): Promise<void> {
    for (const t of this.renewals) clearInterval(t);
    this.renewals.clear();
    const sub = this.subscriber;
    if (this.subscribing) await this.subscribing;
    this.subscriber = undefined;
    this.subscribing = undefined;
    if (sub?.isOpen) await sub.close().catch(() => undefined);
    else sub?.destroy();
  }
}

export function createChatOrder(redis: RedisClient | undefined, opts: RedisChatOrderOptions): ChatOrder {
  return redis ? new RedisChatOrder(redis, opts) : new InProcessChatOrder();
}
