import type { Handler } from '../../services.js';
import { pageOf } from '../../http/support.js';
import { channelView, listChannels as list } from '../channels.js';

/** GET /v1/channels — optional agentId filter; never the keys. */
export const listChannels: Handler<'listChannels'> = async (req, ctx) => {
  const page = await list(ctx.services.db, ctx.auth.orgId, { agentId: req.query.agentId }, pageOf(req));
  const base = ctx.services.config.baseUrls.triggers;
  return { status: 200, body: { items: page.items.map((c) => channelView(base, c)), nextCursor: page.nextCursor } };
};
