/**
 * Public surface of the auth context: organisations, API credentials,
 * runtime tokens (JWT, JWKS, signing-key rotation) and trigger API keys. Other contexts import
 * only from here.
 */
export {
  createOrganization,
  getOrganization,
  organizationExists,
  newestOrganizationIds,
  type Organization,
} from './organizations.js';
export {
  createCredential,
  listCredentials,
  getCredential,
  revokeCredential,
  authenticateClient,
  authenticateSecret,
  type CredentialView,
} from './credentials.js';
export {
  createApiKey,
  listApiKeys,
  getApiKey,
  revokeApiKey,
  verifyApiKey,
  ApiKeyVerifier,
  type ApiKeyView,
} from './api-keys.js';
export {
  createTokenService,
  type TokenService,
  type TokenServiceDeps,
  type AuthContext,
  type IssuedToken,
} from './tokens.js';
export type { PublicJwk } from './key-ring.js';
export {
  createClientAuthLimiter,
  ClientAuthLimiter,
  addressKey,
  type ClientAuthLimits,
  type ClientAuthLimiterOptions,
  type LimitVerdict,
} from './client-auth-limits.js';
export { AddressBlocks, RedisAddressBlocks, type RedisAddressBlocksOptions } from './address-blocks.js';
export {
  MemoryFailureWindows,
  redisFailureWindows,
  type FailureWindows,
  type WindowRule,
  type WindowState,
} from './failure-windows.js';
export { SIGNING_ALG, RETIRED_GRACE_S } from './signing-keys.js';
export { settleUsageWrites } from './usage.js';
export { generateSecret, hashSecret, safeEqual, encrypt, decrypt, hmac } from '../kernel/crypto.js';
