import { etag, orgOf, stringParam } from '../../engine/handlers/support.js';
import type { Handler } from '../../engine/handlers/types.js';
import { getConnection as get } from '../connections.js';

/** GET /v1/connections/{connectionId}. */
export const getConnection: Handler = async (req, ctx) => {
  const c = await get(ctx.services.db, orgOf(ctx), stringParam(req, 'connectionId'));
  return { status: 200, body: c, headers: etag(c.version) };
};
