/**
 * Run execution benchmarks (issue 14; not tests), measured in one run beside a bare node:http
 * baseline. By default on sqlite, in one service process with its default run workers; with
 * BENCH_RUNS_STORE=pg on PostgreSQL (a database created for the run on BENCH_PG_URL, dropped
 * after) and Redis (BENCH_REDIS_URL), in the service process plus one extra worker process
 * (`npm run worker`), both with their default run workers:
 * - executed runs per second sustained for BENCH_RUNS_SECONDS (default 30): async trigger calls
 *   keep a backlog of about BENCH_RUNS_BACKLOG queued runs (default 2,000) while the window runs,
 *   and the rate is the runs that reached COMPLETE in the store during the window, divided by
 *   its length (calls are accepted far faster than runs execute, so the backlog never empties);
 *   then the backlog is drained and every accepted run must be COMPLETE;
 * - synchronous calls (`X-API-Wait: true`): one caller (p50/p99 of the round trip and of what it
 *   adds over the steps' own durations) and 50 concurrent callers (runs/s, p50, p99).
 * For three workflows: one no-op code step, the demo workflow (two code steps, one file), and
 * one `http` step POSTing to a bare local server.
 */
import { Pool } from 'undici';
import autocannon from 'autocannon';
import { openStore, type Knex } from '../src/storage/db.js';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import {
  startServer,
  baselineLoad,
  json,
  processCpu,
  report,
  type LoadResult,
  type ProcessCpu,
  type Started,
} from './lib.js';

interface DemoInfo {
  url: string;
  dataDir: string;
  bootstrap: { apiKey: string; clientId: string; clientSecret: string; orgId: string; demo: { apiTriggerId: string } };
}

const SECONDS = Number(process.env.BENCH_RUNS_SECONDS ?? 30);
const BACKLOG = Number(process.env.BENCH_RUNS_BACKLOG ?? 2000);
const SYNC_SECONDS = Number(process.env.BENCH_RUNS_SYNC_SECONDS ?? 10);
const PG = process.env.BENCH_RUNS_STORE === 'pg';
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** Only the workflows whose label contains this text (e.g. `no-op`, `demo`, `http`); all when unset. */
const ONLY = process.env.BENCH_RUNS_ONLY ?? '';

/**
 * Runs of one trigger per status created since `since` (phases run one after another; the
 * (status, created_at) index serves it). The trigger too: calls of the previous phase still in
 * flight when its load generator stopped can create runs after `since`.
 */
async function count(db: Knex, triggerId: string, statuses: string[], since: string): Promise<number> {
  const [row] = await db('runs')
    .whereIn('status', statuses)
    .andWhere('created_at', '>=', since)
    .andWhere({ trigger_id: triggerId })
    .count({ n: '*' });
  return Number(row!.n);
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! * 100) / 100;
};

/** Async calls keeping about BACKLOG runs queued for SECONDS; runs COMPLETE in the window per second. */
interface Sustained {
  perSec: number;
  accepted: number;
  failed: number;
  drainS: number;
  cpu: string;
}

/** CPU per run completed in the window, µs: the service's main thread, its other threads, its children (sandbox processes). */
function cpuPerRun(
  before: ProcessCpu | undefined,
  after: ProcessCpu | undefined,
  runs: number,
  seconds: number,
): string {
  if (!before || !after || runs <= 0) return 'CPU per run: not available (no /proc)';
  if (PG)
    return cpuLine(
      'service and worker processes together; PostgreSQL and Redis not counted',
      before,
      after,
      runs,
      seconds,
    );
  return cpuLine('', before, after, runs, seconds);
}

/** The service's processes (one, or the service and the extra worker), summed. */
function processesCpu(pids: readonly number[]): ProcessCpu | undefined {
  const sum: ProcessCpu = { main: 0, threads: 0, children: 0 };
  for (const pid of pids) {
    const c = processCpu(pid);
    if (!c) return undefined;
    sum.main += c.main;
    sum.threads += c.threads;
    sum.children += c.children;
  }
  return sum;
}

function cpuLine(label: string, before: ProcessCpu, after: ProcessCpu, runs: number, seconds: number): string {
  const us = (ms: number) => Math.round((ms * 1000) / runs);
  const main = after.main - before.main;
  const other = after.threads - before.threads - main;
  const children = after.children - before.children;
  const cores = (main + other + children) / 1000 / seconds;
  return `CPU per run${label ? ` (${label})` : ''}: main thread${PG ? 's' : ''} ${us(main)} µs, other threads ${us(other)} µs, sandbox children ${us(children)} µs; ${cores.toFixed(2)} cores busy`;
}

async function sustained(
  url: string,
  apiKey: string,
  triggerId: string,
  db: Knex,
  pids: readonly number[],
): Promise<Sustained> {
  const pool = new Pool(url, { connections: 20 });
  let accepted = 0;
  let refused = 0;
  const call = async () => {
    const res = await pool.request({
      method: 'POST',
      path: `/ext/triggers/${triggerId}`,
      headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
      body: '{"name":"bench"}',
    });
    await res.body.dump();
    if (res.statusCode === 200) accepted++;
    else refused++;
  };
  const since = new Date().toISOString();
  const done = () => count(db, triggerId, ['COMPLETE'], since);
  // Fill the backlog, then open the window.
  await Promise.all(Array.from({ length: BACKLOG }, call));
  const c0 = await done();
  const cpu0 = processesCpu(pids);
  const t0 = performance.now();
  while (performance.now() - t0 < SECONDS * 1000) {
    const queued = accepted - (await done());
    if (queued < BACKLOG) await Promise.all(Array.from({ length: Math.min(500, BACKLOG - queued) }, call));
    else await new Promise((r) => setTimeout(r, 100));
  }
  const c1 = await done();
  const cpu1 = processesCpu(pids);
  const elapsed = (performance.now() - t0) / 1000;
  const d0 = performance.now();
  for (;;) {
    const open = await count(db, triggerId, ['PENDING', 'RUNNING'], since);
    if (open === 0) break;
    if (performance.now() - d0 > 600_000) throw new Error(`backlog not drained: ${open} runs still open`);
    await new Promise((r) => setTimeout(r, 250));
  }
  await pool.close();
  if (refused > 0) throw new Error(`${refused} async calls were refused`);
  return {
    perSec: Math.round((c1 - c0) / elapsed),
    accepted,
    failed: accepted - (await done()),
    drainS: Math.round((performance.now() - d0) / 100) / 10,
    cpu: cpuPerRun(cpu0, cpu1, c1 - c0, elapsed),
  };
}

/** One caller, sequential sync calls for SYNC_SECONDS: round trip and time added over the steps' own durations. */
async function syncOne(url: string, apiKey: string, triggerId: string): Promise<{ total: number[]; added: number[] }> {
  const pool = new Pool(url, { connections: 1 });
  const total: number[] = [];
  const added: number[] = [];
  const t0 = performance.now();
  let i = 0;
  while (performance.now() - t0 < SYNC_SECONDS * 1000) {
    const s = performance.now();
    const res = await pool.request({
      method: 'POST',
      path: `/ext/triggers/${triggerId}`,
      headers: { 'x-api-key': apiKey, 'x-api-wait': 'true', 'content-type': 'application/json' },
      body: '{"name":"bench"}',
    });
    const body = (await res.body.json()) as { status: string; results?: Array<{ duration?: number }> };
    const ms = performance.now() - s;
    if (body.status !== 'COMPLETE')
      throw new Error(`sync run ended ${body.status}: ${JSON.stringify(body).slice(0, 1500)}`);
    // The first 20 calls warm up.
    if (i++ < 20) continue;
    total.push(ms);
    added.push(ms - (body.results ?? []).reduce((n, r) => n + (r.duration ?? 0), 0));
  }
  await pool.close();
  return { total, added };
}

async function syncMany(name: string, url: string, apiKey: string, triggerId: string): Promise<LoadResult> {
  const r = await autocannon({
    url: `${url}/ext/triggers/${triggerId}`,
    method: 'POST',
    connections: 50,
    duration: SYNC_SECONDS,
    headers: { 'x-api-key': apiKey, 'x-api-wait': 'true', 'content-type': 'application/json' },
    body: '{"name":"bench"}',
  });
  return {
    name,
    requests: r.requests.total,
    reqPerSec: Math.round(r.requests.total / r.duration),
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors,
  };
}

/** PostgreSQL + Redis: a database of its own for this run, and the environment both processes share. */
async function scaleOutEnv(): Promise<{ env: Record<string, string>; databaseUrl: string; drop: () => Promise<void> }> {
  const name = `bench_runs_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  const env = {
    DATABASE_URL: databaseUrl,
    REDIS_URL,
    REDIS_PREFIX: name,
    DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-')),
  };
  const drop = async () => {
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`drop database if exists ${name} with (force)`);
    await c.end();
  };
  return { env, databaseUrl, drop };
}

export async function run(): Promise<void> {
  const base = await baselineLoad();
  const receiver = await startServer<{ url: string }>('bench/servers/event-receiver.ts');
  const scale = PG ? await scaleOutEnv() : undefined;
  // The http workflow posts to the local receiver: loopback allowed, in the extra worker too.
  const env = { OUTBOUND_ALLOWLIST: '127.0.0.0/8', ...scale?.env };
  const target = await startServer<DemoInfo>('bench/servers/switchyard-demo.ts', env);
  // The schema exists once the service started: the extra worker joins the same store and Redis.
  const worker: Started<{ url: string }> | undefined = scale
    ? await startServer('bench/servers/switchyard-worker.ts', env)
    : undefined;
  const pids = [target.child.pid!, ...(worker ? [worker.child.pid!] : [])];
  const db = openStore({ dataDir: target.info.dataDir, databaseUrl: scale?.databaseUrl });
  try {
    const { url, bootstrap: b } = target.info;
    const tok = await fetch(`${url}/oauth/token`, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: b.clientId,
        client_secret: b.clientSecret,
        scope: `org:${b.orgId}`,
      }),
    });
    const token = ((await tok.json()) as { access_token: string }).access_token;
    const trigger = async (name: string, steps: unknown[]) => {
      const wf = await json(`${url}/v1/workflows`, { method: 'POST', token, body: JSON.stringify({ name, steps }) });
      return (
        await json(`${url}/v1/triggers`, {
          method: 'POST',
          token,
          body: JSON.stringify({ automationId: wf.automationId, kind: 'api' }),
        })
      ).triggerId as string;
    };
    const workflows: Array<[string, string]> = [
      ['one no-op code step', await trigger('noop', [{ type: 'code', name: 'noop', code: 'return 1;' }])],
      ['demo workflow (two code steps, one file)', b.demo.apiTriggerId],
      [
        'one http step to a local server',
        await trigger('http', [
          { type: 'http', name: 'call', request: { method: 'POST', url: `${receiver.info.url}/hook`, body: { n: 1 } } },
        ]),
      ],
    ];
    const loads: LoadResult[] = [];
    const lines: string[] = [];
    for (const [label, triggerId] of workflows) {
      if (!label.includes(ONLY)) continue;
      const s = await sustained(url, b.apiKey, triggerId, db, pids);
      lines.push(
        `- ${label}: **${s.perSec} executed runs/s** sustained over ${SECONDS} s (async, backlog ~${BACKLOG}); ${s.accepted} accepted, ${s.failed} not COMPLETE after the drain (${s.drainS} s); ${s.cpu}`,
      );
      const one = await syncOne(url, b.apiKey, triggerId);
      lines.push(
        `- ${label}: sync, one caller: round trip p50 ${pct(one.total, 50)} ms, p99 ${pct(one.total, 99)} ms; added over the steps' own time p50 ${pct(one.added, 50)} ms, p99 ${pct(one.added, 99)} ms (${one.total.length} calls)`,
      );
      loads.push(await syncMany(`sync, 50 callers: ${label}`, url, b.apiKey, triggerId));
    }
    report(
      PG
        ? 'Run execution on PostgreSQL + Redis (the service process and one extra worker process, default RUN_CONCURRENCY)'
        : 'Run execution on sqlite (one process, default RUN_CONCURRENCY)',
      base,
      loads,
    );
    for (const line of lines) console.log(line);
  } finally {
    await db.destroy();
    await worker?.stop();
    await target.stop();
    await receiver.stop();
    await scale?.drop();
  }
}
