/**
 * capabilities_discover (spec section 8): ranks an organisation's tools, connections,
 * resources and agent skills against a plain-language request.
 *
 * - Tools: BM25 over name words, title, description, server and parameters (search.ts for
 *   confidence). A request that is exactly a tool name (or `server/tool`) gets confidence 1.
 * - Connections: matched directly (name, application) and through the tools found — a
 *   connection whose service key is the one of a matching tool's server gets that tool's
 *   confidence × 0.95, so "send a slack message" returns the Slack connection and its PCID.
 * - Skills: matched directly and through the tools found (tool-specific skill × 0.9,
 *   server-wide skill × 0.8).
 * - `context` (see POLICIES) changes ranking factors and the confidence floor, not the data.
 * Hits below the floor are dropped; every array is sorted by confidence, highest first.
 */
import type { CatalogConnection, CatalogTool } from '../../gateway/index.js';
import type { OrgState } from './cache.js';
import type { ToolEntry } from './catalog.js';
import { analyze, type AnalyzedQuery } from './search.js';
import type { RequestScores } from './semantic.js';
import type { SkillDoc, SkillLibrary } from './skills.js';
import { toolKey } from './usage.js';

export type Kind = 'tool' | 'connection' | 'resource' | 'agentSkill';
export type DiscoverContext = 'workflow-creation' | 'agent-execution';

export interface DiscoverArgs {
  request: string;
  types?: Kind[];
  context?: DiscoverContext;
  limit?: number;
}

export interface ToolMatch {
  name: string;
  serverName: string;
  hasSkill: boolean;
  confidence: number;
  description: string;
}
export interface ConnectionMatch {
  name: string;
  id: string;
  application: string;
  confidence: number;
}
export interface ResourceMatch {
  name: string;
  id: string;
  type: string;
  confidence: number;
}
export interface SkillMatch {
  name: string;
  serverName: string;
  tool?: string;
  confidence: number;
}

export interface DiscoverResult {
  tools: ToolMatch[];
  connections: ConnectionMatch[];
  resources: ResourceMatch[];
  skills: SkillMatch[];
  [k: string]: unknown;
}

interface Policy {
  /** Minimum confidence returned. */
  floor: number;
  tool(t: CatalogTool, org: OrgState): number;
  connection(c: CatalogConnection): number;
}

/** Read-only or idempotent tools (MCP annotations) are safe to repeat in an unattended run. */
const deterministic = (t: CatalogTool): boolean =>
  t.tool.annotations?.readOnlyHint === true || t.tool.annotations?.idempotentHint === true;

/** An application tool can run now only if the organisation has a connected connection for it. */
const callableNow = (t: CatalogTool, org: OrgState): boolean =>
  t.embedded || !t.serviceKey || org.connectedKeys.has(t.serviceKey);

/**
 * What `context` changes (written into the input schema's description too):
 * - none: neutral; connections not in status connected × 0.8.
 * - agent-execution: the agent acts now, so application tools without a connected connection
 *   × 0.6, connected connections × 1.15 and others × 0.5; floor 0.25 (fewer, surer results).
 * - workflow-creation: the workflow runs later and unattended, so missing connections do not
 *   demote tools, read-only/idempotent tools × 1.1, and the floor drops to 0.12 so the
 *   builder sees more alternatives.
 */
const POLICIES: Record<DiscoverContext | 'none', Policy> = {
  none: { floor: 0.2, tool: () => 1, connection: (c) => (c.status === 'connected' ? 1 : 0.8) },
  'agent-execution': {
    floor: 0.25,
    tool: (t, org) => (callableNow(t, org) ? 1 : 0.6),
    connection: (c) => (c.status === 'connected' ? 1.15 : 0.5),
  },
  'workflow-creation': {
    floor: 0.12,
    tool: (t) => (deterministic(t) ? 1.1 : 1),
    connection: (c) => (c.status === 'connected' ? 1 : 0.9),
  },
};

/**
 * Fusion of the lexical confidence with the vector score (README.md "Semantic ranking"): a
 * document whose z-score z (semantic.ts) is above VECTOR_Z0 gains VECTOR_WEIGHT × (z − VECTOR_Z0),
 * and its value is 1 − (1 − lexical)(1 − gain), capped below 1 (so an exact tool name stays
 * first). Both constants were chosen on the dev half of bench/discovery/real (a grid of
 * weights 0.12–0.3 and thresholds 1–2.5 sd; README.md). A document below one standard deviation
 * above the organisation's tools gains nothing, and one found by its vector alone reaches the
 * floor of 0.2 only from about 2.7 sd: when it clearly stands out.
 */
const VECTOR_WEIGHT = 0.12;
const VECTOR_Z0 = 1;
const MAX_FUSED = 0.99;
/** Documents taken from the vector ranking beside the lexical candidates. */
const VECTOR_CANDIDATES = 40;

/** What ranks a request beside its words. */
export interface Signals {
  /** z-scores of the organisation's documents against the request's embedding. */
  vectors?: RequestScores | undefined;
  /** Learned confidence per tool (usage.ts `toolKey` → 0..0.95) from this organisation's use. */
  learned?: ReadonlyMap<string, number> | undefined;
}

/** Lexical confidence fused with the document's vector score (when there is one). */
export function fuse(lexical: number, z: number | undefined): number {
  if (z === undefined || z <= VECTOR_Z0) return lexical;
  const gain = Math.min(1, VECTOR_WEIGHT * (z - VECTOR_Z0));
  return Math.max(lexical, Math.min(MAX_FUSED, 1 - (1 - lexical) * (1 - gain)));
}

export const DEFAULT_LIMIT = 10;
const ALL_KINDS: readonly Kind[] = ['tool', 'connection', 'resource', 'agentSkill'];

interface Ranked<T> {
  item: T;
  value: number;
}

const round = (x: number): number => Math.round(Math.min(1, Math.max(0, x)) * 1000) / 1000;
const byValue = <T>(a: Ranked<T>, b: Ranked<T>): number => b.value - a.value;

export function discover(
  org: OrgState,
  skills: SkillLibrary,
  args: DiscoverArgs,
  signals: Signals = {},
): DiscoverResult {
  const kinds = new Set(args.types ?? ALL_KINDS);
  const policy = POLICIES[args.context ?? 'none'];
  const limit = args.limit ?? DEFAULT_LIMIT;
  const q = analyze(args.request);
  // Connections and skills are also found through tools, so tools are ranked whenever needed.
  const z = signals.vectors;
  const tools =
    kinds.has('tool') || kinds.has('connection') || kinds.has('agentSkill')
      ? rankTools(org, q, { request: args.request, policy, limit, z, learned: signals.learned })
      : [];
  return {
    tools: kinds.has('tool') ? tools.slice(0, limit).map((r) => toolMatch(r, skills)) : [],
    connections: kinds.has('connection') ? rankConnections(org, q, { tools, policy, limit, z }) : [],
    resources: kinds.has('resource') ? rankResources(org, q, { policy, limit, z }) : [],
    skills: kinds.has('agentSkill') ? rankSkills(skills, q, { tools, policy, limit, z }) : [],
  };
}

type ZScores = RequestScores | undefined;

function rankTools(
  org: OrgState,
  q: AnalyzedQuery,
  {
    request,
    policy,
    limit,
    z,
    learned,
  }: { request: string; policy: Policy; limit: number; z: ZScores; learned?: Signals['learned'] | undefined },
): Ranked<ToolEntry>[] {
  const exact = exactMatches(org, request);
  const ranked: Ranked<ToolEntry>[] = exact.map((item) => ({ item, value: 1 + 1e-6 }));
  const seen = new Set(exact.map((e) => e.id));
  const lexical = new Map<number, number>();
  for (const hit of org.tools.index.search(q, Math.max(limit * 4, 40))) lexical.set(hit.id, hit.confidence);
  for (const key of z?.top('t:', VECTOR_Z0, Math.max(limit * 4, VECTOR_CANDIDATES)) ?? []) {
    const id = Number(key.slice(2));
    if (!lexical.has(id)) lexical.set(id, 0);
  }
  for (const [id, confidence] of lexical) {
    const item = org.tools.byId.get(id);
    if (!item || seen.has(id)) continue;
    const value = fuse(confidence, z?.get(`t:${id}`)) * policy.tool(item.tool, org);
    if (value >= policy.floor) ranked.push({ item, value });
  }
  if (learned?.size) applyLearned(org, ranked, learned, policy);
  return ranked.sort(byValue);
}

/**
 * Learning from use (usage.ts): a tool's value becomes max(its value, learned × context
 * factor), and a tool the organisation used after similar requests joins the candidates even
 * when the words missed it. Exact tool names keep their 1.
 */
function applyLearned(
  org: OrgState,
  ranked: Ranked<ToolEntry>[],
  learned: ReadonlyMap<string, number>,
  policy: Policy,
): void {
  const left = new Map(learned);
  for (const r of ranked) {
    const key = toolKey(r.item.tool.server, r.item.tool.tool.name);
    const boost = left.get(key);
    if (boost === undefined) continue;
    left.delete(key);
    r.value = Math.max(r.value, boost * policy.tool(r.item.tool, org));
  }
  for (const [key, boost] of left) {
    const [server, name] = key.split('\u0000') as [string, string];
    const item = (org.tools.byName.get(name.toLowerCase()) ?? []).find(
      (e) => e.tool.server === server && e.tool.tool.name === name,
    );
    const value = item ? boost * policy.tool(item.tool, org) : 0;
    if (item && value >= policy.floor) ranked.push({ item, value });
  }
}

/** The request is a tool name (any case) or `server/tool`. */
function exactMatches(org: OrgState, request: string): ToolEntry[] {
  const r = request.trim().toLowerCase();
  const direct = org.tools.byName.get(r);
  if (direct) return direct;
  const slash = r.indexOf('/');
  if (slash <= 0) return [];
  const server = r.slice(0, slash);
  return (org.tools.byName.get(r.slice(slash + 1)) ?? []).filter((e) => e.tool.server.toLowerCase() === server);
}

function toolMatch(r: Ranked<ToolEntry>, skills: SkillLibrary): ToolMatch {
  const t = r.item.tool;
  return {
    name: t.tool.name,
    serverName: t.server,
    hasSkill: skills.hasSkill(t.server, t.tool.name),
    confidence: round(r.value),
    description: t.tool.description,
  };
}

function rankConnections(
  org: OrgState,
  q: AnalyzedQuery,
  { tools, policy, limit, z }: { tools: Ranked<ToolEntry>[]; policy: Policy; limit: number; z: ZScores },
): ConnectionMatch[] {
  const viaTools = new Map<string, number>();
  for (const t of tools) {
    const key = t.item.tool.serviceKey;
    if (key && !viaTools.has(key)) viaTools.set(key, Math.min(1, t.value) * 0.95);
  }
  const direct = new Map(org.connections.index.search(q, 100).map((h) => [h.id, h.confidence]));
  const ranked: Ranked<CatalogConnection>[] = [];
  org.connections.items.forEach((c, i) => {
    const base = Math.max(fuse(direct.get(i) ?? 0, z?.get(`c:${c.id}`)), viaTools.get(c.serviceKey) ?? 0);
    const value = base * policy.connection(c);
    if (value >= policy.floor) ranked.push({ item: c, value });
  });
  return ranked
    .sort(byValue)
    .slice(0, limit)
    .map(({ item, value }) => ({
      name: item.name,
      id: item.id,
      application: item.serviceKey,
      confidence: round(value),
    }));
}

function rankResources(
  org: OrgState,
  q: AnalyzedQuery,
  { policy, limit, z }: { policy: Policy; limit: number; z: ZScores },
): ResourceMatch[] {
  const lexical = new Map(org.resources.index.search(q, 100).map((h) => [h.id, h.confidence]));
  return org.resources.items
    .map((r, i) => ({ r, value: fuse(lexical.get(i) ?? 0, z?.get(`r:${r.id}`)) }))
    .filter((h) => h.value > 0 && h.value >= policy.floor)
    .sort((a, b) => b.value - a.value)
    .slice(0, limit)
    .map(({ r, value }) => ({ name: r.name, id: r.id, type: r.type, confidence: round(value) }));
}

function rankSkills(
  skills: SkillLibrary,
  q: AnalyzedQuery,
  { tools, policy, limit, z }: { tools: Ranked<ToolEntry>[]; policy: Policy; limit: number; z: ZScores },
): SkillMatch[] {
  const best = new Map<SkillDoc, number>();
  const offer = (s: SkillDoc, v: number): void => {
    if (v > (best.get(s) ?? 0)) best.set(s, v);
  };
  const lexical = new Map(skills.index.search(q, 100).map((h) => [h.id, h.confidence]));
  skills.skills.forEach((s, i) => offer(s, fuse(lexical.get(i) ?? 0, z?.get(`s:${i}`))));
  for (const t of tools.slice(0, limit)) {
    for (const s of skills.forTool(t.item.tool.server, t.item.tool.tool.name)) {
      offer(s, Math.min(1, t.value) * (s.tools.length ? 0.9 : 0.8));
    }
  }
  return [...best]
    .filter(([, v]) => v >= policy.floor)
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([s, v]) => ({
      name: s.name,
      serverName: s.server,
      ...(s.tools.length === 1 ? { tool: s.tools[0]! } : {}),
      confidence: round(v),
    }));
}
