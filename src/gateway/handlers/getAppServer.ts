import { etag, orgOf, stringParam } from '../../engine/handlers/support.js';
import type { Handler } from '../../engine/handlers/types.js';
import { getAppServer as get } from '../registry.js';

/** GET /v1/servers/{serverId}. */
export const getAppServer: Handler = async (req, ctx) => {
  const s = await get(ctx.services.db, orgOf(ctx), stringParam(req, 'serverId'));
  return { status: 200, body: s, headers: etag(s.version) };
};
