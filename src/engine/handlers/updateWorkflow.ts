import { updateWorkflow as update } from '../workflows.js';
import { etag, orgOf, requireIfMatch, stringParam } from './support.js';
import type { Handler } from './types.js';

/** PUT /v1/workflows/{automationId} — publishes a new version; If-Match is required. */
export const updateWorkflow: Handler = async (req, ctx) => {
  const expected = requireIfMatch(req);
  const wf = await update(ctx.services.db, orgOf(ctx), stringParam(req, 'automationId'), expected, req.body);
  return { status: 200, body: wf, headers: etag(wf.version) };
};
