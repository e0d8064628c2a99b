import type { Handler } from '../../services.js';
import { etag, requireIfMatch } from '../../http/support.js';
import { updateTrigger as update } from '../triggers.js';
import { triggerView } from '../urls.js';

/** PATCH /v1/triggers/{triggerId} — name, enabled, designatedOutput; If-Match is required. */
export const updateTrigger: Handler<'updateTrigger'> = async (req, ctx) => {
  const expected = requireIfMatch(req);
  const t = await update(ctx.services.db, ctx.auth.orgId, req.params.triggerId, {
    expectedVersion: expected,
    patch: req.body,
  });
  return { status: 200, body: triggerView(ctx.services.config.baseUrls.triggers, t), headers: etag(t.version) };
};
