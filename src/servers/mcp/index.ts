/**
 * Embedded server `mcp` (spec section 7): `listServers` returns every server visible to the
 * organisation — embedded ones and its application servers — as `{name, path, description,
 * embedded, tools}` with `tools` the tool names (schemas/tools/mcp/listServers.output).
 */
import { jsonResult, type GatewayContext, type ToolServer } from '../../gateway/types.js';
import { embeddedServer } from '../embedded.js';

export interface ServerLister {
  visibleServers(ctx: GatewayContext): Promise<ToolServer[]>;
}

/** One server's tool names; an upstream that cannot list its tools right now shows none. */
async function toolNames(ctx: GatewayContext, server: ToolServer): Promise<string[]> {
  try {
    return (await server.listTools(ctx)).map((t) => t.name);
  } catch (err) {
    ctx.log.warn({ server: server.path, err: err instanceof Error ? err.message : String(err) }, 'listServers: tools unavailable');
    return [];
  }
}

type Entry = { name: string; path: string; description: string; embedded: boolean; tools: string[] };

async function entryOf(ctx: GatewayContext, s: ToolServer): Promise<Entry> {
  return { name: s.name, path: s.path, description: s.description, embedded: s.embedded, tools: await toolNames(ctx, s) };
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
  // listServers is the server's only tool.
  return embeddedServer('mcp', async (ctx) => {
    const servers = await lister.visibleServers(ctx);
    return jsonResult({ servers: await Promise.all(servers.map((s) => entry(ctx, s))) });
  });
}
