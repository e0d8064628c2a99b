import type { Handler } from '../../services.js';
import { parseIfMatch } from '../../http/support.js';
import { deleteAppServer as remove } from '../registry.js';

/** DELETE /v1/servers/{serverId} — If-Match optional; a server with children → 409. */
export const deleteAppServer: Handler<'deleteAppServer'> = async (req, ctx) => {
  await remove(ctx.services.db, ctx.auth.orgId, req.params.serverId, parseIfMatch(req));
  return { status: 204 };
};
