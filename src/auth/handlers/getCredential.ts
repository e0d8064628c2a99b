import type { Handler } from '../../services.js';
import { getCredential as get } from '../credentials.js';
import { notFound } from './management.js';

/** Another organisation's credential answers 404, exactly like a missing one. */
export const getCredential: Handler<'getCredential'> = async (req, ctx) => {
  const view = await get(ctx.services.db, ctx.auth.orgId, req.params.credentialId);
  if (!view) throw notFound();
  return { status: 200, body: view };
};
