import type { Handler } from '../../services.js';
import { revokeApiKey as revoke } from '../api-keys.js';
import { notFound } from './management.js';

/**
 * DELETE a trigger API key: idempotent; trigger calls with it fail from the next request on
 * in this process, and within REVOCATION_CACHE_MS (≤ 5 s) in every other one.
 */
export const revokeApiKey: Handler<'revokeApiKey'> = async (req, ctx) => {
  const { orgId } = ctx.auth;
  const view = await revoke(ctx.services.db, orgId, req.params.keyId, {
    triggersNeedKey: ctx.services.callTargets.triggersNeedKey,
  });
  if (!view) throw notFound();
  ctx.log.info({ keyId: view.id, orgId }, 'API key revoked');
  return { status: 200, body: view };
};
