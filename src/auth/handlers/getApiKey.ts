import { getApiKey as get } from '../api-keys.js';
import { notFound, pathParam, requireAuth } from './management.js';
import type { Handler } from './types.js';

/** Another organisation's key answers 404, exactly like a missing one. */
export const getApiKey: Handler = async (req, ctx) => {
  const { orgId } = requireAuth(ctx);
  const view = await get(ctx.services.db, orgId, pathParam(req, 'keyId'));
  if (!view) throw notFound();
  return { status: 200, body: view };
};
