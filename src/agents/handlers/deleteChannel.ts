import type { Handler } from '../../services.js';
import { deleteChannel as remove } from '../channels.js';
import { channelIfMatch } from './support.js';

/** DELETE /v1/channels/{triggerId} — If-Match optional. */
export const deleteChannel: Handler<'deleteChannel'> = async (req, ctx) => {
  await remove(ctx.services.db, ctx.auth.orgId, req.params.triggerId, channelIfMatch(req));
  return { status: 204 };
};
