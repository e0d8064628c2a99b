import type { Handler } from '../../services.js';
import { etag } from '../../http/support.js';
import { getTrigger as get } from '../triggers.js';
import { triggerView } from '../urls.js';

/** GET /v1/triggers/{triggerId}. */
export const getTrigger: Handler<'getTrigger'> = async (req, ctx) => {
  const t = await get(ctx.services.db, ctx.auth.orgId, req.params.triggerId);
  return { status: 200, body: triggerView(ctx.services.config.baseUrls.triggers, t), headers: etag(t.version) };
};
