/**
 * Pending discovers shared by the service's processes (usage.ts): with REDIS_URL, a caller's
 * capabilities_discover and its next tools/call may be served by different processes (behind a
 * load balancer, or the service and a worker), so the pending request is kept in Redis, one key
 * per caller that expires with the learning window. A call takes it with GETDEL: whichever
 * process serves the call, the pair is recorded once.
 *
 * Redis never holds a caller up: a command waits at most REDIS_WAIT_MS, and while the client is
 * not connected nothing is sent (the pair is not learned; a warning at most once a minute).
 */
import type { Logger } from '../../config/logger.js';
import { redisCommand, type RedisClient } from '../../storage/redis.js';

/** A discover waiting for its caller's next tool call. */
export interface Pending {
  request: string;
  /** Sorted analysed terms of the request (usage.ts `termsOf`). */
  terms: string[];
  /** When it was made, in milliseconds. */
  at: number;
}

/** Where pending discovers wait when they are shared (usage.ts keeps them in memory otherwise). */
export interface SharedPending {
  /** Notes the caller's latest discover, replacing an earlier one; gone after `ttlMs`. */
  put(orgId: string, caller: string, pending: Pending, ttlMs: number): Promise<void>;
  /** Takes the caller's pending discover: no process gets it again. */
  take(orgId: string, caller: string): Promise<Pending | undefined>;
}

const REDIS_WAIT_MS = 250;
const WARN_EVERY_MS = 60_000;

function parse(raw: string | null): Pending | undefined {
  if (!raw) return undefined;
  try {
    const p = JSON.parse(raw) as Partial<Pending>;
    if (
      typeof p.request !== 'string' ||
      typeof p.at !== 'number' ||
      !Array.isArray(p.terms) ||
      !p.terms.every((t) => typeof t === 'string')
    )
      return undefined;
    return { request: p.request, terms: p.terms, at: p.at };
  } catch {
    return undefined;
  }
}

export class RedisPending implements SharedPending {
  private lastWarn = -Infinity;

  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    private readonly log: Logger,
  ) {}

  async put(orgId: string, caller: string, pending: Pending, ttlMs: number): Promise<void> {
    await this.command('note', () =>
      this.client.set(this.key(orgId, caller), JSON.stringify(pending), { PX: Math.max(1, Math.ceil(ttlMs)) }),
    );
  }

  async take(orgId: string, caller: string): Promise<Pending | undefined> {
    return parse((await this.command('take', () => this.client.getDel(this.key(orgId, caller)))) ?? null);
  }

  private key(orgId: string, caller: string): string {
    return `${this.prefix}:discovery:pending:${encodeURIComponent(orgId)}:${encodeURIComponent(caller)}`;
  }

  /**
   * Runs a command within REDIS_WAIT_MS (storage/redis.ts `redisCommand`); undefined, and a warning, without an answer.
   */
  private async command<T>(what: string, run: () => Promise<T>): Promise<T | undefined> {
    const answer = await redisCommand(this.client, REDIS_WAIT_MS, run);
    if (answer.ok) return answer.value;
    this.warn(what, answer.reason);
    return undefined;
  }

  private warn(what: string, reason: string): void {
    const now = Date.now();
    if (now - this.lastWarn < WARN_EVERY_MS) return;
    this.lastWarn = now;
    this.log.warn(
      { reason },
      `discovery learning: could not ${what} a pending discover in Redis; that use is not learned`,
    );
  }
}
