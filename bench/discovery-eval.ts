/**
 * Discovery relevance evaluation (not a test): the catalogue in bench/discovery/eval-tools.json
 * plus the servers described in schemas/tools, and the queries in eval-queries.json, each with
 * the tools that answer it. Reports recall@5 (an expected tool among the first five) and MRR
 * (1 / rank of the first expected tool, 0 beyond 50), overall and per split (dev queries may
 * be looked at while tuning; holdout queries are only scored).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import type { CatalogTool, GatewayContext, JsonSchemaObject } from '../src/gateway/types.js';
import { loadConfig } from '../src/config/index.js';
import { openStore } from '../src/storage/db.js';
import { describedServerTools, type DiscoveryEngine } from '../src/servers/sidekick/index.js';

const DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'discovery');

interface EvalServer {
  path: string;
  name: string;
  description: string;
  serviceKey: string;
  tools: { name: string; description: string; inputSchema: JsonSchemaObject }[];
}

export interface EvalQuery {
  query: string;
  expected: string[];
  split: 'dev' | 'holdout';
}

/** The evaluation catalogue: the JSON servers (application servers) and the described ones. */
export function evalCatalog(): CatalogTool[] {
  const doc = JSON.parse(readFileSync(path.join(DIR, 'eval-tools.json'), 'utf8')) as { servers: EvalServer[] };
  const apps = doc.servers.flatMap((s) =>
    s.tools.map((tool) => ({
      server: s.path,
      serverTitle: s.name,
      serverDescription: s.description,
      embedded: false,
      serviceKey: s.serviceKey,
      tool,
    })),
  );
  return [...apps, ...describedServerTools()];
}

export function evalQueries(): EvalQuery[] {
  return (JSON.parse(readFileSync(path.join(DIR, 'eval-queries.json'), 'utf8')) as { queries: EvalQuery[] }).queries;
}

/** Discovery over the bench's in-memory catalogue reads nothing of the store: it is connected on first query only. */
function benchServices(log: GatewayContext['log']): GatewayContext['services'] {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sy-bench-discovery-'));
  return { db: openStore({ dataDir }), config: loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' }), log };
}

export function benchContext(orgId = 'org_bench'): GatewayContext {
  const log = pino({ level: 'silent' });
  return {
    services: benchServices(log),
    log,
    orgId,
    forwardedHeaders: {},
    signal: new AbortController().signal,
  };
}

export interface EvalScore {
  queries: number;
  recallAt5: number;
  mrr: number;
}

export interface EvalReport {
  all: EvalScore;
  dev: EvalScore;
  holdout: EvalScore;
  misses: { query: string; split: string; expected: string[]; got: string[] }[];
}

function score(rows: { rank: number }[]): EvalScore {
  const n = rows.length || 1;
  return {
    queries: rows.length,
    recallAt5: rows.filter((r) => r.rank > 0 && r.rank <= 5).length / n,
    mrr: rows.reduce((s, r) => s + (r.rank > 0 ? 1 / r.rank : 0), 0) / n,
  };
}

/** Runs every query through capabilities_discover (types tool, limit 50). */
export async function evaluate(
  engine: DiscoveryEngine,
  queries: EvalQuery[],
  ctx = benchContext(),
): Promise<EvalReport> {
  const rows: { q: EvalQuery; rank: number; got: string[] }[] = [];
  for (const q of queries) {
    const res = await engine.discover(ctx, { request: q.query, types: ['tool'], limit: 50 });
    const names = res.tools.map((t) => t.name);
    const idx = names.findIndex((n) => q.expected.includes(n));
    rows.push({ q, rank: idx + 1, got: names.slice(0, 5) });
  }
  return {
    all: score(rows),
    dev: score(rows.filter((r) => r.q.split === 'dev')),
    holdout: score(rows.filter((r) => r.q.split === 'holdout')),
    misses: rows
      .filter((r) => r.rank === 0 || r.rank > 5)
      .map((r) => ({ query: r.q.query, split: r.q.split, expected: r.q.expected, got: r.got })),
  };
}
