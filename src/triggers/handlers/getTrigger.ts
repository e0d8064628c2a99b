import { etag, orgOf, stringParam } from '../../engine/handlers/support.js';
import type { Handler } from '../../engine/handlers/types.js';
import { getTrigger as get } from '../triggers.js';
import { triggerView } from '../urls.js';

/** GET /v1/triggers/{triggerId}. */
export const getTrigger: Handler = async (req, ctx) => {
  const t = await get(ctx.services.db, orgOf(ctx), stringParam(req, 'triggerId'));
  return { status: 200, body: triggerView(ctx.services.config.baseUrls.triggers, t), headers: etag(t.version) };
};
