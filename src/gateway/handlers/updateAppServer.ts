import { etag, orgOf, requireIfMatch, stringParam } from '../../engine/handlers/support.js';
import type { Handler } from '../../engine/handlers/types.js';
import { updateAppServer as update, type AppServerPatch } from '../registry.js';

/** PATCH /v1/servers/{serverId} — If-Match is required. */
export const updateAppServer: Handler = async (req, ctx) => {
  const expected = requireIfMatch(req);
  const s = await update(ctx.services.db, orgOf(ctx), stringParam(req, 'serverId'), expected, req.body as AppServerPatch);
  return { status: 200, body: s, headers: etag(s.version) };
};
