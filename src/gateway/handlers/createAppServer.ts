import { etag, orgOf } from '../../engine/handlers/support.js';
import type { Handler } from '../../engine/handlers/types.js';
import { createAppServer as create, type AppServerCreate } from '../registry.js';

/** POST /v1/servers — registers an application server path (duplicate path → 409). */
export const createAppServer: Handler = async (req, ctx) => {
  const s = await create(ctx.services.db, orgOf(ctx), req.body as AppServerCreate);
  return { status: 201, body: s, headers: etag(s.version) };
};
