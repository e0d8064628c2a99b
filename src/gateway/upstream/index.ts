/**
 * Proxied application servers (spec sections 5, 7, 13 and Authentication 5): remote MCP
 * servers (Streamable HTTP or legacy SSE), OpenAPI-described HTTP APIs and the coding-agent
 * template, reached with the connection named by the `PCID` argument.
 */
export { createAppToolServer, listAppServerTools, listingHealth } from './app-server.js';
export type { ListingHealth } from './listings.js';
export { UpstreamPool, type UpstreamPoolOptions } from './pool.js';
export { forwardedHeaders, DROPPED_FORWARD_NAMES, FORWARD_PREFIX } from './forwarding.js';
export { resolvePcid, ConnectionCache, type ResolvedConnection } from './pcid.js';
export { credentialHeaders } from './credentials.js';
export { CODING_AGENT_TOOL } from './coding-agent.js';
