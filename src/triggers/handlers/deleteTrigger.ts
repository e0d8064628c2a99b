import { orgOf, parseIfMatch, stringParam } from '../../engine/handlers/support.js';
import type { Handler } from '../../engine/handlers/types.js';
import { deleteTrigger as remove } from '../triggers.js';

/** DELETE /v1/triggers/{triggerId} — If-Match optional. */
export const deleteTrigger: Handler = async (req, ctx) => {
  await remove(ctx.services.db, orgOf(ctx), stringParam(req, 'triggerId'), parseIfMatch(req));
  return { status: 204 };
};
