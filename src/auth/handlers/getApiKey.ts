import type { Handler } from '../../services.js';
import { getApiKey as get } from '../api-keys.js';
import { notFound } from './management.js';

/** Another organisation's key answers 404, exactly like a missing one. */
export const getApiKey: Handler<'getApiKey'> = async (req, ctx) => {
  const view = await get(ctx.services.db, ctx.auth.orgId, req.params.keyId);
  if (!view) throw notFound();
  return { status: 200, body: view };
};
