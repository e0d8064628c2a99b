import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { SignJWT, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose';
import type { Config } from '../config/index.js';
import type { Logger } from '../config/logger.js';
import { AppError } from '../errors/index.js';
import { revokeCredential as revokeCredentialRow, type CredentialView } from './credentials.js';
import { KeyRing, type PublicJwk } from './key-ring.js';
import { CredentialStatusCache } from './revocation.js';
import { SIGNING_ALG } from './signing-keys.js';
import { settleUsageWrites } from './usage.js';

/**
 * Runtime tokens (spec section 6, "Authentication" 3): ES256 JWTs valid config.tokenTtlSeconds
 * (3600, `expires_in`), sent as `Authorization: Bearer <token>`.
 */
export interface AuthContext {
  orgId: string;
  credentialId: string;
  clientId: string;
  /** The token's `jti`. */
  tokenId: string;
  /** ISO 8601 UTC, from `exp`. */
  expiresAt: string;
}

export interface IssuedToken {
  accessToken: string;
  expiresIn: number;
}

export interface TokenService {
  issue(input: { orgId: string; credentialId: string; clientId: string }): Promise<IssuedToken>;
  /** Throws AppError ERR_AUTH_INVALID_TOKEN for any token that must not be accepted. */
  verify(token: string): Promise<AuthContext>;
  jwks(): Promise<{ keys: PublicJwk[] }>;
  rotate(): Promise<{ kid: string }>;
  /** Revokes in the store and makes this process reject the credential's tokens at once. */
  revokeCredential(orgId: string, id: string, opts?: { force?: boolean }): Promise<CredentialView | null>;
  /** Drops this process's cached status (e.g. after a revocation done through the store directly). */
  forgetCredential(credentialId: string): void;
  /** Waits for background writes (last-use bookkeeping) so the store can be closed. */
  close(): Promise<void>;
}

export interface TokenServiceDeps {
  db: Knex;
  config: Config;
  log: Logger;
  /** Clock in milliseconds; tests move it. */
  now?: () => number;
}

/** Our rule: no clock tolerance beyond 5 s on `exp`, `iat` and `nbf`. */
const CLOCK_TOLERANCE_S = 5;
/** Tokens we issue are well under 1 KiB; anything much larger is not ours. */
const MAX_TOKEN_LENGTH = 4096;
/** Verified tokens remembered per process (see checkTokenCached). */
const VERIFIED_CACHE_MAX = 10_000;
const REQUIRED_CLAIMS = ['iss', 'sub', 'aud', 'exp', 'iat', 'jti', 'org', 'cid'];

const invalid = (): AppError => new AppError('ERR_AUTH_INVALID_TOKEN');
const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= 200;

export async function createTokenService(deps: TokenServiceDeps): Promise<TokenService> {
  const { db, config, log } = deps;
  const now = deps.now ?? Date.now;
  const ring = new KeyRing({
    db,
    secretKey: config.secretKey,
    tokenTtlSeconds: config.tokenTtlSeconds,
    maxAgeMs: config.signingKeyMaxAgeDays * 86_400_000,
    now,
    log,
  });
  await ring.start();
  const statuses = new CredentialStatusCache(db, config.revocationCacheMs, now);

  async function issue(input: { orgId: string; credentialId: string; clientId: string }): Promise<IssuedToken> {
    const { kid, key } = await ring.signingKey();
    const iat = Math.floor(now() / 1000);
    // `scope` echoes the granted `org:<id>` (RFC 8693 style); `org` and `cid` are what we check.
    const accessToken = await new SignJWT({ org: input.orgId, cid: input.credentialId, scope: `org:${input.orgId}` })
      .setProtectedHeader({ alg: SIGNING_ALG, kid, typ: 'JWT' })
      .setIssuer(config.baseUrls.auth)
      .setSubject(input.clientId)
      .setAudience(config.tokenAudience)
      .setIssuedAt(iat)
      .setExpirationTime(iat + config.tokenTtlSeconds)
      .setJti(randomBytes(16).toString('base64url'))
      .sign(key);
    return { accessToken, expiresIn: config.tokenTtlSeconds };
  }

  /** Signature, algorithm, issuer, audience, lifetime and claim shape; no store access for known kids. */
  async function checkToken(
    token: string,
  ): Promise<JWTPayload & { org: string; cid: string; sub: string; jti: string; exp: number }> {
    if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_LENGTH) throw invalid();
    let header;
    try {
      header = decodeProtectedHeader(token);
    } catch {
      throw invalid();
    }
    // Only ES256 (rejects `alg: none` and HS256 keyed with our public key before any crypto).
    if (header.alg !== SIGNING_ALG || !nonEmpty(header.kid)) throw invalid();
    const key = await ring.verificationKey(header.kid);
    if (!key) throw invalid();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, key, {
        algorithms: [SIGNING_ALG],
        issuer: config.baseUrls.auth,
        audience: config.tokenAudience,
        clockTolerance: CLOCK_TOLERANCE_S,
        requiredClaims: REQUIRED_CLAIMS,
        currentDate: new Date(now()),
      }));
    } catch {
      throw invalid();
    }
    const { org, cid, sub, jti, exp, iat } = payload;
    if (!nonEmpty(org) || !nonEmpty(cid) || !nonEmpty(sub) || !nonEmpty(jti) || typeof exp !== 'number')
      throw invalid();
    // jose checks `iat` only for type; one from the future is not a token we issued.
    if (typeof iat !== 'number' || iat > now() / 1000 + CLOCK_TOLERANCE_S) throw invalid();
    return { ...payload, org, cid, sub, jti, exp };
  }

  /**
   * Tokens already verified, keyed by their exact text (a client reuses its token for up to
   * an hour): a hit skips the ECDSA verification but never the lifetime and revocation checks.
   * Bounded; the oldest entry goes first.
   */
  const verified = new Map<string, { kid: string; claims: Awaited<ReturnType<typeof checkToken>> }>();
  async function checkTokenCached(token: string): Promise<Awaited<ReturnType<typeof checkToken>>> {
    const hit = verified.get(token);
    if (hit) {
      // Lifetime and signing-key expiry still apply to a remembered token.
      if (hit.claims.exp + CLOCK_TOLERANCE_S <= now() / 1000 || !(await ring.verificationKey(hit.kid))) {
        verified.delete(token);
        throw invalid();
      }
      return hit.claims;
    }
    const claims = await checkToken(token);
    if (verified.size >= VERIFIED_CACHE_MAX) verified.delete(verified.keys().next().value as string);
    verified.set(token, { kid: decodeProtectedHeader(token).kid as string, claims });
    return claims;
  }

  async function verify(token: string): Promise<AuthContext> {
    const claims = await checkTokenCached(token);
    // Store failures propagate as they are (500/503): an outage must not look like a bad token.
    if (!(await statuses.isActive(claims.cid, claims.org))) throw invalid();
    return {
      orgId: claims.org,
      credentialId: claims.cid,
      clientId: claims.sub,
      tokenId: claims.jti,
      expiresAt: new Date(claims.exp * 1000).toISOString(),
    };
  }

  async function revokeCredential(
    orgId: string,
    id: string,
    opts: { force?: boolean } = {},
  ): Promise<CredentialView | null> {
    const view = await revokeCredentialRow(db, orgId, id, opts);
    if (view?.revokedAt) statuses.markRevoked(id);
    return view;
  }

  return {
    issue,
    verify,
    jwks: () => ring.jwks(),
    rotate: () => ring.rotate(),
    revokeCredential,
    forgetCredential: (credentialId) => statuses.evict(credentialId),
    close: () => settleUsageWrites(),
  };
}
