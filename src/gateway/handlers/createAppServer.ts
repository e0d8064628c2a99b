import type { Handler } from '../../services.js';
import { withHealth } from './server-health.js';
import { etag } from '../../http/support.js';
import { createAppServer as create } from '../registry.js';
import { checkUpstreamAddress } from '../registry-validate.js';

/** POST /v1/servers — registers an application server path (duplicate path → 409; refused upstream address → 400). */
export const createAppServer: Handler<'createAppServer'> = async (req, ctx) => {
  await checkUpstreamAddress(req.body.upstream, ctx.services.gateway.pool.outbound);
  const s = await create(ctx.services.db, ctx.auth.orgId, req.body);
  return { status: 201, body: withHealth(ctx.services, ctx.auth.orgId, [s])[0]!, headers: etag(s.version) };
};
