import { listApiKeys as list } from '../api-keys.js';
import { parseListQuery, requireAuth } from './management.js';
import type { Handler } from './types.js';

/** GET trigger API keys of the token's organisation, oldest first, keyset-paginated. */
export const listApiKeys: Handler = async (req, ctx) => {
  const { orgId } = requireAuth(ctx);
  return { status: 200, body: await list(ctx.services.db, orgId, parseListQuery(req.query)) };
};
