import type { Handler } from '../../services.js';
import { parseIfMatch } from '../../http/support.js';
import { deleteConnection as remove } from '../connections.js';

/** DELETE /v1/connections/{connectionId} — If-Match optional. */
export const deleteConnection: Handler<'deleteConnection'> = async (req, ctx) => {
  await remove(ctx.services.db, ctx.auth.orgId, req.params.connectionId, parseIfMatch(req));
  return { status: 204 };
};
