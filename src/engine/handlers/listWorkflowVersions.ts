import { listWorkflowVersions as list } from '../workflows-versions.js';
import { orgOf, pageOf, stringParam } from './support.js';
import type { Handler } from './types.js';

/** GET /v1/workflows/{automationId}/versions — every published version, oldest first. */
export const listWorkflowVersions: Handler = async (req, ctx) => ({
  status: 200,
  body: await list(ctx.services.db, orgOf(ctx), stringParam(req, 'automationId'), pageOf(req)),
});
