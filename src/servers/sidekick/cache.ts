/**
 * One discovery index per organisation (every lookup is scoped by
 * organisation), kept while `source.fingerprint(ctx)` stays the same. When it changes, the
 * source is read again and the tool index is updated in place (only changed tools are
 * re-indexed); connections and resources are small and re-indexed whole. Concurrent calls
 * with the same fingerprint share one build. When only the fingerprint's refresh part (after
 * `#`) turns, the built index keeps being served while one rebuild runs in the background
 * (stale-while-revalidate), so no request waits on the upstreams' tool lists. The least
 * recently used organisations are dropped beyond `maxOrgs`.
 */
import { performance } from 'node:perf_hooks';
import type {
  CatalogConnection,
  CatalogResource,
  CatalogTool,
  DiscoverySource,
  GatewayContext,
} from '../../gateway/index.js';
import { indexConnections, indexResources, ToolCatalog, type Indexed } from './catalog.js';
import { embedText, SHARED_SCOPE, type Semantic, type SemanticDoc, type SemanticIndex } from './semantic.js';
import type { SkillLibrary } from './skills.js';

export interface OrgState {
  fingerprint: string;
  tools: ToolCatalog;
  connections: Indexed<CatalogConnection>;
  resources: Indexed<CatalogResource>;
  /** Service keys with at least one connection in status `connected`. */
  connectedKeys: ReadonlySet<string>;
  /** Vectors of the organisation's documents, when an embeddings provider is configured. */
  semantic?: SemanticIndex | undefined;
}

interface Entry {
  fingerprint: string;
  ready: Promise<OrgState>;
  /** Set once `ready` has resolved: the entry can be served while a newer one builds. */
  built?: boolean;
  /** A background rebuild for a newer refresh part is running. */
  refreshing?: boolean;
}

/** The fingerprint without its refresh part. */
const dataPart = (fingerprint: string): string => {
  const i = fingerprint.lastIndexOf('#');
  return i === -1 ? fingerprint : fingerprint.slice(0, i);
};

export class OrgCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly source: DiscoverySource,
    private readonly maxOrgs: number,
    private readonly semantic?: Semantic,
    private readonly skills?: () => Promise<SkillLibrary>,
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
    if (current?.built && dataPart(current.fingerprint) === dataPart(fingerprint)) {
      if (!current.refreshing) this.refresh(ctx, fingerprint, current);
      return current.ready;
    }
    return this.start(ctx, fingerprint, current?.ready).ready;
  }

  /** Builds the index of `ctx.orgId` now, unless it is cached (start-up pre-warm). */
  async warm(ctx: GatewayContext): Promise<OrgState> {
    return this.get(ctx);
  }

  private start(ctx: GatewayContext, fingerprint: string, previous?: Promise<OrgState>): Entry {
    const entry: Entry = { fingerprint, ready: this.load(ctx, fingerprint, previous) };
    this.entries.delete(ctx.orgId);
    this.entries.set(ctx.orgId, entry);
    this.evict();
    entry.ready.then(
      () => {
        entry.built = true;
      },
      () => {
        if (this.entries.get(ctx.orgId) === entry) this.entries.delete(ctx.orgId);
      },
    );
    return entry;
  }

  /** Rebuilds in the background; the new index replaces `current` when it is ready. */
  private refresh(ctx: GatewayContext, fingerprint: string, current: Entry): void {
    current.refreshing = true;
    // Not tied to the request that noticed it: that caller may go away before the rebuild ends.
    const detached: GatewayContext = {
      services: ctx.services,
      log: ctx.log,
      orgId: ctx.orgId,
      forwardedHeaders: ctx.forwardedHeaders,
      signal: new AbortController().signal,
    };
    const next: Entry = { fingerprint, ready: this.load(detached, fingerprint, current.ready) };
    next.ready.then(
      () => {
        next.built = true;
        // Only if nothing newer replaced the entry meanwhile (a data change starts its own build).
        if (this.entries.get(ctx.orgId) === current) this.entries.set(ctx.orgId, next);
      },
      (err: unknown) => {
        current.refreshing = false;
        ctx.log.warn(
          { orgId: ctx.orgId, err },
          'discovery: background index refresh failed; the previous index is served',
        );
      },
    );
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
    const appNames = applicationNames(tools);
    const state: OrgState = {
      fingerprint,
      tools: catalog,
      connections: indexConnections(connections, appNames),
      resources: indexResources(resources),
      connectedKeys: new Set(connections.filter((c) => c.status === 'connected').map((c) => c.serviceKey)),
    };
    if (this.semantic) {
      // Embeddings are made in the background: this build never waits for the provider.
      state.semantic = base?.semantic ?? this.semantic.index(ctx.orgId);
      state.semantic.sync(semanticDocs(ctx.orgId, state, appNames, this.skills ? await this.skills() : undefined));
    }
    ctx.log.info(
      { orgId: ctx.orgId, tools: catalog.size, ...stats, ms: Math.round(performance.now() - started) },
      'discovery index updated',
    );
    return state;
  }
}

/** What the semantic index embeds: tools, connections, resources and skills. */
function semanticDocs(
  orgId: string,
  state: OrgState,
  appNames: ReadonlyMap<string, string>,
  skills?: SkillLibrary,
): SemanticDoc[] {
  const docs: SemanticDoc[] = [];
  for (const e of state.tools.entries()) {
    docs.push({ key: `t:${e.id}`, scope: e.tool.embedded ? SHARED_SCOPE : orgId, text: embedText.tool(e.tool) });
  }
  for (const c of state.connections.items) {
    docs.push({ key: `c:${c.id}`, scope: orgId, text: embedText.connection(c, appNames.get(c.serviceKey) ?? '') });
  }
  for (const r of state.resources.items) docs.push({ key: `r:${r.id}`, scope: orgId, text: embedText.resource(r) });
  skills?.skills.forEach((s, i) => docs.push({ key: `s:${i}`, scope: SHARED_SCOPE, text: embedText.skill(s) }));
  return docs;
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
