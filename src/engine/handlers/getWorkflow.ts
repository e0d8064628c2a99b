import type { Handler } from '../../services.js';
import { etag } from '../../http/support.js';
import { getWorkflow as get } from '../workflows.js';

/** GET /v1/workflows/{automationId} — the current version; ETag carries it. */
export const getWorkflow: Handler<'getWorkflow'> = async (req, ctx) => {
  const wf = await get(ctx.services.db, ctx.auth.orgId, req.params.automationId);
  return { status: 200, body: wf, headers: etag(wf.version) };
};
