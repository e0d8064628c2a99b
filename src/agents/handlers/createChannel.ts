import type { Handler } from '../../services.js';
import { channelView, createChannel as create } from '../channels.js';
import { channelEtagHeader } from './support.js';

/** POST /v1/channels — the channel, its call URL and its key (shown only here). */
export const createChannel: Handler<'createChannel'> = async (req, ctx) => {
  const { channel, apiKey } = await create(ctx.services.db, ctx.auth.orgId, req.body);
  return {
    status: 201,
    body: { ...channelView(ctx.services.config.baseUrls.triggers, channel), apiKey },
    headers: channelEtagHeader(channel),
  };
};
