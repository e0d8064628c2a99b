import { getCredential as get } from '../credentials.js';
import { notFound, pathParam, requireAuth } from './management.js';
import type { Handler } from './types.js';

/** Another organisation's credential answers 404, exactly like a missing one. */
export const getCredential: Handler = async (req, ctx) => {
  const { orgId } = requireAuth(ctx);
  const view = await get(ctx.services.db, orgId, pathParam(req, 'credentialId'));
  if (!view) throw notFound();
  return { status: 200, body: view };
};
