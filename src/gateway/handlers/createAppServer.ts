import type { Handler } from '../../services.js';
import { etag } from '../../http/support.js';
import { createAppServer as create } from '../registry.js';

/** POST /v1/servers — registers an application server path (duplicate path → 409). */
export const createAppServer: Handler<'createAppServer'> = async (req, ctx) => {
  const s = await create(ctx.services.db, ctx.auth.orgId, req.body);
  ctx.services.gateway.catalog.forgetOrg(ctx.auth.orgId); // this process sees it at once
  return { status: 201, body: s, headers: etag(s.version) };
};
