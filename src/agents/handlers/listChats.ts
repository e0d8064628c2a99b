import type { Handler } from '../../services.js';
import { pageOf } from '../../http/support.js';
import { listChatSummaries } from '../transcript.js';

/** GET /v1/chats — the organisation's chats, newest first, optionally one agent's or one channel's. */
export const listChats: Handler<'listChats'> = async (req, ctx) => {
  const filter = { agentId: req.query.agentId, channelId: req.query.channelId };
  return { status: 200, body: await listChatSummaries(ctx.services.db, ctx.auth.orgId, filter, pageOf(req)) };
};
