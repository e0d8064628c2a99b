import type { Handler } from '../../services.js';
import { pageOf } from '../../http/support.js';
import { listTriggers as list } from '../triggers.js';
import { triggerView } from '../urls.js';

/** GET /v1/triggers — optional filters automationId and kind. */
export const listTriggers: Handler<'listTriggers'> = async (req, ctx) => {
  const { automationId, kind } = req.query;
  const page = await list(ctx.services.db, ctx.auth.orgId, { automationId, kind }, pageOf(req));
  const base = ctx.services.config.baseUrls.triggers;
  return { status: 200, body: { items: page.items.map((t) => triggerView(base, t)), nextCursor: page.nextCursor } };
};
