import type { Handler } from '../../services.js';
import { header } from '../../http/support.js';
import { authenticateSecret } from '../credentials.js';
import { NO_STORE, oauthFailure } from './oauth.js';

/**
 * POST /auth/token — legacy exchange (spec section 6; "Authentication" 4: the client secret is
 * the API key; kept next to /oauth/token per spec "Versioning"). The JSON body is ignored.
 * Decisions (openapi/auth.yaml): the same OAuth error shapes as /oauth/token — a missing or
 * empty `X-Api-Key` or `X-Selected-Org` is invalid_request (400); a key that is not an active
 * client secret is invalid_client (401); an `X-Selected-Org` other than the credential's
 * organisation is invalid_scope (400), the legacy analogue of a scope naming another org.
 */
export const exchangeLegacyToken: Handler<'exchangeLegacyToken'> = async (req, ctx) => {
  // Absent and empty (or blank) are the same thing for the token endpoints.
  const apiKey = header(req, 'x-api-key')?.trim();
  if (!apiKey) throw oauthFailure('invalid_request', 'The X-Api-Key header is required.');
  const selectedOrg = header(req, 'x-selected-org')?.trim();
  if (!selectedOrg) throw oauthFailure('invalid_request', 'The X-Selected-Org header is required.');

  const { db, tokens } = ctx.services;
  const credential = await authenticateSecret(db, apiKey, ctx.log);
  if (!credential) {
    ctx.log.info('legacy token exchange rejected: client authentication failed');
    throw oauthFailure('invalid_client', 'Client authentication failed.');
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
