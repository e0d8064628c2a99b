/**
 * Application servers as ToolServers (spec sections 5, 7 and Authentication 5): every tool
 * takes the extra string argument `PCID`; a call resolves it (pcid.ts), strips it, and reaches
 * the upstream with that connection's credential. Forwarded headers (spec section 5) go to
 * remote MCP upstreams only.
 */
import type { AppServer } from '../registry.js';
import type { McpUpstream, OpenapiUpstream } from '../registry-validate.js';
import { GatewayError, RPC, type CallResult, type GatewayContext, type ToolDef, type ToolServer } from '../types.js';
import { CODING_AGENT_TOOL, checkLaunchInput, codingAgentTool, launchAgent } from './coding-agent.js';
import { credentialHeaders } from './credentials.js';
import { Deadline, upstreamFailure } from './deadline.js';
import { forwardKey } from './forwarding.js';
import { McpSession } from './mcp-session.js';
import { callOperation } from './openapi-call.js';
import { buildCatalogue, type OpenapiCatalogue } from './openapi-tools.js';
import { resolvePcid, type ResolvedConnection } from './pcid.js';
import type { UpstreamPool } from './pool.js';
import { UNKNOWN_HEALTH, type Listing, type ListingHealth } from './listings.js';
import { children, secondsSince, upstreamDuration } from '../../kernel/metrics.js';

const durationOf = children((method, outcome) => upstreamDuration.labels(method, outcome));

/** What an upstream kind does once the connection is known. */
interface Backend {
  list(ctx: GatewayContext, conn: ResolvedConnection, deadline: Deadline): Promise<ToolDef[]>;
  call(
    ctx: GatewayContext,
    conn: ResolvedConnection,
    options: { name: string; args: Record<string, unknown>; deadline: Deadline },
  ): Promise<CallResult>;
}

const pcidSchema = (serviceKey: string) => ({
  type: 'string',
  minLength: 1,
  description: `Connection id (PCID) of a connected "${serviceKey}" connection of your organisation; the call uses that connection's credential.`,
});

/** Tools with the required `PCID` argument added (spec "Tool server and tool"). */
function withPcid(tools: ToolDef[], serviceKey: string): ToolDef[] {
  const pcid = pcidSchema(serviceKey);
  return tools.map((t) => {
    const required = (t.inputSchema.required ?? []).filter((r) => r !== 'PCID');
    return {
      ...t,
      inputSchema: {
        ...t.inputSchema,
        properties: { ...(t.inputSchema.properties ?? {}), PCID: pcid },
        required: [...required, 'PCID'],
      },
    };
  });
}

function mcpBackend(server: AppServer, upstream: McpUpstream, pool: UpstreamPool): Backend {
  const open = (ctx: GatewayContext, conn: ResolvedConnection) => () =>
    McpSession.open({
      upstream,
      agent: pool.agentFor(ctx.orgId, new URL(upstream.url)),
      fetch: pool.fetchFor(ctx.orgId),
      // Credential last: a forwarded header can never replace the connection's credential.
      headers: { ...ctx.forwardedHeaders, ...credentialHeaders(server.auth, conn.secret, conn.id) },
      toolsTtlMs: pool.toolsTtlMs,
      timeoutMs: pool.timeoutMs,
      log: ctx.log,
    });
  const key = (ctx: GatewayContext, conn: ResolvedConnection) =>
    `${ctx.orgId}\0${server.serverId}\0${server.version}\0${conn.id}\0${conn.version}\0${forwardKey(ctx.forwardedHeaders)}`;
  return {
    list: (ctx, conn, deadline) => pool.use(key(ctx, conn), open(ctx, conn), deadline, (s) => s.listTools(deadline)),
    call: (ctx, conn, { name, args, deadline }) =>
      pool.use(key(ctx, conn), open(ctx, conn), deadline, (s) => s.callTool(name, args, deadline, ctx.sourceMetadata)),
  };
}

function openapiBackend(server: AppServer, upstream: OpenapiUpstream, pool: UpstreamPool): Backend {
  const catalogue = () =>
    pool.catalogue<OpenapiCatalogue>(`${server.serverId}\0${server.version}`, () => buildCatalogue(upstream.document));
  return {
    list: async () => catalogue().tools,
    call: async (ctx, conn, { name, args, deadline }) => {
      const op = catalogue().operations.get(name);
      if (!op) throw new GatewayError(RPC.SERVER, `unknown tool "${name.slice(0, 100)}" on server ${server.path}`);
      // Forwarded headers are deliberately not passed (spec section 5).
      const target = {
        baseUrl: upstream.baseUrl,
        credential: credentialHeaders(server.auth, conn.secret, conn.id),
        fetch: pool.fetchFor(ctx.orgId),
      };
      return callOperation(target, { tool: name, op, args }, deadline);
    },
  };
}

function codingAgentBackend(server: AppServer, baseUrl: string, pool: UpstreamPool): Backend {
  return {
    list: async () => [codingAgentTool],
    call: async (ctx, conn, { name, args, deadline }) => {
      if (name !== CODING_AGENT_TOOL)
        throw new GatewayError(RPC.SERVER, `unknown tool "${name.slice(0, 100)}" on server ${server.path}`);
      const input = checkLaunchInput({ ...args, PCID: conn.id });
      return launchAgent(
        { baseUrl, credential: credentialHeaders(server.auth, conn.secret, conn.id), fetch: pool.fetchFor(ctx.orgId) },
        input,
        deadline,
      );
    },
  };
}

function backendOf(server: AppServer, pool: UpstreamPool): Backend {
  const u = server.upstream;
  switch (u.type) {
    case 'mcp':
      return mcpBackend(server, u, pool);
    case 'openapi':
      return openapiBackend(server, u, pool);
    case 'coding-agent':
      return codingAgentBackend(server, u.baseUrl, pool);
  }
}

/** Service keys a server's PCIDs may have: the parent's first (children share its PCID), then its own. */
function serviceKeysOf(server: AppServer, parent: AppServer | undefined): string[] {
  const primary = parent?.service_key ?? server.service_key;
  return primary === server.service_key ? [primary] : [primary, server.service_key];
}

/** One upstream request: `method` for the latency metric, `what` for failure messages. */
async function run<T>(
  ctx: GatewayContext,
  pool: UpstreamPool,
  { method, what }: { method: 'tools/list' | 'tools/call'; what: string },
  fn: (d: Deadline) => Promise<T>,
): Promise<T> {
  const deadline = new Deadline(ctx.signal, pool.timeoutMs);
  const started = performance.now();
  let outcome = 'error';
  try {
    const result = await fn(deadline);
    outcome = 'ok';
    return result;
  } catch (err) {
    throw upstreamFailure(err, what, deadline, ctx.log);
  } finally {
    deadline.done();
    durationOf(method, outcome).observe(secondsSince(started));
  }
}

/**
 * The tools an organisation sees on an application server. Tool listing carries no PCID, so it
 * uses a connected connection of the organisation for the service key (the lowest id when
 * there are several); with none, the server shows no tools (spec section 5: "the tools simply
 * do not appear and no error is given"). Upstream failures throw GatewayError.
 */
async function listFor(
  ctx: GatewayContext,
  server: AppServer,
  { parent, pool, backend }: { parent: AppServer | undefined; pool: UpstreamPool; backend: Backend },
): Promise<ToolDef[]> {
  const keys = serviceKeysOf(server, parent);
  const candidates = await pool.connections.connected(ctx, keys);
  if (candidates.length === 0) return [];
  const conn = await resolvePcid(ctx, keys, candidates[0]!.id, pool.connections);
  const what = `upstream ${server.path} tools/list`;
  const tools = await run(ctx, pool, { method: 'tools/list', what }, (d) => backend.list(ctx, conn, d));
  return withPcid(tools, keys[0]!);
}

/** The start of the listing keys of one registration version (every parent and connection). */
const listingPrefix = (orgId: string, server: Pick<AppServer, 'serverId' | 'version'>) =>
  `${orgId}\u0000${server.serverId}@${server.version}\u0000`;

/** How this process last listed each server's tools (GET /v1/servers `health`), in one walk of the listings. */
export function listingHealth(
  pool: UpstreamPool,
  orgId: string,
  servers: readonly Pick<AppServer, 'serverId' | 'version'>[],
): ListingHealth[] {
  const org = `${orgId}\u0000`;
  // A key's server part ends at its second separator (listingPrefix).
  const byServer = pool.listings.healthBy((key) =>
    key.startsWith(org) ? key.slice(0, key.indexOf('\u0000', org.length) + 1) : undefined,
  );
  return servers.map((s) => byServer.get(listingPrefix(orgId, s)) ?? UNKNOWN_HEALTH);
}

/**
 * The tools for listServers and discovery, through the pool's listing cache (listings.ts): the
 * upstream is asked with the same connection as listFor, and no caller waits on it beyond the
 * listing budget.
 */
async function listingFor(
  ctx: GatewayContext,
  server: AppServer,
  { parent, pool, backend }: { parent: AppServer | undefined; pool: UpstreamPool; backend: Backend },
): Promise<Listing> {
  const keys = serviceKeysOf(server, parent);
  const candidates = await pool.connections.connected(ctx, keys);
  if (candidates.length === 0) return { tools: [], stale: false };
  const conn = await resolvePcid(ctx, keys, candidates[0]!.id, pool.connections);
  const key = `${listingPrefix(ctx.orgId, server)}${parent ? `${parent.serverId}@${parent.version}` : ''}\u0000${conn.id}@${conn.version}`;
  return pool.listings.get(key, async () =>
    withPcid(
      await run(ctx, pool, { method: 'tools/list', what: `upstream ${server.path} tools/list` }, (d) =>
        backend.list(ctx, conn, d),
      ),
      keys[0]!,
    ),
  );
}

export function createAppToolServer(server: AppServer, parent: AppServer | undefined, pool: UpstreamPool): ToolServer {
  const backend = backendOf(server, pool);
  const keys = serviceKeysOf(server, parent);
  return {
    listing: (ctx) => listingFor(ctx, server, { parent, pool, backend }),
    path: server.path,
    name: server.name,
    description: server.description ?? '',
    embedded: false,
    serviceKey: keys[0],
    listTools: (ctx) => listFor(ctx, server, { parent, pool, backend }),
    async callTool(ctx, name, args) {
      const { PCID: pcid, ...rest } = args;
      const conn = await resolvePcid(ctx, keys, pcid, pool.connections);
      const what = `upstream ${server.path} tools/call ${name.slice(0, 100)}`;
      return run(ctx, pool, { method: 'tools/call', what }, (d) =>
        backend.call(ctx, conn, { name, args: rest, deadline: d }),
      );
    },
  };
}

/**
 * Tools of an application server for discovery (no PCID at hand): the listing cache's view, so
 * a slow or broken upstream costs at most the listing budget once and never hides or delays
 * another server's tools; a failed or late list is logged and shows the last good tools (none
 * before the first).
 */
export async function listAppServerTools(
  ctx: GatewayContext,
  server: AppServer,
  parent: AppServer | undefined,
  pool: UpstreamPool,
): Promise<ToolDef[]> {
  try {
    const listing = await listingFor(ctx, server, { parent, pool, backend: backendOf(server, pool) });
    if (listing.error !== undefined)
      ctx.log.warn({ server: server.path, err: listing.error }, 'application server tools stale for discovery');
    return listing.tools;
  } catch (err) {
    ctx.log.warn(
      { server: server.path, err: err instanceof Error ? err.message : String(err) },
      'application server tools unavailable for discovery',
    );
    return [];
  }
}
