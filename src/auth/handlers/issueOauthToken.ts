import type { Handler } from '../../services.js';
import { header } from '../../http/support.js';
import { authenticateClient } from '../credentials.js';
import {
  NO_STORE,
  countedFailure,
  formParam,
  oauthFailure,
  parseBasicCredentials,
  parseOrgScope,
  refuseLimitedAddress,
  sourceAddress,
} from './oauth.js';

/** Client ids this service issues; only these are counted per client (others cannot exist). */
const CLIENT_ID = /^cli_[0-9a-f]{32}$/;

/**
 * POST /oauth/token — OAuth 2.0 client credentials (spec section 6; RFC 6749 sections 2.3, 4.4,
 * 5). Credentials come from the form body (client_secret_post) or from `Authorization: Basic`
 * (client_secret_basic). Only the Basic scheme is client authentication: another scheme (a
 * stray `Bearer` a client sends on every request) is ignored. Basic and body credentials
 * together are accepted when they name the same client and secret (openapi/auth.yaml
 * decision; RFC 6749 section 2.3 asks clients for one method per request).
 * Decisions: a missing parameter (including client_id/client_secret without a Basic header)
 * or a scope not of the form `org:<id>` is invalid_request; a well-formed scope for an
 * organisation other than the credential's is invalid_scope; every client-authentication
 * failure is invalid_client (401) with the same description, so callers cannot tell an
 * unknown client from a wrong secret or a revoked credential. The form is checked here as
 * well as by the pipeline: these are the OAuth error shapes RFC 6749 prescribes.
 * Failed client authentications are limited per source address and per client id
 * (./oauth.ts, ../client-auth-limits.ts): 429 past a limit, never for the correct secret from
 * an address that is not itself over its limit.
 */
export const issueOauthToken: Handler<'issueOauthToken'> = async (req, ctx) => {
  const form = req.body;
  if (form === null || typeof form !== 'object' || Array.isArray(form)) {
    throw oauthFailure('invalid_request', 'The body must be application/x-www-form-urlencoded.');
  }
  const grantType = formParam(form, 'grant_type');
  const bodyClientId = formParam(form, 'client_id');
  const bodySecret = formParam(form, 'client_secret');
  const scope = formParam(form, 'scope');

  if (!grantType) throw oauthFailure('invalid_request', 'The grant_type parameter is required.');
  if (grantType !== 'client_credentials')
    throw oauthFailure('unsupported_grant_type', 'Only the client_credentials grant is supported.');

  const { db, tokens, clientAuthLimiter: limiter } = ctx.services;
  const address = sourceAddress(req);
  await refuseLimitedAddress(limiter, address, ctx.log);
  let credentials: { clientId: string; clientSecret: string };
  try {
    credentials = clientCredentials(header(req, 'authorization'), bodyClientId, bodySecret);
  } catch (err) {
    throw await countedFailure(limiter, { address }, err, ctx.log);
  }
  const { clientId, clientSecret } = credentials;

  if (!scope) throw oauthFailure('invalid_request', 'The scope parameter is required.');
  const scopeOrg = parseOrgScope(scope);
  if (!scopeOrg) throw oauthFailure('invalid_request', 'The scope must be org:<organization_id>.');

  const credential = await authenticateClient(db, clientId, clientSecret, ctx.log);
  if (!credential) {
    // Only a well-formed client id is logged: a caller may have pasted a secret into the field.
    const wellFormed = CLIENT_ID.test(clientId);
    ctx.log.info(
      { clientId: wellFormed ? clientId : '[unrecognised]' },
      'token request rejected: client authentication failed',
    );
    const attempt = { address, account: wellFormed ? `client:${clientId}` : undefined };
    throw await countedFailure(
      limiter,
      attempt,
      oauthFailure('invalid_client', 'Client authentication failed.'),
      ctx.log,
    );
  }
  if (credential.orgId !== scopeOrg) {
    ctx.log.info({ clientId, credentialId: credential.id }, 'token request rejected: scope names another organisation');
    throw oauthFailure('invalid_scope', "The scope must be org:<organization_id> for the credential's organisation.");
  }

  const issued = await tokens.issue({
    orgId: credential.orgId,
    credentialId: credential.id,
    clientId: credential.clientId,
  });
  ctx.log.info({ clientId, credentialId: credential.id, orgId: credential.orgId }, 'runtime token issued');
  return {
    status: 200,
    headers: { ...NO_STORE },
    body: { access_token: issued.accessToken, token_type: 'Bearer', expires_in: issued.expiresIn },
  };
};

/** The client's id and secret from `Authorization: Basic` or the body (see the rule above). */
function clientCredentials(
  authorization: string | undefined,
  bodyClientId: string | undefined,
  bodySecret: string | undefined,
): { clientId: string; clientSecret: string } {
  const value = authorization?.trim();
  if (value && /^Basic(\s|$)/i.test(value)) {
    const basic = parseBasicCredentials(value);
    const inBody = bodyClientId !== undefined || bodySecret !== undefined;
    if (inBody && (bodyClientId !== basic.clientId || bodySecret !== basic.clientSecret)) {
      throw oauthFailure(
        'invalid_request',
        'The Authorization: Basic credentials and the body credentials differ; send the credentials one way.',
      );
    }
    return basic;
  }
  // RFC 6749 section 5.2: "no client authentication included" is invalid_client.
  if (!bodyClientId || !bodySecret) {
    throw oauthFailure(
      'invalid_client',
      'Client authentication is required: client_id and client_secret in the body, or Authorization: Basic.',
    );
  }
  return { clientId: bodyClientId, clientSecret: bodySecret };
}
