import type { Handler } from '../../services.js';
import { etag } from '../../http/support.js';
import { createConnection as create } from '../connections.js';

/** POST /v1/connections — the secret is encrypted at rest and never returned. */
export const createConnection: Handler<'createConnection'> = async (req, ctx) => {
  const c = await create(ctx.services.db, ctx.auth.orgId, req.body, ctx.services.config);
  return { status: 201, body: c, headers: etag(c.version) };
};
