import type { Handler } from '../../services.js';
import { etag } from '../../http/support.js';
import { requireAgent } from '../agents.js';

/** GET /v1/agents/{agentId}. */
export const getAgent: Handler<'getAgent'> = async (req, ctx) => {
  const agent = await requireAgent(ctx.services.db, ctx.auth.orgId, req.params.agentId);
  return { status: 200, body: agent, headers: etag(agent.version) };
};
