import type { Handler } from '../../services.js';
import { etag, requireIfMatch } from '../../http/support.js';
import { updateConnection as update } from '../connections.js';

/** PATCH /v1/connections/{connectionId} — name, status, secret, metadata; If-Match is required. */
export const updateConnection: Handler<'updateConnection'> = async (req, ctx) => {
  const expected = requireIfMatch(req);
  const c = await update(ctx.services.db, ctx.auth.orgId, req.params.connectionId, {
    expectedVersion: expected,
    patch: req.body,
    config: ctx.services.config,
  });
  return { status: 200, body: c, headers: etag(c.version) };
};
