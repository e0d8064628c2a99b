import { access, constants } from 'node:fs/promises';
import type { Handler } from '../../services.js';
import { pingRedis } from '../../storage/redis.js';

const NO_STORE = { 'Cache-Control': 'no-store' };

/** Liveness: the process answers. */
export const getHealth: Handler<'getHealth'> = async () => ({ status: 200, body: { status: 'ok' }, headers: NO_STORE });

/** Readiness: the store answers a query, the data folder (blobs) is writable, Redis (when configured) answers PING. */
export const getReadiness: Handler<'getReadiness'> = async (_req, ctx) => {
  type Check = 'ok' | 'error';
  const checks: { store: Check; blobs: Check; redis?: Check } = { store: 'ok', blobs: 'ok' };
  try {
    await ctx.services.db.raw('select 1');
  } catch (err) {
    ctx.log.warn({ err }, 'readiness: store check failed');
    checks.store = 'error';
  }
  try {
    await access(ctx.services.config.dataDir, constants.W_OK);
  } catch (err) {
    ctx.log.warn({ err }, 'readiness: data folder is not writable');
    checks.blobs = 'error';
  }
  if (ctx.services.redis) checks.redis = (await pingRedis(ctx.services.redis)) ? 'ok' : 'error';
  const ready = Object.values(checks).every((c) => c === 'ok');
  // Discovery's embeddings provider degrades ranking, never readiness: a detail, not a check.
  const semantic = ctx.services.gateway.semantic;
  const details = { isolation: ctx.services.isolation, ...(semantic ? { embeddings: semantic.status() } : {}) };
  return {
    status: ready ? 200 : 503,
    body: { status: ready ? 'ready' : 'not_ready', checks, details },
    headers: NO_STORE,
  };
};
