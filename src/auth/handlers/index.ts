import { guardBearerAuth } from '../../http/support.js';
import { createApiKey } from './createApiKey.js';
import { createCredential } from './createCredential.js';
import { exchangeLegacyToken } from './exchangeLegacyToken.js';
import { getApiKey } from './getApiKey.js';
import { getAuthorizationServerMetadata } from './getAuthorizationServerMetadata.js';
import { getCredential } from './getCredential.js';
import { getJwks } from './getJwks.js';
import { getOrganization } from './getOrganization.js';
import { issueOauthToken } from './issueOauthToken.js';
import { listApiKeys } from './listApiKeys.js';
import { listCredentials } from './listCredentials.js';
import { revokeApiKey } from './revokeApiKey.js';
import { revokeCredential } from './revokeCredential.js';
import { rotateSigningKey } from './rotateSigningKey.js';

/**
 * Handlers of the auth context, keyed by operationId (generated/openapi/operations.ts); each is a
 * Handler<operationId>, which src/app.ts checks with `satisfies HandlerMap`.
 */
export const authHandlers = guardBearerAuth({
  issueOauthToken,
  exchangeLegacyToken,
  getJwks,
  getAuthorizationServerMetadata,
  listCredentials,
  createCredential,
  getCredential,
  revokeCredential,
  listApiKeys,
  createApiKey,
  getApiKey,
  revokeApiKey,
  getOrganization,
  rotateSigningKey,
});
