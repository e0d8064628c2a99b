import type { Handler } from '../../services.js';
import { withHealth } from './server-health.js';
import { etag } from '../../http/support.js';
import { getAppServer as get } from '../registry.js';

/** GET /v1/servers/{serverId}. */
export const getAppServer: Handler<'getAppServer'> = async (req, ctx) => {
  const s = await get(ctx.services.db, ctx.auth.orgId, req.params.serverId);
  return { status: 200, body: withHealth(ctx.services, ctx.auth.orgId, [s])[0]!, headers: etag(s.version) };
};
