import { access, constants } from 'node:fs/promises';
import type { Handler } from '../types.js';

const NO_STORE = { 'Cache-Control': 'no-store' };

/** Liveness: the process answers. */
export const getHealth: Handler<'getHealth'> = async () => ({ status: 200, body: { status: 'ok' }, headers: NO_STORE });

/** Readiness: the store answers a query and the data folder (blobs) is writable. */
export const getReadiness: Handler<'getReadiness'> = async (_req, ctx) => {
  const checks = { store: 'ok' as 'ok' | 'error', blobs: 'ok' as 'ok' | 'error' };
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
  const ready = checks.store === 'ok' && checks.blobs === 'ok';
  return { status: ready ? 200 : 503, body: { status: ready ? 'ready' : 'not_ready', checks }, headers: NO_STORE };
};
