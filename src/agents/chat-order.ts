/**
 * Messages on one chat run one at a time, in arrival order (openapi/triggers.yaml
 * `sendChannelMessage`: "messages to the same chat are processed one at a time in arrival
 * order"), across processes when REDIS_URL is set.
 * - In one process: a promise chain per chat, dropped when the chat goes idle.
 * - With Redis: a fair ticket lock per chat. INCR hands out tickets; `serving` says whose turn
 *   it is; the holder keeps a lease key alive while it runs and, when done, advances `serving`
 *   (only if it is still its own) and publishes a wake-up. A ticket whose holder died (no lease
 *   for longer than the lease) is skipped by a waiter, so a dead process never blocks a chat.
 *   Every key expires after a day of idleness.
 */
import type { Logger } from '../config/logger.js';
import type { RedisClient } from '../storage/redis.js';

export interface ChatOrder {
  /** Runs fn when every earlier message of this chat (in arrival order) has finished; never two at once per chat. */
  run<T>(chatId: string, fn: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export class InProcessChatOrder implements ChatOrder {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(chatId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(chatId) ?? Promise.resolve();
    const result = previous.then(fn, fn);
    const tail = result.catch(() => undefined);
    this.tails.set(chatId, tail);
    void tail.then(() => {
      if (this.tails.get(chatId) === tail) this.tails.delete(chatId);
    });
    return result;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

const IDLE_EXPIRY_S = 86_400;
const POLL_MS = 200;

/** Advance `serving` from `expected` to `expected + 1` only if it still is `expected`. */
const ADVANCE = `
local cur = tonumber(redis.call('GET', KEYS[1]) or '1')
if cur == tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], cur + 1, 'EX', ARGV[2])
  redis.call('DEL', KEYS[2])
  redis.call('PUBLISH', KEYS[3], ARGV[3])
  return 1
end
return 0`;

export interface RedisChatOrderOptions {
  prefix: string;
  leaseMs?: number | undefined;
  log: Logger;
}

export class RedisChatOrder implements ChatOrder {
  private readonly leaseMs: number;
  private subscriber: RedisClient | undefined;
  private subscribing: Promise<void> | undefined;
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly local = new InProcessChatOrder();
  private readonly renewals = new Set<NodeJS.Timeout>();

  constructor(private readonly redis: RedisClient, private readonly opts: RedisChatOrderOptions) {
    this.leaseMs = opts.leaseMs ?? 15_000;
  }

  private keys(chatId: string) {
    const base = `${this.opts.prefix}chat:${chatId}`;
    return { ticket: `${base}:ticket`, serving: `${base}:serving`, lease: `${base}:lease`, channel: `${this.opts.prefix}chat-order` };
  }

  /** One subscriber connection per process, shared by every waiting chat. */
  private async subscribe(): Promise<void> {
    this.subscribing ??= (async () => {
      const sub = this.redis.duplicate();
      sub.on('error', (err: Error) => this.opts.log.warn({ err: err.message }, 'chat order: redis subscriber error'));
      await sub.connect();
      await sub.subscribe(`${this.opts.prefix}chat-order`, (chatId: string) => {
        for (const wake of this.waiters.get(chatId) ?? []) wake();
      });
      this.subscriber = sub;
    })();
    return this.subscribing;
  }

  /** Waits for a wake-up of this chat or the poll interval, whichever comes first. */
  private nap(chatId: string): Promise<void> {
    return new Promise((resolve) => {
      let set = this.waiters.get(chatId);
      if (!set) this.waiters.set(chatId, (set = new Set()));
      const done = () => {
        clearTimeout(timer);
        set.delete(done);
        if (set.size === 0) this.waiters.delete(chatId);
        resolve();
      };
      const timer = setTimeout(done, POLL_MS);
      set.add(done);
    });
  }

  run<T>(chatId: string, fn: () => Promise<T>): Promise<T> {
    // Tickets are taken in call order within this process, so local arrival order holds too.
    return this.local.run(chatId, async () => {
      const k = this.keys(chatId);
      const ticket = await this.redis.incr(k.ticket);
      await this.redis.expire(k.ticket, IDLE_EXPIRY_S);
      let release: (() => Promise<void>) | undefined;
      const waiting = this.acquire(chatId, ticket).then((r) => (release = r));
      return waiting.then(async () => {
        try {
          return await fn();
        } finally {
          await release!();
        }
      });
    });
  }

  private async acquire(chatId: string, ticket: number): Promise<() => Promise<void>> {
    const k = this.keys(chatId);
    await this.subscribe();
    let leaseMissingSince: { serving: number; at: number } | undefined;
    for (;;) {
      const serving = Number((await this.redis.get(k.serving)) ?? '1');
      if (serving === ticket || serving > ticket) break;
      // The ticket being served: is its holder alive?
      const holder = await this.redis.get(k.lease);
      if (holder !== null && Number(holder) === serving) {
        leaseMissingSince = undefined;
      } else if (!leaseMissingSince || leaseMissingSince.serving !== serving) {
        leaseMissingSince = { serving, at: Date.now() };
      } else if (Date.now() - leaseMissingSince.at > this.leaseMs) {
        this.opts.log.warn({ chatId, ticket: serving }, 'chat order: skipping a message whose process stopped');
        await this.redis.eval(ADVANCE, { keys: [k.serving, k.lease, k.channel], arguments: [String(serving), String(IDLE_EXPIRY_S), chatId] });
        leaseMissingSince = undefined;
        continue;
      }
      await this.nap(chatId);
    }
    await this.redis.set(k.lease, String(ticket), { PX: this.leaseMs });
    const renew = setInterval(() => {
      void this.redis.set(k.lease, String(ticket), { PX: this.leaseMs }).catch(() => undefined);
    }, Math.max(50, Math.floor(this.leaseMs / 3)));
    renew.unref();
    this.renewals.add(renew);
    return async () => {
      clearInterval(renew);
      this.renewals.delete(renew);
      await this.redis.eval(ADVANCE, { keys: [k.serving, k.lease, k.channel], arguments: [String(ticket), String(IDLE_EXPIRY_S), chatId] });
    };
  }

  /** Stops lease renewals (turns still running here lose the chat after the lease) and the subscriber. */
  async close(): Promise<void> {
    for (const t of this.renewals) clearInterval(t);
    this.renewals.clear();
    if (this.subscribing) await this.subscribing.catch(() => undefined);
    if (this.subscriber) await this.subscriber.quit().catch(() => undefined);
    this.subscriber = undefined;
    this.subscribing = undefined;
  }
}

export function createChatOrder(redis: RedisClient | undefined, opts: RedisChatOrderOptions): ChatOrder {
  return redis ? new RedisChatOrder(redis, opts) : new InProcessChatOrder();
}
