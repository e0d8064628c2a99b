import type { Handler } from '../../services.js';
import { etag, requireIfMatch } from '../../http/support.js';
import { updateWorkflow as update } from '../workflows.js';

/** PUT /v1/workflows/{automationId} — publishes a new version; If-Match is required. */
export const updateWorkflow: Handler<'updateWorkflow'> = async (req, ctx) => {
  const expected = requireIfMatch(req);
  const wf = await update(ctx.services.db, ctx.auth.orgId, req.params.automationId, {
    expectedVersion: expected,
    input: req.body,
  });
  return { status: 200, body: wf, headers: etag(wf.version) };
};
