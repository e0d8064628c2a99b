import { etag, orgOf } from '../../engine/handlers/support.js';
import type { Handler } from '../../engine/handlers/types.js';
import { createTrigger as create, type TriggerCreate } from '../triggers.js';
import { triggerView } from '../urls.js';

/** POST /v1/triggers — an API or webhook trigger for a workflow of the organisation. */
export const createTrigger: Handler = async (req, ctx) => {
  const t = await create(ctx.services.db, orgOf(ctx), req.body as TriggerCreate);
  return { status: 201, body: triggerView(ctx.services.config.baseUrls.triggers, t), headers: etag(t.version) };
};
