import type { Handler } from '../../services.js';
import { etag, requireIfMatch } from '../../http/support.js';
import { updateAppServer as update } from '../registry.js';

/** PATCH /v1/servers/{serverId} — If-Match is required. */
export const updateAppServer: Handler<'updateAppServer'> = async (req, ctx) => {
  const expected = requireIfMatch(req);
  const s = await update(ctx.services.db, ctx.auth.orgId, req.params.serverId, expected, req.body);
  ctx.services.gateway.catalog.forgetOrg(ctx.auth.orgId); // this process sees it at once
  return { status: 200, body: s, headers: etag(s.version) };
};
