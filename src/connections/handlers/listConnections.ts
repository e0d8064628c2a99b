import { orgOf, pageOf } from '../../engine/handlers/support.js';
import type { Handler } from '../../engine/handlers/types.js';
import { listConnections as list } from '../connections.js';
import { parseStatuses } from '../statuses.js';

/** GET /v1/connections — optional filters serviceKey and statuses (comma-separated). */
export const listConnections: Handler = async (req, ctx) => {
  const { serviceKey, statuses } = req.query;
  const page = await list(ctx.services.db, orgOf(ctx), {
    serviceKey: typeof serviceKey === 'string' ? serviceKey : undefined,
    statuses: statuses === undefined ? undefined : parseStatuses(statuses),
  }, pageOf(req));
  return { status: 200, body: page };
};
