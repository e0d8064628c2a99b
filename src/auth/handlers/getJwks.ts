import type { Handler } from '../../services.js';

/**
 * GET /.well-known/jwks.json — public keys verifying runtime tokens (RFC 7517). During a
 * rotation the retired key stays listed until its tokens have expired (openapi/auth.yaml).
 * Five minutes of caching: verifiers refetch on an unknown kid anyway.
 */
export const getJwks: Handler<'getJwks'> = async (_req, ctx) => ({
  status: 200,
  headers: { 'Cache-Control': 'public, max-age=300' },
  body: await ctx.services.tokens.jwks(),
});
