import { OAuthError, type OAuthErrorCode } from '../../errors/index.js';

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
