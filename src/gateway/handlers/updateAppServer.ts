import type { Handler } from '../../services.js';
import { withHealth } from './server-health.js';
import { etag, requireIfMatch } from '../../http/support.js';
import { updateAppServer as update } from '../registry.js';
import { checkUpstreamAddress } from '../registry-validate.js';

/** PATCH /v1/servers/{serverId} — If-Match is required; a new upstream is checked as on create. */
export const updateAppServer: Handler<'updateAppServer'> = async (req, ctx) => {
  const expected = requireIfMatch(req);
  if (req.body.upstream !== undefined)
    await checkUpstreamAddress(req.body.upstream, ctx.services.gateway.pool.outbound);
  const s = await update(ctx.services.db, ctx.auth.orgId, req.params.serverId, {
    expectedVersion: expected,
    patch: req.body,
  });
  return { status: 200, body: withHealth(ctx.services, ctx.auth.orgId, [s])[0]!, headers: etag(s.version) };
};
