import type { Handler } from '../../services.js';
import { getWorkflowVersion as get } from '../workflows-versions.js';

/** GET /v1/workflows/{automationId}/versions/{version} — one immutable version. */
export const getWorkflowVersion: Handler<'getWorkflowVersion'> = async (req, ctx) => ({
  status: 200,
  body: await get(ctx.services.db, ctx.auth.orgId, req.params.automationId, req.params.version),
});
