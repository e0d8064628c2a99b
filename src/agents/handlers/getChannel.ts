import type { Handler } from '../../services.js';
import { channelView, requireChannel } from '../channels.js';
import { channelEtagHeader } from './support.js';

/** GET /v1/channels/{triggerId} — key hint only. */
export const getChannel: Handler<'getChannel'> = async (req, ctx) => {
  const channel = await requireChannel(ctx.services.db, ctx.auth.orgId, req.params.triggerId);
  return {
    status: 200,
    body: channelView(ctx.services.config.baseUrls.triggers, channel),
    headers: channelEtagHeader(channel),
  };
};
