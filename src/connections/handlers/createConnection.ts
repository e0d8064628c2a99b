import { etag, orgOf } from '../../engine/handlers/support.js';
import type { Handler } from '../../engine/handlers/types.js';
import { createConnection as create, type ConnectionCreate } from '../connections.js';

/** POST /v1/connections — the secret is encrypted at rest and never returned. */
export const createConnection: Handler = async (req, ctx) => {
  const c = await create(ctx.services.db, orgOf(ctx), req.body as ConnectionCreate, ctx.services.config);
  return { status: 201, body: c, headers: etag(c.version) };
};
