import { revokeApiKey as revoke } from '../api-keys.js';
import { notFound, pathParam, requireAuth } from './management.js';
import type { Handler } from './types.js';

/** DELETE a trigger API key: idempotent; trigger calls with it fail from the next request on. */
export const revokeApiKey: Handler = async (req, ctx) => {
  const { orgId } = requireAuth(ctx);
  const view = await revoke(ctx.services.db, orgId, pathParam(req, 'keyId'));
  if (!view) throw notFound();
  ctx.log.info({ keyId: view.id, orgId }, 'API key revoked');
  return { status: 200, body: view };
};
