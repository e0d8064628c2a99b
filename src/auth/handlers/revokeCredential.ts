import { notFound, pathParam, requireAuth } from './management.js';
import type { Handler } from './types.js';

/**
 * DELETE a credential: idempotent revocation (the record stays, with revokedAt). Goes through
 * the TokenService so this process rejects the credential's tokens at once; other processes
 * follow within config.revocationCacheMs (our 5-second rule, src/auth/revocation.ts).
 */
export const revokeCredential: Handler = async (req, ctx) => {
  const { orgId } = requireAuth(ctx);
  const view = await ctx.services.tokens.revokeCredential(orgId, pathParam(req, 'credentialId'));
  if (!view) throw notFound();
  ctx.log.info({ credentialId: view.id, orgId }, 'API credential revoked');
  return { status: 200, body: view };
};
