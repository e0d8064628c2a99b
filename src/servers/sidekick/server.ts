/**
 * The embedded discovery server `svc-sidekick` (spec section 8) and the discovery engine it
 * wraps. The engine is exported on its own so the `gateway` server (spec section 9) can serve
 * its copies of capabilities_discover and capability_details from the same indexes.
 * Tool definitions come from the generated tool table (schemas/tools/svc-sidekick), never
 * retyped here.
 */
import {
  embeddedServer,
  jsonResult,
  type DiscoverySource,
  type GatewayContext,
  type ToolServer,
} from '../../gateway/index.js';
import { parseDetailsArgs, parseDiscoverArgs } from './args.js';
import { OrgCache } from './cache.js';
import { details, type DetailsResult } from './details.js';
import { discover, type DiscoverResult } from './discover.js';
import { DEFAULT_SKILLS_DIR, loadSkillDir, SkillLibrary, type SkillDoc } from './skills.js';
import { toolKey, type UsageMemory } from './usage.js';
import type { Semantic } from './semantic.js';
import { discoveryDuration, secondsSince } from '../../kernel/metrics.js';

export const SIDEKICK_PATH = 'svc-sidekick';
export const DISCOVER_TOOL = 'capabilities_discover';
export const DETAILS_TOOL = 'capability_details';

export interface SidekickOptions {
  /** Skills to serve instead of reading `skillsDir` (tests, embedding applications). */
  skills?: readonly SkillDoc[] | undefined;
  /** Folder of skill files; default `skills/` at the repository root. */
  skillsDir?: string | undefined;
  /** Organisations whose index is kept in memory (least recently used dropped). Default 500. */
  maxOrgs?: number | undefined;
  /**
   * Learning from use (usage.ts): discover requests are noted, learned boosts ranked in and
   * capability_details says what was learned. Absent (DISCOVERY_LEARNING=false): none of it.
   */
  usage?: UsageMemory | undefined;
  /** Semantic ranking (semantic.ts): absent without EMBEDDINGS_URL, then ranking is lexical. */
  semantic?: Semantic | undefined;
  /**
   * An existing engine to serve (e.g. the one behind the gateway server's copies of the two
   * tools), so each organisation is indexed once. `source` and the other options are then unused.
   */
  engine?: DiscoveryEngine | undefined;
}

export interface DiscoveryEngine {
  discover(ctx: GatewayContext, args: unknown): Promise<DiscoverResult>;
  details(ctx: GatewayContext, args: unknown): Promise<DetailsResult>;
  /** Loaded skills (after the first call or `ready()`). */
  skills(): Promise<SkillLibrary>;
  /**
   * Builds the organisation's index (and, with embeddings, fills its vectors) unless cached:
   * the start-up pre-warm, so no request pays the first build.
   */
  warm(ctx: GatewayContext): Promise<void>;
}

export function createDiscoveryEngine(source: DiscoverySource, opts: SidekickOptions = {}): DiscoveryEngine {
  const cache = new OrgCache(source, opts.maxOrgs ?? 500, opts.semantic, () => skills());
  let library: Promise<SkillLibrary> | undefined;
  const skills = (): Promise<SkillLibrary> => {
    library ??= (opts.skills ? Promise.resolve(opts.skills) : loadSkillDir(opts.skillsDir ?? DEFAULT_SKILLS_DIR)).then(
      (docs) => new SkillLibrary(docs),
    );
    return library;
  };
  const discoverNow = async (ctx: GatewayContext, raw: unknown): Promise<DiscoverResult> => {
    const args = parseDiscoverArgs(raw);
    const { usage } = opts;
    const [org, lib, learned, query] = await Promise.all([
      cache.get(ctx),
      skills(),
      usage?.boosts(ctx, args.request),
      opts.semantic?.provider.embedQuery(ctx.orgId, args.request),
    ]);
    await usage?.noteDiscover(ctx, args.request);
    // Documents whose embedding failed earlier are tried again (at most every 30 s).
    org.semantic?.ensure();
    const vectors = query && org.semantic ? org.semantic.score(query) : undefined;
    return discover(org, lib, args, { learned, vectors });
  };
  const engine: DiscoveryEngine = {
    skills,
    async warm(ctx) {
      const [org] = await Promise.all([cache.warm(ctx), skills()]);
      await org.semantic?.idle();
    },
    async discover(ctx, raw) {
      const started = performance.now();
      let outcome = 'error';
      // Latency of discovery as callers see it (src/kernel/metrics.ts).
      try {
        const result = await discoverNow(ctx, raw);
        outcome = 'ok';
        return result;
      } finally {
        discoveryDuration.labels(outcome).observe(secondsSince(started));
      }
    },
    async details(ctx, raw) {
      const args = parseDetailsArgs(raw);
      const [org, lib] = await Promise.all([cache.get(ctx), skills()]);
      const result = details(org, lib, args);
      // An application server whose tool list is stale says so on each of its tools, with why.
      const stale = source.staleServers
        ? await source.staleServers(
            ctx,
            result.items.map((i) => i.serverName),
          )
        : new Map<string, string>();
      if (stale.size)
        result.items = result.items.map((i) =>
          stale.has(i.serverName) ? { ...i, serverStale: stale.get(i.serverName)! } : i,
        );
      // What this organisation's callers used each tool for (usage.ts), so a caller sees why it ranked.
      const learned = opts.usage
        ? await opts.usage.learned(
            ctx,
            result.items.map((i) => ({ server: i.serverName, tool: i.name })),
          )
        : undefined;
      if (learned?.size) {
        result.items = result.items.map((i) => {
          const use = learned.get(toolKey(i.serverName, i.name));
          return use ? { ...i, learned: use } : i;
        });
      }
      return result;
    },
  };
  return engine;
}

export function createSidekickServer(source: DiscoverySource, opts: SidekickOptions = {}): ToolServer {
  const engine = opts.engine ?? createDiscoveryEngine(source, opts);
  return embeddedServer(SIDEKICK_PATH, {
    [DISCOVER_TOOL]: async (args, ctx) => jsonResult(await engine.discover(ctx, args)),
    [DETAILS_TOOL]: async (args, ctx) => jsonResult(await engine.details(ctx, args)),
  });
}
