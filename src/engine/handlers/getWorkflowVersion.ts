import { getWorkflowVersion as get } from '../workflows-versions.js';
import { intParam, orgOf, stringParam } from './support.js';
import type { Handler } from './types.js';

/** GET /v1/workflows/{automationId}/versions/{version} — one immutable version. */
export const getWorkflowVersion: Handler = async (req, ctx) => ({
  status: 200,
  body: await get(ctx.services.db, orgOf(ctx), stringParam(req, 'automationId'), intParam(req, 'version')),
});
