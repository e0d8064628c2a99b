import { access, constants } from 'node:fs/promises';
import type { Handler } from '../../services.js';
import { pingRedis } from '../../storage/redis.js';
import type { IsolationReport } from '../../containment/index.js';

const NO_STORE = { 'Cache-Control': 'no-store' };

/** Liveness: the process answers. */
export const getHealth: Handler<'getHealth'> = async () => ({ status: 200, body: { status: 'ok' }, headers: NO_STORE });

/**
 * Readiness: the process is not shutting down, the store answers a query, the data folder (blobs)
 * is writable, Redis (when configured) answers PING, and the code isolation in force is the one
 * CODE_ISOLATION asks for (always so in a process that started: `strict` refuses to start without
 * it). While the process drains (SIGTERM) it answers 503 with `draining: true`, whatever the checks.
 */
export const getReadiness: Handler<'getReadiness'> = async (_req, ctx) => {
  type Check = 'ok' | 'error';
  const checks: { store: Check; blobs: Check; isolation: Check; redis?: Check } = {
    store: 'ok',
    blobs: 'ok',
    isolation: isolationAsAsked(ctx.services.isolation) ? 'ok' : 'error',
  };
  const draining = ctx.services.draining;
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
  const ready = !draining && Object.values(checks).every((c) => c === 'ok');
  // Discovery's embeddings provider degrades ranking, never readiness: a detail, not a check.
  const semantic = ctx.services.gateway.semantic;
  const details = { isolation: ctx.services.isolation, ...(semantic ? { embeddings: semantic.status() } : {}) };
  return {
    status: ready ? 200 : 503,
    body: { status: ready ? 'ready' : 'not_ready', draining, checks, details },
    headers: NO_STORE,
  };
};

/** `strict` needs all three layers, `process` is the language and process layers, `auto` takes what the machine has. */
function isolationAsAsked(report: IsolationReport): boolean {
  if (report.mode === 'strict') return report.level === 'namespaces';
  if (report.mode === 'process') return report.level === 'process';
  return true;
}
