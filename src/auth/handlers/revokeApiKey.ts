import type { Handler } from '../../http/types.js';
import { revokeApiKey as revoke } from '../api-keys.js';
import { notFound } from './management.js';

/** DELETE a trigger API key: idempotent; trigger calls with it fail from the next request on. */
export const revokeApiKey: Handler<'revokeApiKey'> = async (req, ctx) => {
  const { orgId } = ctx.auth;
  const view = await revoke(ctx.services.db, orgId, req.params.keyId);
  if (!view) throw notFound();
  ctx.log.info({ keyId: view.id, orgId }, 'API key revoked');
  return { status: 200, body: view };
};
