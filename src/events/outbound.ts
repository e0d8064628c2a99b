/**
 * Event calls through the outbound policy (src/http/outbound.ts): the SSRF guard checks the
 * address actually connected to, after DNS; URLs on this service's own triggers origin are
 * always allowed, so the demo works without OUTBOUND_ALLOWLIST. Calls follow no redirects,
 * time out after 10 s and read at most 1 MiB of the answer (openapi/resources.yaml).
 */
import { isIP } from 'node:net';
import type { Config } from '../config/index.js';
import { OutboundPolicy, outboundRequest, parseOutboundAllowlist } from '../http/outbound.js';
import type { Poster } from './dispatcher.js';
import type { AddressCheck } from './trigger-urls.js';

export const EVENT_CALL_TIMEOUT_MS = 10_000;
export const EVENT_CALL_MAX_RESPONSE_BYTES = 1024 * 1024;

export function eventCalls(config: Pick<Config, 'outboundAllowlist' | 'baseUrls'>): { post: Poster; addresses: AddressCheck } {
  const policy = new OutboundPolicy(parseOutboundAllowlist(config.outboundAllowlist.join(',')), [config.baseUrls.triggers]);
  const post: Poster = async (url, body, headers) => {
    const res = await outboundRequest(url, { method: 'POST', headers, body, timeoutMs: EVENT_CALL_TIMEOUT_MS, maxResponseBytes: EVENT_CALL_MAX_RESPONSE_BYTES, followRedirects: false }, policy);
    return { status: res.status, headers: res.headers, durationMs: res.durationMs };
  };
  const addresses: AddressCheck = {
    refusal(url) {
      const host = url.hostname.replace(/^\[|\]$/g, '');
      const literal = host.toLowerCase() === 'localhost' ? '127.0.0.1' : isIP(host) ? host : undefined;
      if (!literal || policy.allowsOrigin(url)) return undefined;
      try {
        policy.check(literal);
        return undefined;
      } catch (err) {
        return (err as Error).message;
      }
    },
  };
  return { post, addresses };
}
