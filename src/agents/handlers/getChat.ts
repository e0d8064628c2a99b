import type { Handler } from '../../services.js';
import { chatView } from '../transcript.js';

/** GET /v1/chats/{chatId} — one chat with its transcript and tool calls. */
export const getChat: Handler<'getChat'> = async (req, ctx) => {
  const body = await chatView(ctx.services.db, ctx.auth.orgId, req.params.chatId);
  return { status: 200, body, headers: { 'Cache-Control': 'no-store' } };
};
