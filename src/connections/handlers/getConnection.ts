import type { Handler } from '../../services.js';
import { etag } from '../../http/support.js';
import { getConnection as get } from '../connections.js';

/** GET /v1/connections/{connectionId}. */
export const getConnection: Handler<'getConnection'> = async (req, ctx) => {
  const c = await get(ctx.services.db, ctx.auth.orgId, req.params.connectionId);
  return { status: 200, body: c, headers: etag(c.version) };
};
