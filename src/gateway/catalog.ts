/**
 * The servers an organisation sees at `{mcp_url}/<path>` (spec section 7): the embedded
 * servers plus its application servers, resolved per call from a per-process memo. The
 * owners' write functions of registrations, connections and collections forget the
 * organisation's entries at once in the process that writes (`forgetOrg`, src/storage/changes.ts); other processes see a change within `ttlMs` (REVOCATION_CACHE_MS, the
 * bound already promised for key revocation). It is also discovery's source: every tool of
 * every server, the connections and the resources, with a cheap fingerprint that changes
 * when any of them does (an upstream's tool list arriving or changing included).
 */
import { allAppServers, appServersStamp, type AppServer } from './registry.js';
import { createAppToolServer, listAppServerTools, type UpstreamPool } from './upstream/index.js';
import { listUserConnections, connectionsStamp, CONNECTION_STATUSES } from '../connections/index.js';
import { collectionSummaries, collectionsStamp } from '../events/index.js';
import { TtlMemo } from '../kernel/ttl-memo.js';
import { metered } from './metered.js';
import {
  GatewayError,
  RPC,
  type CatalogConnection,
  type CatalogResource,
  type CatalogTool,
  type DiscoverySource,
  type GatewayContext,
  type ToolServer,
} from './types.js';

interface OrgServers {
  byPath: Map<string, ToolServer>;
  app: ToolServer[];
  /** The registrations behind `app`, with each one's parent (discovery needs their service keys). */
  registrations: { server: AppServer; parent: AppServer | undefined }[];
}

/** Application tool lists change without a registration change: discovery refreshes them this often. */
const UPSTREAM_TOOLS_REFRESH_MS = 5 * 60_000;

export class GatewayCatalog implements DiscoverySource {
  private readonly embedded = new Map<string, ToolServer>();
  private readonly orgs: TtlMemo<OrgServers>;
  private readonly fingerprints: TtlMemo<string>;
  /** Built ToolServers by registration version, so their per-server state survives memo refreshes. */
  private readonly built = new Map<string, ToolServer>();

  constructor(
    private readonly pool: UpstreamPool,
    ttlMs: number,
  ) {
    this.orgs = new TtlMemo(ttlMs);
    this.fingerprints = new TtlMemo(ttlMs);
  }

  registerEmbedded(server: ToolServer): void {
    this.embedded.set(server.path, metered(server, server.path));
  }

  /** After a registration, connection or collection change in this process (told by their owners' writes). */
  forgetOrg(orgId: string): void {
    this.orgs.delete(orgId);
    this.fingerprints.delete(orgId);
  }

  async resolve(ctx: GatewayContext, path: string): Promise<ToolServer | undefined> {
    return this.embedded.get(path) ?? (await this.orgServers(ctx)).byPath.get(path);
  }

  /** As resolve, for callers that name a server inside a tool call (gateway_invoke, tool steps). */
  async require(ctx: GatewayContext, path: string): Promise<ToolServer> {
    const server = await this.resolve(ctx, path);
    if (!server)
      throw new GatewayError(
        RPC.SERVER,
        `Unknown server "${path}" for this organisation: use a serverName from capabilities_discover or listServers`,
        { error: 'unknown_server' },
      );
    return server;
  }

  /** Embedded servers first, then the organisation's application servers by path. */
  async visibleServers(ctx: GatewayContext): Promise<ToolServer[]> {
    return [...this.embedded.values(), ...(await this.orgServers(ctx)).app];
  }

  private orgServers(ctx: GatewayContext): Promise<OrgServers> {
    return this.orgs.get(ctx.orgId, async () => {
      const rows = await allAppServers(ctx.services.db, ctx.orgId);
      const byPathReg = new Map(rows.map((r) => [r.path, r]));
      const registrations = rows.map((server) => ({
        server,
        parent: server.parentPath ? byPathReg.get(server.parentPath) : undefined,
      }));
      const app = registrations.map((r) => this.build(r.server, r.parent));
      return { byPath: new Map(app.map((s) => [s.path, s])), app, registrations };
    });
  }

  private build(server: AppServer, parent: AppServer | undefined): ToolServer {
    const key = `${server.serverId}@${server.version}/${parent ? `${parent.serverId}@${parent.version}` : ''}`;
    let built = this.built.get(key);
    if (!built) {
      if (this.built.size >= 10_000) this.built.delete(this.built.keys().next().value as string);
      built = metered(createAppToolServer(server, parent, this.pool), 'application');
      this.built.set(key, built);
    }
    return built;
  }

  // ---- DiscoverySource (spec section 8) ----

  private storedStamp(ctx: GatewayContext): Promise<string> {
    return this.fingerprints.get(ctx.orgId, async () => {
      const { db } = ctx.services;
      const [servers, connections, collections] = await Promise.all([
        appServersStamp(db, ctx.orgId),
        connectionsStamp(db, ctx.orgId),
        collectionsStamp(db, ctx.orgId),
      ]);
      return `${servers}|${connections}|${collections}`;
    });
  }

  /**
   * The stored part (memoised as the caches above), the generation of the organisation's
   * upstream tool lists (read live: a list that arrives after the index was built turns it, so
   * the next lookup indexes those tools), and after `#` the periodic refresh, which discovery
   * runs in the background (DiscoverySource).
   */
  async fingerprint(ctx: GatewayContext): Promise<string> {
    const stored = await this.storedStamp(ctx);
    const listings = this.pool.listings.generation(ctx.orgId);
    return `${stored}|${listings}#${Math.floor(Date.now() / UPSTREAM_TOOLS_REFRESH_MS)}`;
  }

  async tools(ctx: GatewayContext): Promise<CatalogTool[]> {
    const out: CatalogTool[] = [];
    for (const server of this.embedded.values()) {
      for (const tool of await server.listTools(ctx)) {
        out.push({
          server: server.path,
          serverTitle: server.name,
          serverDescription: server.description,
          embedded: true,
          tool,
        });
      }
    }
    // Discovery asks only when the fingerprint changed: read the registrations afresh, so an
    // index is never built from a memo older than the fingerprint it is stamped with.
    this.orgs.delete(ctx.orgId);
    const { registrations } = await this.orgServers(ctx);
    const lists = await Promise.all(registrations.map((r) => listAppServerTools(ctx, r.server, r.parent, this.pool)));
    registrations.forEach(({ server, parent }, i) => {
      for (const tool of lists[i]!) {
        out.push({
          server: server.path,
          serverTitle: server.name,
          serverDescription: server.description ?? '',
          embedded: false,
          serviceKey: parent?.service_key ?? server.service_key,
          tool,
        });
      }
    });
    return out;
  }

  async staleServers(ctx: GatewayContext, paths: string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    const { byPath } = await this.orgServers(ctx);
    await Promise.all(
      [...new Set(paths)].map(async (path) => {
        const server = byPath.get(path);
        if (!server?.listing) return;
        const listing = await server
          .listing(ctx)
          .catch((err: unknown) => ({ stale: true, error: err instanceof Error ? err.message : String(err) }));
        if (listing.stale) out.set(path, listing.error ?? 'the tool list is being refreshed');
      }),
    );
    return out;
  }

  async connections(ctx: GatewayContext): Promise<CatalogConnection[]> {
    const rows = await listUserConnections(ctx.services.db, ctx.orgId, CONNECTION_STATUSES);
    return rows.map((c) => ({ id: c.id, name: c.name, serviceKey: c.service_key, status: c.status }));
  }

  /**
   * The organisation's collections (spec section 14), by name, description and kind, so that
   * "the customers datastore" finds them. Items are not indexed one by one: a collection can
   * hold 100k of them; its description says what it holds.
   */
  async resources(ctx: GatewayContext): Promise<CatalogResource[]> {
    const rows = await collectionSummaries(ctx.services.db, ctx.orgId);
    return rows.map((r) => ({
      id: r.id,
      name: r.name,
      type: RESOURCE_KIND[r.type] ?? r.type,
      description: r.description || undefined,
    }));
  }
}

/** Collection types (openapi/management.yaml CollectionType) as discovery names resource kinds. */
const RESOURCE_KIND: Record<string, string> = {
  structured_datastore: 'datastore',
  unstructured_datastore: 'datastore',
  filestore: 'filestore',
  knowledge_base: 'knowledge-base',
  vault: 'vault',
};
