/**
 * How a connection's secret reaches an upstream (spec Authentication 5: the credential an
 * upstream sees is the connection's, never the caller's token or channel key). The mapping of
 * secret shapes to schemes is ours and is documented on AppServerAuth in
 * openapi/management.yaml.
 */
import type { ConnectionSecret } from '../../connections/index.js';
import { GatewayError, RPC } from '../types.js';
import type { UpstreamAuth } from '../registry-validate.js';

/** Keys of a secret object tried, in order, for bearer and header schemes. */
const TOKEN_KEYS = ['token', 'accessToken', 'apiKey', 'key'] as const;

const unusable = (connectionId: string, scheme: string, why: string) =>
  new GatewayError(RPC.SERVER, `connection ${connectionId} has no usable secret for auth scheme ${scheme}: ${why}`);

function tokenOf(secret: ConnectionSecret | null): string | undefined {
  if (typeof secret === 'string') return secret || undefined;
  if (secret === null) return undefined;
  for (const k of TOKEN_KEYS) {
    const v = secret[k];
    if (typeof v === 'string' && v !== '') return v;
  }
  return undefined;
}

function basicPair(secret: ConnectionSecret | null): string | undefined {
  if (typeof secret === 'string') return secret.includes(':') ? secret : undefined;
  if (secret === null) return undefined;
  const { username, password } = secret;
  if (typeof username !== 'string' || username === '' || typeof password !== 'string') return undefined;
  return `${username}:${password}`;
}

/**
 * Request headers (lower-case names) carrying the credential. Header values must not hold
 * CR/LF: a secret that does is refused rather than sent (fetch would throw with the value).
 */
export function credentialHeaders(
  auth: UpstreamAuth,
  secret: ConnectionSecret | null,
  connectionId: string,
): Record<string, string> {
  switch (auth.scheme) {
    case 'none':
      return {};
    case 'basic': {
      const pair = basicPair(secret);
      if (!pair) throw unusable(connectionId, 'basic', 'expected {username, password} or "user:pass"');
      return { authorization: `Basic ${Buffer.from(pair, 'utf8').toString('base64')}` };
    }
    case 'bearer':
    case 'header': {
      const token = tokenOf(secret);
      if (!token)
        throw unusable(
          connectionId,
          auth.scheme,
          `expected a string or an object with one of ${TOKEN_KEYS.join(', ')}`,
        );
      if (/[\r\n\0]/.test(token)) throw unusable(connectionId, auth.scheme, 'it contains line breaks');
      if (auth.scheme === 'bearer') return { authorization: `Bearer ${token}` };
      return { [auth.headerName!.toLowerCase()]: token };
    }
  }
}
