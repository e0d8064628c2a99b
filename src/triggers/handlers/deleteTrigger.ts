import type { Handler } from '../../services.js';
import { parseIfMatch } from '../../http/support.js';
import { deleteTrigger as remove } from '../triggers.js';

/** DELETE /v1/triggers/{triggerId} — If-Match optional. */
export const deleteTrigger: Handler<'deleteTrigger'> = async (req, ctx) => {
  await remove(ctx.services.db, ctx.auth.orgId, req.params.triggerId, parseIfMatch(req));
  return { status: 204 };
};
