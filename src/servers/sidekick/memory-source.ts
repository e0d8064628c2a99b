/**
 * Helpers to feed discovery: the tools of the servers described in schemas/tools (embedded
 * servers and application-server templates, from the generated tool table), and an in-memory
 * DiscoverySource whose fingerprint changes on every `set` (tests, benches, and installations
 * that assemble their catalogue in code).
 */
import { toolServers } from '../../../generated/tools/servers.js';
import {
  type CatalogConnection,
  type CatalogResource,
  type CatalogTool,
  type DiscoverySource,
  type GatewayContext,
  toolDefsOf,
} from '../../gateway/index.js';

/** CatalogTools of every server in the generated tool table (optionally only some paths). */
export function describedServerTools(paths?: readonly string[]): CatalogTool[] {
  return toolServers
    .filter((s) => !paths || paths.includes(s.path))
    .flatMap((s) =>
      toolDefsOf(s.path).map((tool) => ({
        server: s.path,
        serverTitle: s.name,
        serverDescription: s.description,
        embedded: s.embedded,
        ...(s.embedded ? {} : { serviceKey: s.path }),
        tool,
      })),
    );
}

export interface CatalogData {
  tools: CatalogTool[];
  connections?: CatalogConnection[];
  resources?: CatalogResource[];
}

export interface MemorySource extends DiscoverySource {
  /** Replaces the data of one organisation (or of every organisation without `orgId`). */
  set(data: CatalogData, orgId?: string): void;
}

/** Data per organisation, falling back to the shared data set. */
export function createMemorySource(shared: CatalogData): MemorySource {
  let version = 0;
  let all = shared;
  const perOrg = new Map<string, CatalogData>();
  const of = (ctx: GatewayContext): CatalogData => perOrg.get(ctx.orgId) ?? all;
  return {
    set(data, orgId) {
      version++;
      if (orgId) perOrg.set(orgId, data);
      else all = data;
    },
    fingerprint: async (ctx) => `${ctx.orgId}:${perOrg.has(ctx.orgId) ? 'own' : 'shared'}:${version}`,
    tools: async (ctx) => of(ctx).tools,
    connections: async (ctx) => of(ctx).connections ?? [],
    resources: async (ctx) => of(ctx).resources ?? [],
  };
}
