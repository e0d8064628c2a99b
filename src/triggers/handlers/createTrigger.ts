import type { Handler } from '../../services.js';
import { etag } from '../../http/support.js';
import { createTrigger as create } from '../triggers.js';
import { triggerView } from '../urls.js';

/** POST /v1/triggers — an API or webhook trigger for a workflow of the organisation. */
export const createTrigger: Handler<'createTrigger'> = async (req, ctx) => {
  const t = await create(ctx.services.db, ctx.auth.orgId, req.body);
  return { status: 201, body: triggerView(ctx.services.config.baseUrls.triggers, t), headers: etag(t.version) };
};
