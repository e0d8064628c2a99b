import type { Handler } from '../../services.js';
import { header } from '../../http/support.js';
import { authenticateSecret } from '../credentials.js';
import { NO_STORE, countedFailure, oauthFailure, refuseLimitedAddress, sourceAddress } from './oauth.js';

/** Organisation ids this service issues; only these are counted per organisation. */
const ORG_ID = /^org_[0-9a-f]{32}$/;

/**
 * POST /auth/token — legacy exchange (spec section 6; "Authentication" 4: the client secret is
 * the API key; kept next to /oauth/token per spec "Versioning"). The JSON body is ignored.
 * Decisions (openapi/auth.yaml): the same OAuth error shapes as /oauth/token — a missing or
 * empty `X-Api-Key` or `X-Selected-Org` is invalid_request (400); a key that is not an active
 * client secret is invalid_client (401); an `X-Selected-Org` other than the credential's
 * organisation is invalid_scope (400), the legacy analogue of a scope naming another org.
 * The same failure limits as /oauth/token (../client-auth-limits.ts): per source address, and,
 * since the request names no client id, per X-Selected-Org organisation in its place.
 */
export const exchangeLegacyToken: Handler<'exchangeLegacyToken'> = async (req, ctx) => {
  // Absent and empty (or blank) are the same thing for the token endpoints.
  const apiKey = header(req, 'x-api-key')?.trim();
  if (!apiKey) throw oauthFailure('invalid_request', 'The X-Api-Key header is required.');
  const selectedOrg = header(req, 'x-selected-org')?.trim();
  if (!selectedOrg) throw oauthFailure('invalid_request', 'The X-Selected-Org header is required.');

  const { db, tokens, clientAuthLimiter: limiter } = ctx.services;
  const address = sourceAddress(req);
  await refuseLimitedAddress(limiter, address, ctx.log);
  const credential = await authenticateSecret(db, apiKey, ctx.log);
  if (!credential) {
    ctx.log.info('legacy token exchange rejected: client authentication failed');
    const attempt = { address, account: ORG_ID.test(selectedOrg) ? `org:${selectedOrg}` : undefined };
    throw await countedFailure(
      limiter,
      attempt,
      oauthFailure('invalid_client', 'Client authentication failed.'),
      ctx.log,
    );
  }
  if (credential.orgId !== selectedOrg) {
    ctx.log.info(
      { credentialId: credential.id },
      'legacy token exchange rejected: X-Selected-Org names another organisation',
    );
    throw oauthFailure('invalid_scope', 'The credential does not belong to the selected organisation.');
  }

  const issued = await tokens.issue({
    orgId: credential.orgId,
    credentialId: credential.id,
    clientId: credential.clientId,
  });
  ctx.log.info(
    { clientId: credential.clientId, credentialId: credential.id, orgId: credential.orgId },
    'runtime token issued (legacy exchange)',
  );
  return { status: 200, headers: { ...NO_STORE }, body: { token: issued.accessToken } };
};
