import type { Handler } from '../../services.js';
import { channelView, updateChannel as update } from '../channels.js';
import { channelEtagHeader, requireChannelIfMatch } from './support.js';

/** PATCH /v1/channels/{triggerId} — name, outputFormat, enabled; If-Match is required. */
export const updateChannel: Handler<'updateChannel'> = async (req, ctx) => {
  const expected = requireChannelIfMatch(req);
  const channel = await update(ctx.services.db, ctx.auth.orgId, req.params.triggerId, {
    expectedEtag: expected,
    patch: req.body,
  });
  return {
    status: 200,
    body: channelView(ctx.services.config.baseUrls.triggers, channel),
    headers: channelEtagHeader(channel),
  };
};
