import { listCredentials as list } from '../credentials.js';
import { parseListQuery, requireAuth } from './management.js';
import type { Handler } from './types.js';

/** GET credentials of the token's organisation, oldest first, keyset-paginated. */
export const listCredentials: Handler = async (req, ctx) => {
  const { orgId } = requireAuth(ctx);
  return { status: 200, body: await list(ctx.services.db, orgId, parseListQuery(req.query)) };
};
