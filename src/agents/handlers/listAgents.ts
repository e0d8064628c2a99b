import type { Handler } from '../../services.js';
import { pageLimit } from '../../kernel/page.js';
import { listAgents as list } from '../agents.js';

/** GET /v1/agents — oldest first, cursor pages. */
export const listAgents: Handler<'listAgents'> = async (req, ctx) => {
  const page = await list(ctx.services.db, ctx.auth.orgId, {
    limit: pageLimit(req.query.limit),
    cursor: req.query.cursor,
  });
  return { status: 200, body: { items: page.agents, nextCursor: page.nextCursor } };
};
