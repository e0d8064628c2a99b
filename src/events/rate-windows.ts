/**
 * The onEdit window (spec "Limits": 2 executions per rolling 60 s per item or file; excess
 * dropped, not queued), shared by every process: a row per key in the store
 * (`event_rate_windows`, hits as epoch-ms JSON), or a Redis sorted set per key with REDIS_URL.
 * `admit` is atomic across processes in both.
 */
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { RedisClient } from '../storage/redis.js';

export interface RateWindows {
  /** Admits one hit for `key` at `nowMs` when fewer than `limit` hits fall in (nowMs - windowMs, nowMs]. */
  admit(key: string, limit: number, windowMs: number, nowMs?: number): Promise<boolean>;
}

export function storeRateWindows(db: Knex): RateWindows {
  return {
    admit(key, limit, windowMs, nowMs = Date.now()) {
      return db.transaction(async (trx) => {
        // Write first: it takes sqlite's write lock (a read-then-write transaction can fail to
        // upgrade) and PostgreSQL's row lock, so concurrent admits of one key queue here.
        await trx.raw('INSERT INTO event_rate_windows (key, hits, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET updated_at = excluded.updated_at', [key, '[]', nowMs]);
        const row = (await trx('event_rate_windows').where({ key }).first('hits')) as { hits: string };
        const hits = (JSON.parse(row.hits) as number[]).filter((t) => t > nowMs - windowMs);
        const admitted = hits.length < limit;
        if (admitted) hits.push(nowMs);
        await trx('event_rate_windows').where({ key }).update({ hits: JSON.stringify(hits) });
        return admitted;
      });
    },
  };
}

/** Rows whose window has passed (housekeeping). */
export async function pruneRateWindows(db: Knex, olderThanMs: number): Promise<number> {
  return db('event_rate_windows').where('updated_at', '<', olderThanMs).delete();
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
      const result = await redis.eval(ADMIT, { keys: [`${prefix}onedit:${key}`], arguments: [String(nowMs), String(windowMs), String(limit), member] });
      return Number(result) === 1;
    },
  };
}
