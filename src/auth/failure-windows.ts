/**
 * Rolling windows of failed client authentications at the token endpoints, one per key (a
 * source address, a client id, an organisation): in this process by default, in Redis sorted
 * sets with REDIS_URL so every process sees the same counts. The onEdit windows
 * (src/events/rate-windows.ts) admit a hit only while under their limit; these record every
 * failure and are read before the credentials are checked, so they are a store of their own.
 *
 * A window keeps at most `limit + 2` failure times per key (the newest): enough to tell "over
 * the limit", the one failure that crossed it, and when it ends, so an attacker hammering one
 * key holds a bounded list.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../config/logger.js';
import { redisCommand, type RedisClient } from '../storage/redis.js';

export interface WindowRule {
  /** Failures a key may have in a window; one more is over the limit. */
  limit: number;
  windowMs: number;
  /**
   * A key that reaches the limit is blocked: in Redis its end is kept in the blocked set and
   * announced to every process (address-blocks.ts). The address rule sets it.
   */
  announce?: boolean;
}

export interface WindowState {
  /** Failures of the key in (now - windowMs, now], counted up to limit + 2. */
  count: number;
  /** How long until the key has fewer than `limit` failures in its window; 0 when it has now. */
  retryAfterMs: number;
}

export interface FailureWindows {
  /** The key's failures in its window, without recording one. */
  peek(key: string, rule: WindowRule, nowMs: number): Promise<WindowState>;
  /** Records one failure of the key at `nowMs`; the state with it. */
  record(key: string, rule: WindowRule, nowMs: number): Promise<WindowState>;
}

const EMPTY: WindowState = { count: 0, retryAfterMs: 0 };

/** From the failure times still in the window, oldest first. */
function stateOf(times: readonly number[], rule: WindowRule, nowMs: number): WindowState {
  const count = times.length;
  if (count < rule.limit) return { count, retryAfterMs: 0 };
  // The count falls below the limit when the failure `count - limit` places from the oldest leaves.
  const leaves = (times[count - rule.limit] ?? nowMs) + rule.windowMs;
  return { count, retryAfterMs: Math.max(1, leaves - nowMs) };
}

/**
 * The in-process store. Bounded: at most `maxKeys` keys, the least recently failed forgotten
 * first (an attacker spraying made-up client ids evicts its own entries), and each record also
 * drops the oldest entries whose window has passed, so memory shrinks back after an attack.
 */
export class MemoryFailureWindows implements FailureWindows {
  /** Insertion order is recency: a key is re-inserted on every failure. */
  private readonly keys = new Map<string, number[]>();

  constructor(private readonly maxKeys: number) {}

  get size(): number {
    return this.keys.size;
  }

  peek(key: string, rule: WindowRule, nowMs: number): Promise<WindowState> {
    const times = this.keys.get(key);
    if (!times) return Promise.resolve(EMPTY);
    return Promise.resolve(stateOf(live(times, rule.windowMs, nowMs), rule, nowMs));
  }

  record(key: string, rule: WindowRule, nowMs: number): Promise<WindowState> {
    const kept = live(this.keys.get(key) ?? [], rule.windowMs, nowMs);
    const drop = Math.max(0, kept.length - rule.limit - 1);
    // concat makes an array of exactly this length (push would reserve spare room in every key).
    const times = (drop ? kept.slice(drop) : kept).concat(nowMs);
    this.keys.delete(key);
    this.keys.set(ownCopy(key), times);
    this.prune(rule.windowMs, nowMs);
    return Promise.resolve(stateOf(times, rule, nowMs));
  }

  /** Over the bound: the least recently failed keys go; then up to two stale ones at the front. */
  private prune(windowMs: number, nowMs: number): void {
    while (this.keys.size > this.maxKeys) this.keys.delete(this.keys.keys().next().value as string);
    for (let i = 0; i < 2; i++) {
      const oldest = this.keys.entries().next().value;
      if (!oldest) return;
      const [key, times] = oldest;
      if ((times[times.length - 1] ?? 0) > nowMs - windowMs) return;
      this.keys.delete(key);
    }
  }
}

/**
 * A key of our own: a client id parsed out of a request body can be a slice that keeps the
 * whole body alive (V8 sliced strings), so a kept key would pin up to a body limit's worth of
 * memory per key.
 */
function ownCopy(key: string): string {
  return Buffer.from(key, 'utf8').toString('utf8');
}

function live(times: number[], windowMs: number, nowMs: number): number[] {
  const from = nowMs - windowMs;
  let i = 0;
  while (i < times.length && (times[i] ?? 0) <= from) i++;
  return i === 0 ? times : times.slice(i);
}

/**
 * KEYS[1] the window; ARGV: now, windowMs, limit, member. Trims to limit + 2, expires with the
 * window. With KEYS[2] (the blocked set) and ARGV key, channel: a window at or over its limit
 * blocks the key until it falls below the limit again (stateOf's rule); a block that begins or
 * grows is written to the set and published as `<until> <key>`, in the same atomic step, so a
 * process that subscribed and then loads the set misses none.
 */
const RECORD = `
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
redis.call('ZADD', KEYS[1], now, ARGV[4])
local n = redis.call('ZCARD', KEYS[1])
if n > limit + 2 then
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - limit - 3)
  n = limit + 2
end
redis.call('PEXPIRE', KEYS[1], window)
local times = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
if KEYS[2] and n >= limit then
  local ends = tonumber(times[2 * (n - limit) + 2]) + window
  local known = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[5]))
  if ends > now and (not known or ends > known) then
    redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
    redis.call('ZADD', KEYS[2], ends, ARGV[5])
    if redis.call('PTTL', KEYS[2]) < ends - now then redis.call('PEXPIRE', KEYS[2], ends - now) end
    redis.call('PUBLISH', ARGV[6], string.format('%.0f %s', ends, ARGV[5]))
  end
end
return times`;

/** The script answers member, score, member, score…; the scores are the failure times. */
function timesOf(reply: unknown): number[] {
  const flat = Array.isArray(reply) ? (reply as unknown[]) : [];
  const times: number[] = [];
  for (let i = 1; i < flat.length; i += 2) times.push(Number(flat[i]));
  return times;
}

export interface RedisFailureWindowsOptions {
  /** Key prefix, e.g. `switchyard:authfail:`. */
  prefix: string;
  log: Logger;
  /** How long one command may take before the limits are skipped for that request. */
  timeoutMs?: number;
  /** Where blocks of keys whose rule announces them are kept and published (address-blocks.ts). */
  blocks?: { key: string; channel: string };
}

/**
 * Redis sorted sets, one per key, each changed by one atomic script: every process counts the
 * same failures. A Redis that does not answer skips the limits for that request (fail open,
 * logged at most once a minute): token issuing does not depend on Redis being up.
 */
export function redisFailureWindows(redis: RedisClient, opts: RedisFailureWindowsOptions): FailureWindows {
  const timeoutMs = opts.timeoutMs ?? 500;
  let warnedAt = 0;
  /** The failure times a command answers, or none when Redis did not answer (then no limit applies). */
  async function times(run: () => Promise<number[]>): Promise<number[]> {
    const answer = await redisCommand(redis, timeoutMs, run);
    if (answer.ok) return answer.value;
    if (Date.now() - warnedAt > 60_000) {
      warnedAt = Date.now();
      opts.log.warn({ reason: answer.reason }, 'token failure limits skipped: Redis did not answer');
    }
    return [];
  }
  return {
    // A token request peeks at its address only while the process cannot tell from its own
    // map of blocks (address-blocks.ts): one plain read command, no script, writes nothing.
    async peek(key, rule, nowMs) {
      const read = () =>
        redis
          .zRangeByScoreWithScores(`${opts.prefix}${key}`, `(${nowMs - rule.windowMs}`, '+inf', {
            LIMIT: { offset: 0, count: rule.limit + 2 },
          })
          .then((entries) => entries.map((e) => Number(e.score)));
      return stateOf(await times(read), rule, nowMs);
    },
    async record(key, rule, nowMs) {
      const member = `${nowMs}-${randomBytes(6).toString('hex')}`;
      const args = [String(nowMs), String(rule.windowMs), String(rule.limit), member];
      const keys = [`${opts.prefix}${key}`];
      if (rule.announce && opts.blocks) {
        keys.push(opts.blocks.key);
        args.push(key, opts.blocks.channel);
      }
      const write = () => redis.eval(RECORD, { keys, arguments: args }).then(timesOf);
      return stateOf(await times(write), rule, nowMs);
    },
  };
}
