import { orgOf, parseIfMatch, stringParam } from '../../engine/handlers/support.js';
import type { Handler } from '../../engine/handlers/types.js';
import { deleteAppServer as remove } from '../registry.js';

/** DELETE /v1/servers/{serverId} — If-Match optional; a server with children → 409. */
export const deleteAppServer: Handler = async (req, ctx) => {
  await remove(ctx.services.db, orgOf(ctx), stringParam(req, 'serverId'), parseIfMatch(req));
  return { status: 204 };
};
