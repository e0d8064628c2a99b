/**
 * Discovery on real tools (issue 13), not a test: the tool lists of real MCP server packages as
 * they list themselves (bench/discovery/real/tools.json, collected by
 * bench/discovery/collect-real.ts), registered as application servers, and requests written the
 * way people ask (bench/discovery/real/queries.json), each naming the tools that answer it as
 * `<server>/<tool>`. The split into dev and holdout is fixed in that file (its README says how)
 * and only the holdout is reported as the figure; dev is shown for tuning.
 *
 * A request counts as paraphrased when it shares no content word with the name or description
 * of any tool that answers it. That is computed here (lower case, letters and digits, a plural
 * `s` dropped, stop words ignored), not taken from the file.
 *
 * Reports recall@1, recall@5 and MRR (1 / rank of the first expected tool, 0 beyond 50), for all
 * requests and for the paraphrased ones.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CatalogTool, JsonSchemaObject } from '../src/gateway/types.js';
import { tmpdir } from 'node:os';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { openStore, migrate } from '../src/storage/db.js';
import {
  createDiscoveryEngine,
  createMemorySource,
  EmbeddingsProvider,
  Semantic,
  type DiscoveryEngine,
} from '../src/servers/sidekick/index.js';
import { startEmbeddingsServer } from '../test/helpers/embeddings-server.js';
import { benchContext } from './discovery-eval.js';

const DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'discovery', 'real');

interface RealServer {
  product: string;
  package: string;
  version: string;
  tools: { name: string; title?: string; description?: string; inputSchema: JsonSchemaObject }[];
}

export interface RealQuery {
  query: string;
  /** `<server path>/<tool name>`: any of them in the top 5 is a hit. */
  expected: string[];
  split: 'dev' | 'holdout';
}

/** A product's server path: lower case, runs of other characters as one dash. */
export function serverPath(product: string): string {
  return product
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

export function realServers(): RealServer[] {
  const doc = JSON.parse(readFileSync(path.join(DIR, 'tools.json'), 'utf8')) as
    RealServer[] | { servers: RealServer[] };
  return Array.isArray(doc) ? doc : doc.servers;
}

export function realCatalog(): CatalogTool[] {
  return realServers().flatMap((s) =>
    s.tools.map((tool) => ({
      server: serverPath(s.product),
      serverTitle: s.product,
      serverDescription: `${s.product} (${s.package})`,
      embedded: false,
      serviceKey: serverPath(s.product),
      tool: { ...tool, description: tool.description ?? '' },
    })),
  );
}

export function realQueries(): RealQuery[] {
  return (JSON.parse(readFileSync(path.join(DIR, 'queries.json'), 'utf8')) as { queries: RealQuery[] }).queries;
}

/** A general English stop-word list (function words only), for the paraphrase test. */
const STOP = new Set(
  `a an the and or but if then else of to in on at by for with from into onto about as is are was were be been being do does did
have has had i me my we our you your he she it its they them their this that these those there here what which who whom whose when where why how
all any each every some no not only own same so than too very can could should would will shall may might must just also up down out over under
again further once please want need like get got make let show give tell find look see use using via per new`.split(
    /\s+/,
  ),
);

export function contentWords(text: string): Set<string> {
  const words = text
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 1 && !STOP.has(w));
  return new Set(words.map((w) => (w.length > 3 && w.endsWith('s') && !w.endsWith('ss') ? w.slice(0, -1) : w)));
}

interface Score {
  queries: number;
  recallAt1: number;
  recallAt5: number;
  mrr: number;
}

function score(rows: { rank: number }[]): Score {
  const n = rows.length || 1;
  return {
    queries: rows.length,
    recallAt1: rows.filter((r) => r.rank === 1).length / n,
    recallAt5: rows.filter((r) => r.rank > 0 && r.rank <= 5).length / n,
    mrr: rows.reduce((s, r) => s + (r.rank > 0 ? 1 / r.rank : 0), 0) / n,
  };
}

export interface RealReport {
  split: Record<'dev' | 'holdout', { all: Score; paraphrased: Score }>;
  rows: { q: RealQuery; rank: number; paraphrased: boolean; got: string[] }[];
}

export async function evaluateReal(
  engine: DiscoveryEngine,
  queries: RealQuery[],
  catalog: CatalogTool[],
): Promise<RealReport> {
  const byId = new Map(catalog.map((t) => [`${t.server}/${t.tool.name}`, t]));
  const ctx = benchContext('org_real');
  const rows: RealReport['rows'] = [];
  for (const q of queries) {
    const res = await engine.discover(ctx, { request: q.query, types: ['tool'], limit: 50 });
    const got = res.tools.map((t) => `${t.serverName}/${t.name}`);
    const idx = got.findIndex((id) => q.expected.includes(id));
    const words = contentWords(q.query);
    const paraphrased = q.expected.every((id) => {
      const t = byId.get(id);
      if (!t) return true;
      const toolWords = contentWords(`${t.tool.name} ${t.tool.description ?? ''}`);
      return ![...words].some((w) => toolWords.has(w));
    });
    rows.push({ q, rank: idx + 1, paraphrased, got: got.slice(0, 5) });
  }
  const part = (split: 'dev' | 'holdout') => {
    const r = rows.filter((x) => x.q.split === split);
    return { all: score(r), paraphrased: score(r.filter((x) => x.paraphrased)) };
  };
  return { split: { dev: part('dev'), holdout: part('holdout') }, rows };
}

const f = (n: number) => n.toFixed(2);
const line = (label: string, s: Score) =>
  `| ${label} | ${s.queries} | ${f(s.recallAt1)} | ${f(s.recallAt5)} | ${f(s.mrr)} |`;

export async function run(): Promise<void> {
  if (!existsSync(path.join(DIR, 'tools.json')) || !existsSync(path.join(DIR, 'queries.json'))) {
    console.log(
      'discovery-real: bench/discovery/real/tools.json and queries.json are needed (bench/discovery/real/README.md)',
    );
    return;
  }
  const catalog = realCatalog();
  const queries = realQueries();
  const unknown = queries
    .flatMap((q) => q.expected)
    .filter((id) => !catalog.some((t) => `${t.server}/${t.tool.name}` === id));
  if (unknown.length)
    throw new Error(`queries name tools that are not in the catalogue: ${[...new Set(unknown)].join(', ')}`);
  const engine = createDiscoveryEngine(createMemorySource({ tools: catalog }));
  printReport(
    `Discovery on real MCP tools: ${realServers().length} servers, ${catalog.length} tools, ${queries.length} requests (lexical)`,
    await evaluateReal(engine, queries, catalog),
  );
  if (process.env.BENCH_EMBEDDINGS === 'off') return;
  const local = await withLocalEmbeddings(async (semantic) => {
    const engine = createDiscoveryEngine(createMemorySource({ tools: catalog }), { semantic });
    // Build the index and wait for its embeddings (stored in a sqlite file: later runs reuse them).
    await engine.discover(benchContext('org_real'), { request: 'warm up' });
    const started = performance.now();
    await semantic.idleAll();
    const waited = performance.now() - started;
    return { report: await evaluateReal(engine, queries, catalog), waited };
  });
  console.log(
    `\n(embeddings ready after ${(local.waited / 1000).toFixed(1)} s; ${local.embedded} texts embedded in this run, the rest read from the store)`,
  );
  printReport(
    'The same with the local embedding model (USE lite behind /v1/embeddings on loopback), lexical and vector fused',
    local.report,
  );
}

/**
 * Runs `fn` with a Semantic backed by the local model (test/helpers/embeddings-server.ts) over
 * HTTP, its vectors kept in a sqlite file in the temp folder so later runs embed nothing again.
 */
export async function withLocalEmbeddings<T>(
  fn: (semantic: Semantic) => Promise<T>,
): Promise<T & { embedded: number }> {
  const server = await startEmbeddingsServer();
  const db = openStore({ dataDir: tmpdir(), sqliteFile: path.join(tmpdir(), 'switchyard-bench-embeddings.sqlite') });
  await migrate(db);
  const log = pino({ level: 'silent' });
  const semantic = new Semantic(
    new EmbeddingsProvider({ url: server.url, model: 'use-lite', apiKey: null, budgetMs: 5_000, log }),
    log,
    db,
  );
  try {
    return { ...(await fn(semantic)), embedded: semantic.status().embedded };
  } finally {
    await db.destroy();
    await server.close();
  }
}

function printReport(title: string, report: RealReport): void {
  console.log(`\n## ${title}\n`);
  console.log('| split | requests | recall@1 | recall@5 | MRR |');
  console.log('|---|---:|---:|---:|---:|');
  // BENCH_DEV_ONLY=1 while tuning: the holdout is read once, at the end.
  if (!process.env.BENCH_DEV_ONLY) {
    console.log(line('holdout', report.split.holdout.all));
    console.log(line('holdout, paraphrased', report.split.holdout.paraphrased));
  }
  console.log(line('dev', report.split.dev.all));
  console.log(line('dev, paraphrased', report.split.dev.paraphrased));
  if (process.env.BENCH_SHOW_DEV_MISSES) {
    for (const r of report.rows) {
      if (r.q.split === 'dev' && (r.rank === 0 || r.rank > 5))
        console.log(
          `  dev miss: "${r.q.query}" expected ${r.q.expected.join(' | ')}; top 5: ${r.got.join(', ') || '—'}`,
        );
    }
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await run();
