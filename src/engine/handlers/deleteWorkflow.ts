import type { Handler } from '../../services.js';
import { parseIfMatch } from '../../http/support.js';
import { deleteWorkflow as remove } from '../workflows.js';

/** DELETE /v1/workflows/{automationId} — with its versions and triggers; If-Match optional. */
export const deleteWorkflow: Handler<'deleteWorkflow'> = async (req, ctx) => {
  await remove(ctx.services.db, ctx.auth.orgId, req.params.automationId, parseIfMatch(req));
  return { status: 204 };
};
