import { etag, orgOf, requireIfMatch, stringParam } from '../../engine/handlers/support.js';
import type { Handler } from '../../engine/handlers/types.js';
import { updateConnection as update, type ConnectionPatch } from '../connections.js';

/** PATCH /v1/connections/{connectionId} — name, status, secret, metadata; If-Match is required. */
export const updateConnection: Handler = async (req, ctx) => {
  const expected = requireIfMatch(req);
  const c = await update(ctx.services.db, orgOf(ctx), stringParam(req, 'connectionId'), expected,
    req.body as ConnectionPatch, ctx.services.config);
  return { status: 200, body: c, headers: etag(c.version) };
};
