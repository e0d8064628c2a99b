/**
 * The gateway's tool-server contract (spec sections 7-9). Every server reachable at
 * `{mcp_url}/<path>` — embedded (src/servers/*) or proxied application server
 * (src/gateway/upstream) — is a ToolServer; the JSON-RPC router (src/gateway/router.ts)
 * dispatches parsed requests straight to these, without building an McpServer per request.
 */
import type { Knex } from 'knex';
import type { Config } from '../config/index.js';
import type { Logger } from '../config/logger.js';

/** A JSON Schema object as MCP carries it (`type: "object"`, `properties`, `required`). */
export type JsonSchemaObject = {
  type: 'object';
  properties?: Record<string, unknown>;
  required?: string[];
  [k: string]: unknown;
};

/** A tool entry of `tools/list` (spec "Tool server and tool"). */
export interface ToolDef {
  name: string;
  description: string;
  inputSchema: JsonSchemaObject;
  title?: string | undefined;
  outputSchema?: JsonSchemaObject | undefined;
  annotations?: Record<string, unknown> | undefined;
}

export type ContentBlock = { type: string; [k: string]: unknown };

/** MCP CallToolResult, passed through unchanged from upstreams. A tool's own failure is `isError: true`. */
export interface CallResult {
  content: ContentBlock[];
  structuredContent?: Record<string, unknown> | undefined;
  isError?: boolean | undefined;
  _meta?: Record<string, unknown> | undefined;
  [k: string]: unknown;
}

/**
 * What a gateway call reaches beyond its caller: the store and the configuration (application
 * servers and their connections, discovery's remembered pairs, the embedded servers' records).
 */
export interface GatewayServices {
  db: Knex;
  config: Config;
  log: Logger;
}

/** What one gateway call knows about its caller. */
export interface GatewayContext {
  services: GatewayServices;
  log: Logger;
  /** Organisation of the verified runtime token; every lookup is scoped to it. */
  orgId: string;
  /**
   * Headers to forward to remote MCP upstreams (spec section 5 table): already filtered and
   * renamed (`X-Pf-Forward-Foo` → `foo`), never authorization/content-type/accept/mcp-session-id.
   */
  forwardedHeaders: Readonly<Record<string, string>>;
  /** Aborted when the call's deadline passes or the client goes away. */
  signal: AbortSignal;
  /**
   * An agent channel caller's `metadata` (spec "Agent API channel": forwarded to the agent as
   * `sourceMetadata`): embedded tools read it here; remote MCP tools get it as
   * `_meta.sourceMetadata` of tools/call. Absent outside agent turns.
   */
  sourceMetadata?: Readonly<Record<string, unknown>> | undefined;
  /**
   * One client of the organisation (a runtime token's API credential, an agent turn's chat):
   * discovery learns which tool a caller used after its own discover request
   * (src/servers/sidekick/usage.ts). Absent: the organisation as a whole.
   */
  callerId?: string | undefined;
}

/**
 * Told of every finished tools/call a caller made (discovery's learning from use,
 * src/servers/sidekick/usage.ts): `ok` false when the tool returned `isError`. Must return at
 * once and never throw. Calls that threw are not reported.
 */
export interface ToolCallObserver {
  toolCalled(ctx: GatewayContext, call: { server: string; tool: string; ok: boolean }): void;
}

/** A server at `{mcp_url}/<path>`. */
export interface ToolServer {
  path: string;
  name: string;
  description: string;
  embedded: boolean;
  /** Application servers: the service key their connections (PCID) must have (the parent's for children). */
  serviceKey?: string | undefined;
  listTools(ctx: GatewayContext): Promise<ToolDef[]>;
  /**
   * Application servers: the tools as listServers and discovery show them, from the per-process
   * listing cache (src/gateway/upstream/listings.ts): never waits on an upstream beyond the
   * listing budget, and says when the list is stale and why.
   */
  listing?(ctx: GatewayContext): Promise<{ tools: ToolDef[]; stale: boolean; error?: string | undefined }>;
  /**
   * Runs a tool. Protocol-level failures throw GatewayError / AppError (rendered as JSON-RPC
   * errors); a tool's own failure returns `isError: true`.
   */
  callTool(ctx: GatewayContext, name: string, args: Record<string, unknown>): Promise<CallResult>;
}

/** A JSON-RPC error raised by the gateway (spec Errors: validation/timeout -32000, internal -32603). */
export class GatewayError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'GatewayError';
  }
}

export const RPC = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL: -32603,
  /** Validation, timeouts, unsupported media, auth (spec Errors). */
  SERVER: -32000,
} as const;

/** A successful result whose structuredContent is a `T` (a tool handler's typed output). */
export type JsonResult<T> = CallResult & { structuredContent: T; isError?: false | undefined };

/** Success data in structuredContent and the same JSON in content[0].text (spec section 7). */
export function jsonResult<T extends Record<string, unknown>>(data: T): JsonResult<T> {
  return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data };
}

/** A tool's own failure: `isError: true` with a readable message. */
export function toolError(message: string, data?: Record<string, unknown>): CallResult & { isError: true } {
  const body = { error: message, ...(data ?? {}) };
  return { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body, isError: true };
}

/** One tool as the discovery index sees it. */
export interface CatalogTool {
  /** Server path: the tool is called at `{mcp_url}/<server>` (discovery's `serverName`). */
  server: string;
  /** Display name of the server (e.g. "Slack"). */
  serverTitle: string;
  serverDescription: string;
  embedded: boolean;
  /** Application servers: service key of the connections that reach it. */
  serviceKey?: string | undefined;
  tool: ToolDef;
}

/** A resource of the organisation (its collections; spec section 8 `resources`). */
export interface CatalogResource {
  id: string;
  name: string;
  /** datastore, filestore, knowledge-base, vault … */
  type: string;
  description?: string | undefined;
}

/** A connection as discovery returns it (spec section 8 `connections`). */
export interface CatalogConnection {
  id: string;
  name: string;
  serviceKey: string;
  status: string;
}

/**
 * Everything discovery indexes for an organisation. `fingerprint` is cheap and changes
 * whenever servers, tools, connections or resources change; the index is rebuilt then.
 * A fingerprint may end in `#<refresh>`: a change of that part alone (a periodic refresh of
 * upstream tool lists) rebuilds the index in the background while the previous one is served.
 */
export interface DiscoverySource {
  fingerprint(ctx: GatewayContext): Promise<string>;
  tools(ctx: GatewayContext): Promise<CatalogTool[]>;
  connections(ctx: GatewayContext): Promise<CatalogConnection[]>;
  resources(ctx: GatewayContext): Promise<CatalogResource[]>;
  /**
   * Application servers whose tool list is stale right now, with why (capability_details shows
   * it): the listing cache's view, never a wait on an upstream. Sources without upstreams omit it.
   */
  staleServers?(ctx: GatewayContext, paths: string[]): Promise<Map<string, string>>;
}
