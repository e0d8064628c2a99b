import { orgOf, pageOf } from '../../engine/handlers/support.js';
import type { Handler } from '../../engine/handlers/types.js';
import { listTriggers as list, type TriggerKind } from '../triggers.js';
import { triggerView } from '../urls.js';

/** GET /v1/triggers — optional filters automationId and kind. */
export const listTriggers: Handler = async (req, ctx) => {
  const { automationId, kind } = req.query;
  const page = await list(ctx.services.db, orgOf(ctx), {
    automationId: typeof automationId === 'string' ? automationId : undefined,
    kind: typeof kind === 'string' ? (kind as TriggerKind) : undefined,
  }, pageOf(req));
  const base = ctx.services.config.baseUrls.triggers;
  return { status: 200, body: { items: page.items.map((t) => triggerView(base, t)), nextCursor: page.nextCursor } };
};
