/**
 * capability_details (spec section 8: "Returns full parameter schemas"). Each requested name
 * is resolved to tools of the organisation:
 * - `name` exactly (then case-insensitively); a name served by several servers (e.g.
 *   capabilities_discover on svc-sidekick and on gateway) returns every match, each with its
 *   serverName — the caller picks by server;
 * - `server/tool` selects the tool of one server.
 * Names that resolve to nothing are listed in `notFound`. A tool requested twice is returned
 * once, at its first position. `types` without `tool` empties the schemas ({}), without
 * `agentSkill` sets `skill` to null (schema description of capability_details).
 */
import type { JsonSchemaObject } from '../../gateway/index.js';
import type { OrgState } from './cache.js';
import type { ToolEntry } from './catalog.js';
import type { Kind } from './discover.js';
import type { SkillLibrary } from './skills.js';
import type { LearnedUse } from './usage.js';

export interface DetailsArgs {
  items: string[];
  types?: Kind[];
}

export interface DetailItem {
  name: string;
  serverName: string;
  description: string;
  inputSchema: JsonSchemaObject | Record<string, never>;
  outputSchema: JsonSchemaObject | Record<string, never> | null;
  skill: string | null;
  /** Application servers: present when the server's tool list is stale right now, saying why. */
  serverStale?: string;
  /** Present when callers of this organisation used the tool after discover requests (usage.ts). */
  learned?: LearnedUse;
}

export interface DetailsResult {
  items: DetailItem[];
  notFound: string[];
  [k: string]: unknown;
}

/** Separates several skill documents joined for one tool (tool-specific first). */
export const SKILL_SEPARATOR = '\n\n---\n\n';

export function resolveTool(org: OrgState, requested: string): ToolEntry[] {
  const candidates = org.tools.byName.get(requested.toLowerCase()) ?? [];
  const exact = candidates.filter((e) => e.tool.tool.name === requested);
  if (exact.length) return exact;
  if (candidates.length) return candidates;
  const slash = requested.indexOf('/');
  if (slash <= 0) return [];
  const server = requested.slice(0, slash).toLowerCase();
  return resolveTool(org, requested.slice(slash + 1)).filter((e) => e.tool.server.toLowerCase() === server);
}

export function details(org: OrgState, skills: SkillLibrary, args: DetailsArgs): DetailsResult {
  const withSchemas = !args.types || args.types.includes('tool');
  const withSkill = !args.types || args.types.includes('agentSkill');
  const items: DetailItem[] = [];
  const notFound: string[] = [];
  const seen = new Set<number>();
  for (const requested of args.items) {
    const found = resolveTool(org, requested);
    if (found.length === 0) {
      notFound.push(requested);
      continue;
    }
    for (const entry of found) {
      if (seen.has(entry.id)) continue;
      seen.add(entry.id);
      items.push(detailOf(entry, skills, { withSchemas, withSkill }));
    }
  }
  return { items, notFound };
}

function detailOf(
  entry: ToolEntry,
  skills: SkillLibrary,
  { withSchemas, withSkill }: { withSchemas: boolean; withSkill: boolean },
): DetailItem {
  const { server, tool } = entry.tool;
  const docs = withSkill ? skills.forTool(server, tool.name) : [];
  return {
    name: tool.name,
    serverName: server,
    description: tool.description,
    inputSchema: withSchemas ? tool.inputSchema : {},
    outputSchema: withSchemas ? (tool.outputSchema ?? null) : {},
    skill: docs.length ? docs.map((d) => d.content).join(SKILL_SEPARATOR) : null,
  };
}
