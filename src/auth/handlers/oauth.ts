import type { IncomingMessage } from 'node:http';
import type { Logger } from '../../config/logger.js';
import { OAuthError, type OAuthErrorCode } from '../../errors/index.js';
import { addressKey, type ClientAttempt, type ClientAuthLimiter, type LimitVerdict } from '../client-auth-limits.js';

/** RFC 6749 section 5.1: token responses, and errors too, must not be cached. */
export const NO_STORE: Readonly<Record<string, string>> = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

/**
 * The one way the token endpoints fail (spec section 6, "Errors"; RFC 6749 section 5.2).
 * invalid_client answers 401 and, as RFC 6749 requires when the client may have used the
 * Authorization header, carries a Basic challenge.
 */
export function oauthFailure(code: OAuthErrorCode, description: string): OAuthError {
  const headers: Record<string, string> = { ...NO_STORE };
  if (code === 'invalid_client') headers['WWW-Authenticate'] = 'Basic realm="switchyard"';
  return new OAuthError(code, description, headers);
}

/**
 * A form parameter. RFC 6749 section 3.2: parameters must not be repeated; a repeated one
 * (the form parser gives an array) or a non-string is an invalid request.
 */
export function formParam<F extends object>(form: F, name: Extract<keyof F, string>): string | undefined {
  const value: unknown = form[name];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string')
    throw oauthFailure('invalid_request', `The ${name} parameter must be given once, as a string.`);
  return value;
}

/** RFC 6749 appendix B: Basic credentials are form-urlencoded before base64. */
function formDecode(value: string): string {
  return decodeURIComponent(value.replace(/\+/g, ' '));
}

/**
 * `Authorization: Basic base64(client_id:client_secret)` (spec section 6, RFC 6749 section
 * 2.3.1). A malformed header or another scheme is a failed client authentication.
 */
export function parseBasicCredentials(authorization: string): { clientId: string; clientSecret: string } {
  const match = /^Basic[ ]+([A-Za-z0-9+/]+={0,2})[ ]*$/i.exec(authorization);
  if (!match?.[1])
    throw oauthFailure('invalid_client', 'The Authorization header must be Basic base64(client_id:client_secret).');
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0)
    throw oauthFailure('invalid_client', 'The Authorization header must be Basic base64(client_id:client_secret).');
  try {
    const clientId = formDecode(decoded.slice(0, colon));
    const clientSecret = formDecode(decoded.slice(colon + 1));
    if (!clientId || !clientSecret) throw new Error('empty');
    return { clientId, clientSecret };
  } catch {
    throw oauthFailure('invalid_client', 'The Authorization header must be Basic base64(client_id:client_secret).');
  }
}

/** `org:<organization_id>` (spec section 6); null when the value has another form. */
export function parseOrgScope(scope: string): string | null {
  const match = /^org:([A-Za-z0-9_-]{1,64})$/.exec(scope);
  return match?.[1] ?? null;
}

/**
 * The source address of a token request as a window key: the socket's peer address. No
 * forwarding header (X-Forwarded-For, Forwarded) is trusted: the service has no trusted-proxy
 * setting, and a header any client can write would let it choose its own window.
 */
export function sourceAddress(req: { raw: IncomingMessage }): string {
  return addressKey(req.raw.socket.remoteAddress);
}

/**
 * The 429 of the failure limits (openapi/auth.yaml): `too_many_requests` when the source
 * address is over its limit (the credentials were not read), `invalid_client` when they were
 * read and are wrong and the client (or organisation) is over its limit. Retry-After in whole
 * seconds (RFC 9110 section 10.2.3); no WWW-Authenticate, which belongs to 401.
 */
function limitedFailure(verdict: Extract<LimitVerdict, { limited: true }>): OAuthError {
  const headers = { ...NO_STORE, 'Retry-After': String(verdict.retryAfterS) };
  if (verdict.by === 'address') {
    return new OAuthError(
      'too_many_requests',
      `Too many failed client authentications from this address; retry after ${verdict.retryAfterS} seconds.`,
      headers,
    );
  }
  return new OAuthError(
    'invalid_client',
    `Client authentication failed, and too many have failed for this client; retry after ${verdict.retryAfterS} seconds.`,
    headers,
    429,
  );
}

/** Before the credentials are read: 429 while the source address is over its failure limit. */
export async function refuseLimitedAddress(limiter: ClientAuthLimiter, address: string, log: Logger): Promise<void> {
  const verdict = await limiter.beforeAttempt(address);
  if (!verdict.limited) return;
  // Debug only: an attack is many of these; reaching the limit was logged once at warn.
  log.debug({ address, retryAfterS: verdict.retryAfterS }, 'token request refused: address over its failure limit');
  throw limitedFailure(verdict);
}

/**
 * What a failed token request answers. A client-authentication failure (invalid_client) is
 * counted against the address and the account and answered as it is (401), or 429 past a
 * limit; any other error passes unchanged and is not counted.
 */
export async function countedFailure(
  limiter: ClientAuthLimiter,
  attempt: ClientAttempt,
  err: unknown,
  log: Logger,
): Promise<unknown> {
  if (!(err instanceof OAuthError) || err.error !== 'invalid_client') return err;
  const verdict = await limiter.failed(attempt);
  if (verdict.reached) {
    const what =
      verdict.reached === 'address'
        ? 'an address reached its failure limit: its token requests are refused for now'
        : 'a client is over its failure limit: its wrong secrets answer 429 for now';
    log.warn({ account: attempt.account, address: attempt.address }, `token endpoint: ${what}`);
  }
  if (!verdict.limited) return err;
  return limitedFailure(verdict);
}
