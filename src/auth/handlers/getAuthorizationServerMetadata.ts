import type { Handler } from '../../services.js';

/**
 * GET /.well-known/oauth-authorization-server — RFC 8414 metadata (openapi/auth.yaml).
 * Decisions there: `response_types_supported` is empty (no authorization endpoint, but the
 * member is required) and `scopes_supported` is omitted because `org:<id>` values cannot be
 * enumerated. `issuer` is the `iss` of every token.
 */
export const getAuthorizationServerMetadata: Handler<'getAuthorizationServerMetadata'> = async (_req, ctx) => {
  const issuer = ctx.services.config.baseUrls.auth;
  return {
    status: 200,
    headers: { 'Cache-Control': 'public, max-age=3600' },
    body: {
      issuer,
      token_endpoint: `${issuer}/oauth/token`,
      jwks_uri: `${issuer}/.well-known/jwks.json`,
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
      response_types_supported: [],
    },
  };
};
