import type { Handler } from '../../services.js';
import { pageOf } from '../../http/support.js';
import { listWorkflows as list } from '../workflows.js';

/** GET /v1/workflows — workflows of the token's organisation, one page. */
export const listWorkflows: Handler<'listWorkflows'> = async (req, ctx) => ({
  status: 200,
  body: await list(ctx.services.db, ctx.auth.orgId, pageOf(req)),
});
