import { getOrganization as get } from '../organizations.js';
import { notFound, requireAuth } from './management.js';
import type { Handler } from './types.js';

/**
 * GET /v1/organization — the token's organisation. Also the cheapest authenticated call (one
 * primary-key read after token verification), which the benchmark uses.
 */
export const getOrganization: Handler = async (_req, ctx) => {
  const { orgId } = requireAuth(ctx);
  const org = await get(ctx.services.db, orgId);
  if (!org) throw notFound();
  return { status: 200, body: { id: org.id, name: org.name, createdAt: org.createdAt } };
};
