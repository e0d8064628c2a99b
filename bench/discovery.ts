/**
 * Discovery benchmark (not a test): `npx tsx bench/discovery.ts` or `npm run bench discovery`.
 *
 * 1. Latency of capabilities_discover over 10,000 indexed tools (the evaluation catalogue plus
 *    synthetic products, bench/discovery-catalog.ts), index already built: p50/p95/p99 of the
 *    full tool call (argument validation, cache check, ranking, JSON result). Target p95 ≤ 5 ms.
 *    Baseline in the same run: a naive scan (every query word as a substring of every tool's
 *    name and description), the cost of "no index".
 * 2. Index build time (cold, 10,000 tools) and the incremental update after one tool is added.
 * 3. Relevance on bench/discovery/eval-*.json: recall@5 and MRR (target recall@5 ≥ 0.9), and
 *    the same queries against the 10,000-tool catalogue (more look-alike distractors).
 */
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { CatalogTool } from '../src/gateway/types.js';
import { createDiscoveryEngine, createMemorySource, createSidekickServer } from '../src/servers/sidekick/index.js';
import { syntheticCatalog } from './discovery-catalog.js';
import { benchContext, evalCatalog, evalQueries, evaluate, type EvalReport } from './discovery-eval.js';
import { withLocalEmbeddings } from './discovery-real.js';

const TOTAL = 10_000;
const ITERATIONS = 4_000;
const out = (line = ''): void => void process.stdout.write(`${line}\n`);
const ms = (x: number): string => `${x.toFixed(3)} ms`;

function percentiles(samples: number[]): { p50: number; p95: number; p99: number; mean: number } {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p: number): number => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99), mean: s.reduce((a, b) => a + b, 0) / s.length };
}

/** Requests for the latency loop: the evaluation queries plus synthetic-product phrasings. */
function latencyQueries(): string[] {
  const synthetic = [
    'create a ticket in acmehub',
    'list invoices from nimbusflow',
    'search contacts',
    'export orders as csv',
    'assign the task to Maria',
    'archive old campaigns',
    'delete a file from orbitcloud',
    'count open deals',
    'get shipment tracking events',
    'book a meeting',
    'update employee department',
    'find survey responses',
  ];
  return [...evalQueries().map((q) => q.query), ...synthetic];
}

function naiveScan(tools: CatalogTool[], request: string): number {
  const words = request
    .toLowerCase()
    .split(/\W+/)
    .filter((w) => w.length > 2);
  let hits = 0;
  for (const t of tools) {
    const text = `${t.tool.name} ${t.tool.description}`.toLowerCase();
    if (words.some((w) => text.includes(w))) hits++;
  }
  return hits;
}

function printEval(label: string, r: EvalReport): void {
  out(`${label}`);
  for (const [k, v] of [
    ['all', r.all],
    ['dev', r.dev],
    ['holdout', r.holdout],
  ] as const) {
    out(
      `  ${k.padEnd(8)} queries ${String(v.queries).padStart(3)}   recall@5 ${v.recallAt5.toFixed(3)}   MRR ${v.mrr.toFixed(3)}`,
    );
  }
}

export async function run(): Promise<void> {
  const ctx = benchContext();
  const evalTools = evalCatalog();
  const tools = [...evalTools, ...syntheticCatalog(TOTAL - evalTools.length)];
  const source = createMemorySource({ tools });
  const engine = createDiscoveryEngine(source);
  const server = createSidekickServer(source, { engine });
  await engine.skills();

  out(
    `Discovery bench — ${tools.length} tools (${evalTools.length} evaluation tools + synthetic), node ${process.version}`,
  );
  let t0 = performance.now();
  await engine.discover(ctx, { request: 'warm up' });
  out(`index build (cold, ${tools.length} tools):        ${ms(performance.now() - t0)}`);
  source.set({ tools: [...tools, { ...tools[0]!, tool: { ...tools[0]!.tool, name: 'bench_added_tool' } }] });
  t0 = performance.now();
  await engine.discover(ctx, { request: 'warm up' });
  out(`incremental update (1 tool added):           ${ms(performance.now() - t0)}`);

  const queries = latencyQueries();
  for (let i = 0; i < 300; i++)
    await server.callTool(ctx, 'capabilities_discover', { request: queries[i % queries.length]! });
  const samples: number[] = [];
  for (let i = 0; i < ITERATIONS; i++) {
    const request = queries[i % queries.length]!;
    const s = performance.now();
    await server.callTool(ctx, 'capabilities_discover', { request });
    samples.push(performance.now() - s);
  }
  const base: number[] = [];
  for (let i = 0; i < 400; i++) {
    const s = performance.now();
    naiveScan(tools, queries[i % queries.length]!);
    base.push(performance.now() - s);
  }
  const p = percentiles(samples);
  const b = percentiles(base);
  out(
    `capabilities_discover, ${ITERATIONS} calls:      p50 ${ms(p.p50)}  p95 ${ms(p.p95)}  p99 ${ms(p.p99)}  mean ${ms(p.mean)}`,
  );
  out(`baseline naive substring scan, 400 calls:    p50 ${ms(b.p50)}  p95 ${ms(b.p95)}  p99 ${ms(b.p99)}`);
  out(`target p95 ≤ 5 ms: ${p.p95 <= 5 ? 'met' : 'NOT met'}`);
  out();

  const small = createDiscoveryEngine(createMemorySource({ tools: evalTools }));
  const q = evalQueries();
  const r = await evaluate(small, q);
  printEval(`relevance, ${evalTools.length} evaluation tools, ${q.length} queries:`, r);
  out(`target recall@5 ≥ 0.9: ${r.all.recallAt5 >= 0.9 ? 'met' : 'NOT met'}`);
  for (const m of r.misses)
    out(`  miss (${m.split}): "${m.query}" expected ${m.expected.join(' | ')}; top 5: ${m.got.join(', ') || '—'}`);
  printEval(
    `relevance, same queries over all ${tools.length + 1} tools (synthetic look-alikes as distractors):`,
    await evaluate(engine, q),
  );
  if (process.env.BENCH_EMBEDDINGS !== 'off') await withEmbeddings(tools, queries);
}

/**
 * 4. The same 10,000 tools with the local embedding model behind /v1/embeddings on loopback
 *    (bench/discovery-real.ts withLocalEmbeddings; vectors kept in a sqlite file in the temp
 *    folder, so only the first run embeds them, about 20 ms per text). Latency of requests seen
 *    for the first time (their embedding is part of the call) and of repeated ones (embedding
 *    from the query cache: the fusion's own cost). Target p95 ≤ 25 ms with the embedding.
 */
async function withEmbeddings(tools: CatalogTool[], queries: string[]): Promise<void> {
  out();
  const ctx = benchContext('org_bench_embeddings');
  await withLocalEmbeddings(async (semantic) => {
    const memory = createMemorySource({ tools });
    const engine = createDiscoveryEngine(memory, { semantic });
    const server = createSidekickServer(memory, { engine });
    let t0 = performance.now();
    await engine.discover(ctx, { request: 'warm up' });
    out(`with embeddings: index build (lexical part, vectors in the background): ${ms(performance.now() - t0)}`);
    t0 = performance.now();
    await semantic.idleAll();
    out(
      `with embeddings: vectors ready after ${ms(performance.now() - t0)} (${semantic.status().embedded} texts embedded now, the rest from the store)`,
    );
    // 400 distinct texts: the first time, each request is embedded within the call.
    const requests = Array.from({ length: 400 }, (_, i) => `${queries[i % queries.length]!} (${i})`);
    const fresh: number[] = [];
    for (const request of requests) {
      const s = performance.now();
      await server.callTool(ctx, 'capabilities_discover', { request });
      fresh.push(performance.now() - s);
    }
    const cached: number[] = [];
    for (let i = 0; i < 2_000; i++) {
      const s = performance.now();
      await server.callTool(ctx, 'capabilities_discover', { request: requests[i % requests.length]! });
      cached.push(performance.now() - s);
    }
    const f = percentiles(fresh);
    const c = percentiles(cached);
    out(
      `with embeddings, 400 new requests (embedded in the call): p50 ${ms(f.p50)}  p95 ${ms(f.p95)}  p99 ${ms(f.p99)}`,
    );
    out(
      `with embeddings, 2000 repeated requests (query cache):    p50 ${ms(c.p50)}  p95 ${ms(c.p95)}  p99 ${ms(c.p99)}`,
    );
    out(`target p95 ≤ 25 ms with the query embedding: ${f.p95 <= 25 ? 'met' : 'NOT met'}`);
    return {};
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await run();
