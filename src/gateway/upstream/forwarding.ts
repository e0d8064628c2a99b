/**
 * Header forwarding (spec section 5 table): a request header `X-Pf-Forward-<Name>` reaches
 * remote MCP upstreams as `<name>` (lower case); headers without the prefix are never
 * forwarded. Where forwarded headers go is decided by the callers: only remote MCP upstreams
 * reached with a matching connection receive them; OpenAPI-generated and embedded servers get
 * none (spec section 5).
 */
import type { IncomingHttpHeaders } from 'node:http';

export const FORWARD_PREFIX = 'x-pf-forward-';

/**
 * Names dropped even when prefixed. The spec names authorization, content-type, accept and
 * mcp-session-id. Our additions: the other MCP transport headers (mcp-protocol-version,
 * last-event-id) the SDK client owns; hop-by-hop and framing headers fetch manages or refuses
 * (host, connection, keep-alive, transfer-encoding, te, trailer, upgrade, content-length,
 * expect, accept-encoding, proxy-connection); and headers that carry credentials (cookie,
 * proxy-authorization) — spec Authentication 5: an upstream sees the connection's credential
 * and nothing else.
 */
export const DROPPED_FORWARD_NAMES: ReadonlySet<string> = new Set([
  'authorization',
  'content-type',
  'accept',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
  'host',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'content-length',
  'expect',
  'accept-encoding',
  'proxy-connection',
  'cookie',
  'proxy-authorization',
]);

/** The forwarded headers of an incoming request, renamed (`X-Pf-Forward-Foo` → `foo`). */
export function forwardedHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [rawName, value] of Object.entries(headers)) {
    // node lower-cases incoming names; lower-case again for objects built by hand.
    const name = rawName.toLowerCase();
    if (!name.startsWith(FORWARD_PREFIX) || value === undefined) continue;
    const target = name.slice(FORWARD_PREFIX.length);
    if (target === '' || DROPPED_FORWARD_NAMES.has(target)) continue;
    out[target] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/**
 * A stable text form of forwarded headers for the session cache key (spec section 5:
 * different values never share an upstream session). Empty for none, the common case.
 */
export function forwardKey(headers: Readonly<Record<string, string>>): string {
  const names = Object.keys(headers);
  if (names.length === 0) return '';
  names.sort();
  return JSON.stringify(names.map((n) => [n, headers[n]]));
}
