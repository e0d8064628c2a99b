/**
 * Embedded server `mcp` (spec section 7): `listServers` returns every server visible to the
 * organisation — embedded ones and its application servers — as `{name, path, description,
 * embedded, tools}` with `tools` the tool names (schemas/tools/mcp/listServers.output).
 * Application servers' tools come from the listing cache (src/gateway/upstream/listings.ts): a
 * slow or broken upstream costs at most the listing budget once, its entry says `stale: true`
 * and `error`, and it never delays another server's entry.
 */
import { jsonResult, type GatewayContext, type ToolServer, embeddedServer } from '../../gateway/index.js';

export interface ServerLister {
  visibleServers(ctx: GatewayContext): Promise<ToolServer[]>;
}

/** One server's tool names; an upstream that cannot list its tools right now shows none. */
async function toolNames(ctx: GatewayContext, server: ToolServer): Promise<string[]> {
  try {
    return (await server.listTools(ctx)).map((t) => t.name);
  } catch (err) {
    ctx.log.warn(
      { server: server.path, err: err instanceof Error ? err.message : String(err) },
      'listServers: tools unavailable',
    );
    return [];
  }
}

type Entry = {
  name: string;
  path: string;
  description: string;
  embedded: boolean;
  tools: string[];
  stale?: boolean;
  error?: string;
};

async function entryOf(ctx: GatewayContext, s: ToolServer): Promise<Entry> {
  const base = { name: s.name, path: s.path, description: s.description, embedded: s.embedded };
  if (!s.listing) return { ...base, tools: await toolNames(ctx, s) };
  try {
    const listing = await s.listing(ctx);
    return {
      ...base,
      tools: listing.tools.map((t) => t.name),
      ...(listing.stale ? { stale: true } : {}),
      ...(listing.error !== undefined ? { error: listing.error.slice(0, 500) } : {}),
    };
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    ctx.log.warn({ server: s.path, err: error }, 'listServers: tools unavailable');
    return { ...base, tools: [], stale: true, error: error.slice(0, 500) };
  }
}

export function createMcpServer(lister: ServerLister): ToolServer {
  // Embedded servers and their tools never change while the process runs: their entries are built once.
  const embeddedEntries = new WeakMap<ToolServer, Entry>();
  const entry = async (ctx: GatewayContext, s: ToolServer): Promise<Entry> => {
    if (!s.embedded) return entryOf(ctx, s);
    let e = embeddedEntries.get(s);
    if (!e) embeddedEntries.set(s, (e = await entryOf(ctx, s)));
    return e;
  };
  return embeddedServer('mcp', {
    async listServers(_args, ctx) {
      const servers = await lister.visibleServers(ctx);
      return jsonResult({ servers: await Promise.all(servers.map((s) => entry(ctx, s))) });
    },
  });
}
