import { etag, orgOf, requireIfMatch, stringParam } from '../../engine/handlers/support.js';
import type { Handler } from '../../engine/handlers/types.js';
import { updateTrigger as update, type TriggerPatch } from '../triggers.js';
import { triggerView } from '../urls.js';

/** PATCH /v1/triggers/{triggerId} — name, enabled, designatedOutput; If-Match is required. */
export const updateTrigger: Handler = async (req, ctx) => {
  const expected = requireIfMatch(req);
  const t = await update(ctx.services.db, orgOf(ctx), stringParam(req, 'triggerId'), expected, req.body as TriggerPatch);
  return { status: 200, body: triggerView(ctx.services.config.baseUrls.triggers, t), headers: etag(t.version) };
};
