import type { Handler } from '../../services.js';
import { parseIfMatch } from '../../http/support.js';
import { deleteAgentIfCurrent } from './support.js';

/** DELETE /v1/agents/{agentId} — its channels and chats go with it (FK cascade); If-Match optional. */
export const deleteAgent: Handler<'deleteAgent'> = async (req, ctx) => {
  await deleteAgentIfCurrent(ctx.services.db, ctx.auth.orgId, req.params.agentId, parseIfMatch(req));
  return { status: 204 };
};
