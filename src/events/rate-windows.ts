/**
 * The onEdit window (spec "Limits": 2 executions per rolling 60 s per item or file; excess
 * dropped, not queued), shared by every process: on the item's row in the store (slideWindow,
 * inside the edit's transaction), or a Redis sorted set per key with REDIS_URL (one Lua script,
 * atomic). Both hold across processes.
 */
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../storage/redis.js';

export interface RateWindows {
  /** Admits one hit for `key` at `nowMs` when fewer than `limit` hits fall in (nowMs - windowMs, nowMs]. */
  admit(key: string, limit: number, windowMs: number, nowMs?: number): Promise<boolean>;
}

/**
 * The store's window, kept on the row the edit already holds (`collection_items.edit_hits`):
 * the hits still in the window, plus this one when admitted.
 */
export function slideWindow(
  hits: readonly number[],
  limit: number,
  windowMs: number,
  nowMs: number,
): { admitted: boolean; hits: number[] } {
  const kept = hits.filter((t) => t > nowMs - windowMs);
  const admitted = kept.length < limit;
  if (admitted) kept.push(nowMs);
  return { admitted, hits: kept };
}

const ADMIT = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[1]) - tonumber(ARGV[2]))
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0`;

export function redisRateWindows(redis: RedisClient, prefix = 'switchyard:rw:'): RateWindows {
  return {
    async admit(key, limit, windowMs, nowMs = Date.now()) {
      const member = `${nowMs}-${randomBytes(6).toString('hex')}`;
      const result = await redis.eval(ADMIT, {
        keys: [`${prefix}onedit:${key}`],
        arguments: [String(nowMs), String(windowMs), String(limit), member],
      });
      return Number(result) === 1;
    },
  };
}
