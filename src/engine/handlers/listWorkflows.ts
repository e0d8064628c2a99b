import { listWorkflows as list } from '../workflows.js';
import { orgOf, pageOf } from './support.js';
import type { Handler } from './types.js';

/** GET /v1/workflows — workflows of the token's organisation, one page. */
export const listWorkflows: Handler = async (req, ctx) => ({
  status: 200,
  body: await list(ctx.services.db, orgOf(ctx), pageOf(req)),
});
