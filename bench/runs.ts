/**
 * Run execution benchmarks (issue 14; not tests), sqlite, one service process with its default
 * run workers, measured in one run beside a bare node:http baseline:
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
import { startServer, baselineLoad, json, processCpu, report, type LoadResult, type ProcessCpu } from './lib.js';

interface DemoInfo { url: string; dataDir: string; bootstrap: { apiKey: string; clientId: string; clientSecret: string; orgId: string; demo: { apiTriggerId: string } } }

const SECONDS = Number(process.env.BENCH_RUNS_SECONDS ?? 30);
const BACKLOG = Number(process.env.BENCH_RUNS_BACKLOG ?? 2000);
const SYNC_SECONDS = Number(process.env.BENCH_RUNS_SYNC_SECONDS ?? 10);

/** Runs per status created since `since` (phases run one after another; the (status, created_at) index serves it). */
async function count(db: Knex, statuses: string[], since: string): Promise<number> {
  const [row] = await db('runs').whereIn('status', statuses).andWhere('created_at', '>=', since).count({ n: '*' });
  return Number(row!.n);
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! * 100) / 100;
};

/** Async calls keeping about BACKLOG runs queued for SECONDS; runs COMPLETE in the window per second. */
interface Sustained { perSec: number; accepted: number; failed: number; drainS: number; cpu: string }

/** CPU per run completed in the window, µs: the service's main thread, its other threads, its children (sandbox processes). */
function cpuPerRun(before: ProcessCpu | undefined, after: ProcessCpu | undefined, runs: number, seconds: number): string {
  if (!before || !after || runs <= 0) return 'CPU per run: not available (no /proc)';
  const us = (ms: number) => Math.round((ms * 1000) / runs);
  const main = after.main - before.main;
  const other = after.threads - before.threads - main;
  const children = after.children - before.children;
  const cores = (main + other + children) / 1000 / seconds;
  return `CPU per run: main thread ${us(main)} µs, other threads ${us(other)} µs, sandbox children ${us(children)} µs; ${cores.toFixed(2)} cores busy`;
}

async function sustained(url: string, apiKey: string, triggerId: string, db: Knex, pid: number): Promise<Sustained> {
  const pool = new Pool(url, { connections: 20 });
  let accepted = 0;
  let refused = 0;
  const call = async () => {
    const res = await pool.request({ method: 'POST', path: `/ext/triggers/${triggerId}`, headers: { 'x-api-key': apiKey, 'content-type': 'application/json' }, body: '{"name":"bench"}' });
    await res.body.dump();
    if (res.statusCode === 200) accepted++;
    else refused++;
  };
  const since = new Date().toISOString();
  const done = () => count(db, ['COMPLETE'], since);
  // Fill the backlog, then open the window.
  await Promise.all(Array.from({ length: BACKLOG }, call));
  const c0 = await done();
  const cpu0 = processCpu(pid);
  const t0 = performance.now();
  while (performance.now() - t0 < SECONDS * 1000) {
    const queued = accepted - (await done());
    if (queued < BACKLOG) await Promise.all(Array.from({ length: Math.min(500, BACKLOG - queued) }, call));
    else await new Promise((r) => setTimeout(r, 100));
  }
  const c1 = await done();
  const cpu1 = processCpu(pid);
  const elapsed = (performance.now() - t0) / 1000;
  const d0 = performance.now();
  for (;;) {
    const open = await count(db, ['PENDING', 'RUNNING'], since);
    if (open === 0) break;
    if (performance.now() - d0 > 600_000) throw new Error(`backlog not drained: ${open} runs still open`);
    await new Promise((r) => setTimeout(r, 250));
  }
  await pool.close();
  if (refused > 0) throw new Error(`${refused} async calls were refused`);
  return {
    perSec: Math.round((c1 - c0) / elapsed), accepted, failed: accepted - (await done()), drainS: Math.round((performance.now() - d0) / 100) / 10,
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
    const res = await pool.request({ method: 'POST', path: `/ext/triggers/${triggerId}`, headers: { 'x-api-key': apiKey, 'x-api-wait': 'true', 'content-type': 'application/json' }, body: '{"name":"bench"}' });
    const body = (await res.body.json()) as { status: string; results?: Array<{ duration?: number }> };
    const ms = performance.now() - s;
    if (body.status !== 'COMPLETE') throw new Error(`sync run ended ${body.status}`);
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
  return { name, requests: r.requests.total, reqPerSec: Math.round(r.requests.total / r.duration), p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors };
}

export async function run(): Promise<void> {
  const base = await baselineLoad();
  const receiver = await startServer<{ url: string }>('bench/servers/event-receiver.ts');
  const target = await startServer<DemoInfo>('bench/servers/switchyard-demo.ts', { OUTBOUND_ALLOWLIST: '127.0.0.0/8' });
  const db = openStore({ dataDir: target.info.dataDir });
  try {
    const { url, bootstrap: b } = target.info;
    const tok = await fetch(`${url}/oauth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: b.clientId, client_secret: b.clientSecret, scope: `org:${b.orgId}` }) });
    const token = ((await tok.json()) as { access_token: string }).access_token;
    const trigger = async (name: string, steps: unknown[]) => {
      const wf = await json(`${url}/v1/workflows`, { method: 'POST', token, body: JSON.stringify({ name, steps }) });
      return (await json(`${url}/v1/triggers`, { method: 'POST', token, body: JSON.stringify({ automationId: wf.automationId, kind: 'api' }) })).triggerId as string;
    };
    const workflows: Array<[string, string]> = [
      ['one no-op code step', await trigger('noop', [{ type: 'code', name: 'noop', code: 'return 1;' }])],
      ['demo workflow (two code steps, one file)', b.demo.apiTriggerId],
      ['one http step to a local server', await trigger('http', [{ type: 'http', name: 'call', request: { method: 'POST', url: `${receiver.info.url}/hook`, body: { n: 1 } } }])],
    ];
    const loads: LoadResult[] = [];
    const lines: string[] = [];
    for (const [label, triggerId] of workflows) {
      const s = await sustained(url, b.apiKey, triggerId, db, target.child.pid!);
      lines.push(`- ${label}: **${s.perSec} executed runs/s** sustained over ${SECONDS} s (async, backlog ~${BACKLOG}); ${s.accepted} accepted, ${s.failed} not COMPLETE after the drain (${s.drainS} s); ${s.cpu}`);
      const one = await syncOne(url, b.apiKey, triggerId);
      lines.push(`- ${label}: sync, one caller: round trip p50 ${pct(one.total, 50)} ms, p99 ${pct(one.total, 99)} ms; added over the steps' own time p50 ${pct(one.added, 50)} ms, p99 ${pct(one.added, 99)} ms (${one.total.length} calls)`);
      loads.push(await syncMany(`sync, 50 callers: ${label}`, url, b.apiKey, triggerId));
    }
    report('Run execution on sqlite (one process, default RUN_CONCURRENCY)', base, loads);
    for (const line of lines) console.log(line);
  } finally {
    await db.destroy();
    await target.stop();
    await receiver.stop();
  }
}
