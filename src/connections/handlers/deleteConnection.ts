import { orgOf, parseIfMatch, stringParam } from '../../engine/handlers/support.js';
import type { Handler } from '../../engine/handlers/types.js';
import { deleteConnection as remove } from '../connections.js';

/** DELETE /v1/connections/{connectionId} — If-Match optional. */
export const deleteConnection: Handler = async (req, ctx) => {
  await remove(ctx.services.db, orgOf(ctx), stringParam(req, 'connectionId'), parseIfMatch(req));
  return { status: 204 };
};
