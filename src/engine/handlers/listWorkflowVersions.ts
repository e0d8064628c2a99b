import type { Handler } from '../../services.js';
import { pageOf } from '../../http/support.js';
import { listWorkflowVersions as list } from '../workflows-versions.js';

/** GET /v1/workflows/{automationId}/versions — every published version, oldest first. */
export const listWorkflowVersions: Handler<'listWorkflowVersions'> = async (req, ctx) => ({
  status: 200,
  body: await list(ctx.services.db, ctx.auth.orgId, req.params.automationId, pageOf(req)),
});
