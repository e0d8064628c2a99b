import type { Handler } from '../../services.js';
import { etag, requireIfMatch } from '../../http/support.js';
import { requireAgent } from '../agents.js';
import { checkConfig, updateAgentIfCurrent } from './support.js';

/** PATCH /v1/agents/{agentId} — partial; If-Match is required (428 / 412). */
export const updateAgent: Handler<'updateAgent'> = async (req, ctx) => {
  const expected = requireIfMatch(req);
  const { db } = ctx.services;
  const { orgId } = ctx.auth;
  // 404 before the configuration checks: another organisation's id learns nothing from a 400.
  await requireAgent(db, orgId, req.params.agentId);
  await checkConfig(ctx.services, orgId, req.body);
  const agent = await updateAgentIfCurrent(db, orgId, req.params.agentId, { expected, patch: req.body });
  return { status: 200, body: agent, headers: etag(agent.version) };
};
