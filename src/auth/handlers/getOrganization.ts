import type { Handler } from '../../services.js';
import { getOrganization as get } from '../organizations.js';
import { notFound } from './management.js';

/**
 * GET /v1/organization — the token's organisation. Also the cheapest authenticated call (one
 * primary-key read after token verification), which the benchmark uses.
 */
export const getOrganization: Handler<'getOrganization'> = async (_req, ctx) => {
  const org = await get(ctx.services.db, ctx.auth.orgId);
  if (!org) throw notFound();
  return { status: 200, body: { id: org.id, name: org.name, createdAt: org.createdAt } };
};
