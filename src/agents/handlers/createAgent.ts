import type { Handler } from '../../services.js';
import { etag } from '../../http/support.js';
import { createAgent as create } from '../agents.js';
import { checkConfig } from './support.js';

/** POST /v1/agents — the agent_create fields; server paths, model and outputSchema checked (400). */
export const createAgent: Handler<'createAgent'> = async (req, ctx) => {
  await checkConfig(ctx.services, ctx.auth.orgId, req.body);
  const agent = await create(ctx.services.db, ctx.auth.orgId, req.body);
  return { status: 201, body: agent, headers: etag(agent.version) };
};
