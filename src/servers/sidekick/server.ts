/**
 * The embedded discovery server `svc-sidekick` (spec section 8) and the discovery engine it
 * wraps. The engine is exported on its own so the `gateway` server (spec section 9) can serve
 * its copies of capabilities_discover and capability_details from the same indexes.
 * Tool definitions come from the generated tool table (schemas/tools/svc-sidekick), never
 * retyped here.
 */
import { toolServers } from '../../../generated/tools/servers.js';
import { toolDefsOf } from '../embedded.js';
import {
  GatewayError, jsonResult, RPC,
  type CallResult, type DiscoverySource, type GatewayContext, type ToolServer,
} from '../../gateway/types.js';
import { parseDetailsArgs, parseDiscoverArgs } from './args.js';
import { OrgCache } from './cache.js';
import { details, type DetailsResult } from './details.js';
import { discover, type DiscoverResult } from './discover.js';
import { DEFAULT_SKILLS_DIR, loadSkillDir, SkillLibrary, type SkillDoc } from './skills.js';

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
   * An existing engine to serve (e.g. the one behind the gateway server's copies of the two
   * tools), so each organisation is indexed once. `source` and the other options are then unused.
   */
  engine?: DiscoveryEngine | undefined;
}

export interface DiscoveryEngine {
  discover(ctx: GatewayContext, args: unknown): Promise<DiscoverResult>;
  details(ctx: GatewayContext, args: unknown): Promise<DetailsResult>;
  /** Runs capabilities_discover or capability_details by name; other names are -32602. */
  callTool(ctx: GatewayContext, name: string, args: Record<string, unknown>): Promise<CallResult>;
  /** Loaded skills (after the first call or `ready()`). */
  skills(): Promise<SkillLibrary>;
}

export function createDiscoveryEngine(source: DiscoverySource, opts: SidekickOptions = {}): DiscoveryEngine {
  const cache = new OrgCache(source, opts.maxOrgs ?? 500);
  let library: Promise<SkillLibrary> | undefined;
  const skills = (): Promise<SkillLibrary> => {
    library ??= (opts.skills ? Promise.resolve(opts.skills) : loadSkillDir(opts.skillsDir ?? DEFAULT_SKILLS_DIR))
      .then((docs) => new SkillLibrary(docs));
    return library;
  };
  const engine: DiscoveryEngine = {
    skills,
    async discover(ctx, raw) {
      const args = parseDiscoverArgs(raw);
      const [org, lib] = await Promise.all([cache.get(ctx), skills()]);
      return discover(org, lib, args);
    },
    async details(ctx, raw) {
      const args = parseDetailsArgs(raw);
      const [org, lib] = await Promise.all([cache.get(ctx), skills()]);
      const result = details(org, lib, args);
      // An application server whose tool list is stale says so on each of its tools, with why.
      const stale = source.staleServers ? await source.staleServers(ctx, result.items.map((i) => i.serverName)) : new Map<string, string>();
      if (stale.size) result.items = result.items.map((i) => (stale.has(i.serverName) ? { ...i, serverStale: stale.get(i.serverName)! } : i));
      return result;
    },
    async callTool(ctx, name, args) {
      if (name === DISCOVER_TOOL) return jsonResult(await engine.discover(ctx, args));
      if (name === DETAILS_TOOL) return jsonResult(await engine.details(ctx, args));
      throw new GatewayError(RPC.INVALID_PARAMS, `Unknown tool: ${name}`);
    },
  };
  return engine;
}

export function createSidekickServer(source: DiscoverySource, opts: SidekickOptions = {}): ToolServer {
  const table = toolServers.find((s) => s.path === SIDEKICK_PATH)!;
  const engine = opts.engine ?? createDiscoveryEngine(source, opts);
  const defs = toolDefsOf(SIDEKICK_PATH);
  return {
    path: SIDEKICK_PATH,
    name: table.name,
    description: table.description,
    embedded: true,
    listTools: () => Promise.resolve(defs),
    callTool: (ctx, name, args) => engine.callTool(ctx, name, args),
  };
}
