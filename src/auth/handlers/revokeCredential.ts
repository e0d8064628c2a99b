import type { Handler } from '../../services.js';
import { notFound } from './management.js';

/**
 * DELETE a credential: idempotent revocation (the record stays, with revokedAt). Goes through
 * the TokenService so this process rejects the credential's tokens at once; other processes
 * follow within config.revocationCacheMs (our 5-second rule, src/auth/revocation.ts).
 */
export const revokeCredential: Handler<'revokeCredential'> = async (req, ctx) => {
  const { orgId } = ctx.auth;
  const view = await ctx.services.tokens.revokeCredential(orgId, req.params.credentialId);
  if (!view) throw notFound();
  ctx.log.info({ credentialId: view.id, orgId }, 'API credential revoked');
  return { status: 200, body: view };
};
