/**
 * One discovery index per organisation (DESIGN.md section 5: every lookup is scoped by
 * organisation), kept while `source.fingerprint(ctx)` stays the same. When it changes, the
 * source is read again and the tool index is updated in place (only changed tools are
 * re-indexed); connections and resources are small and re-indexed whole. Concurrent calls
 * with the same fingerprint share one build. The least recently used organisations are
 * dropped beyond `maxOrgs`.
 */
import { performance } from 'node:perf_hooks';
import type { CatalogConnection, CatalogResource, CatalogTool, DiscoverySource, GatewayContext } from '../../gateway/types.js';
import { indexConnections, indexResources, ToolCatalog, type Indexed } from './catalog.js';

export interface OrgState {
  fingerprint: string;
  tools: ToolCatalog;
  connections: Indexed<CatalogConnection>;
  resources: Indexed<CatalogResource>;
  /** Service keys with at least one connection in status `connected`. */
  connectedKeys: ReadonlySet<string>;
}

interface Entry {
  fingerprint: string;
  ready: Promise<OrgState>;
}

export class OrgCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly source: DiscoverySource,
    private readonly maxOrgs: number,
  ) {}

  async get(ctx: GatewayContext): Promise<OrgState> {
    const fingerprint = await this.source.fingerprint(ctx);
    const current = this.entries.get(ctx.orgId);
    if (current && current.fingerprint === fingerprint) {
      // Map order is insertion order: re-inserting marks the organisation as recently used.
      this.entries.delete(ctx.orgId);
      this.entries.set(ctx.orgId, current);
      return current.ready;
    }
    const entry: Entry = { fingerprint, ready: this.load(ctx, fingerprint, current?.ready) };
    this.entries.delete(ctx.orgId);
    this.entries.set(ctx.orgId, entry);
    this.evict();
    entry.ready.catch(() => {
      if (this.entries.get(ctx.orgId) === entry) this.entries.delete(ctx.orgId);
    });
    return entry.ready;
  }

  /** Organisations currently cached (for tests and metrics). */
  get size(): number {
    return this.entries.size;
  }

  private evict(): void {
    while (this.entries.size > this.maxOrgs) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  private async load(ctx: GatewayContext, fingerprint: string, previous?: Promise<OrgState>): Promise<OrgState> {
    const [tools, connections, resources] = await Promise.all([
      this.source.tools(ctx),
      this.source.connections(ctx),
      this.source.resources(ctx),
    ]);
    // Reuse the previous index (updated in place) once its own build has finished.
    const base = previous ? await previous.catch(() => undefined) : undefined;
    const catalog = base?.tools ?? new ToolCatalog();
    const started = performance.now();
    const stats = catalog.update(tools);
    const state: OrgState = {
      fingerprint,
      tools: catalog,
      connections: indexConnections(connections, applicationNames(tools)),
      resources: indexResources(resources),
      connectedKeys: new Set(connections.filter((c) => c.status === 'connected').map((c) => c.serviceKey)),
    };
    ctx.log.info(
      { orgId: ctx.orgId, tools: catalog.size, ...stats, ms: Math.round(performance.now() - started) },
      'discovery index updated',
    );
    return state;
  }
}

/** Service key → display names of its servers ("slack" → "Slack"). */
function applicationNames(tools: readonly CatalogTool[]): Map<string, string> {
  const names = new Map<string, Set<string>>();
  for (const t of tools) {
    if (!t.serviceKey) continue;
    const set = names.get(t.serviceKey) ?? new Set<string>();
    set.add(t.serverTitle);
    names.set(t.serviceKey, set);
  }
  return new Map([...names].map(([k, v]) => [k, [...v].join(' ')]));
}
