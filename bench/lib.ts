/**
 * Benchmark harness (not a test): starts servers in child processes, drives them with
 * autocannon from this process, and reports each target next to a baseline measured in the
 * same run (ratios, not absolute numbers: these machines are noisy).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import { createInterface } from 'node:readline';
import path from 'node:path';
import autocannon from 'autocannon';

export const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

export interface Started<T> {
  info: T;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** BENCH_CPU_PROF=DIR: every server the bench starts writes V8 CPU profiles (one per thread) into DIR. */
function cpuProfFlags(): string[] {
  return process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.BENCH_CPU_PROF)}`] : [];
}

/** Starts `tsx <script>` and waits for its first stdout line, a JSON object describing it. */
export async function startServer<T extends { url: string }>(
  script: string,
  env: Record<string, string> = {},
): Promise<Started<T>> {
  const child = spawn(process.execPath, [...cpuProfFlags(), '--import', 'tsx', path.join(ROOT, script)], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const info = await new Promise<T>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.once('line', (line) => {
      try {
        resolve(JSON.parse(line) as T);
      } catch (err) {
        reject(err);
      }
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code} before it was ready`)));
  });
  return {
    info,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** The Node flags `npm start` and `npm run worker` give the compiled service (package.json). */
export const NPM_START_FLAGS = ['--max-semi-space-size=2'];

/** Builds dist/ (scripts/build.mjs), as `npm start` does before it starts. */
export function buildDist(): void {
  execFileSync(process.execPath, [path.join(ROOT, 'scripts/build.mjs')], { cwd: ROOT, stdio: 'inherit' });
}

/** A port nothing listens on now. */
export async function freePort(): Promise<number> {
  const net = await import('node:net');
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/**
 * `node <args>` as `npm start` runs the service (MALLOC_ARENA_MAX=2, embedded defaults) on
 * `dataDir` and `port`, with `env` over the bench's own environment; silent.
 */
export function spawnService(
  args: string[],
  dataDir: string,
  port: number,
  env: Record<string, string> = {},
): ChildProcess {
  return spawn(process.execPath, [...cpuProfFlags(), ...args], {
    cwd: ROOT,
    env: {
      ...process.env,
      MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2',
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      ...env,
    },
    stdio: 'ignore',
  });
}

/** Resolves with the ms from `started` to the first 200 of the service's /readyz; rejects if it exits first. */
export async function untilReady(port: number, child: ChildProcess, started: bigint): Promise<number> {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`);
      await res.arrayBuffer();
      if (res.status === 200) return Number(process.hrtime.bigint() - started) / 1e6;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** SIGTERM, resolving when the process has exited. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** The demo's bootstrap secrets and ids, as the first start wrote them (DATA_DIR/bootstrap.json). */
export interface DemoBootstrap {
  apiKey: string;
  demo: { apiTriggerId: string };
}

/**
 * The compiled service (dist/main.js, see buildDist) as `npm start` runs it, on a fresh DATA_DIR
 * with the demo seeded, once /readyz answers 200; `stop()` ends it and removes its data (as does
 * a start that fails).
 */
export async function startCompiled(
  env: Record<string, string> = {},
): Promise<Started<{ url: string; bootstrap: DemoBootstrap }>> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-'));
  const port = await freePort();
  const child = spawnService([...NPM_START_FLAGS, path.join(ROOT, 'dist/main.js')], dataDir, port, env);
  const stop = async () => {
    await stopChild(child);
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await untilReady(port, child, process.hrtime.bigint());
    const bootstrap = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8')) as DemoBootstrap;
    return { info: { url: `http://127.0.0.1:${port}`, bootstrap }, child, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** CPU time (user + system, all threads) a process has used so far, in ms, from /proc (Linux); undefined elsewhere. */
export function cpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of stat(5), in clock ticks (USER_HZ, 100 on Linux).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

/** CPU (ms) of a process so far, from /proc (Linux): its main thread, all its threads, and its children (live and reaped). */
export interface ProcessCpu {
  main: number;
  threads: number;
  children: number;
}

function statFields(file: string): string[] | undefined {
  try {
    const stat = readFileSync(file, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

const ticksMs = (n: number) => (n * 1000) / 100;

export function processCpu(pid: number): ProcessCpu | undefined {
  const all = statFields(`/proc/${pid}/stat`);
  const main = statFields(`/proc/${pid}/task/${pid}/stat`);
  if (!all || !main) return undefined;
  // stat(5) fields 14–17: utime, stime, cutime (reaped children), cstime.
  let children = ticksMs(Number(all[13]) + Number(all[14]));
  let live: string[] = [];
  try {
    live = readdirSync(`/proc/${pid}/task`).flatMap((t) =>
      readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean),
    );
  } catch {
    // a thread ended while being read: its children are counted at the next reading
  }
  for (const c of live) {
    const f = statFields(`/proc/${c}/stat`);
    if (f) children += ticksMs(Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]));
  }
  return {
    main: ticksMs(Number(main[11]) + Number(main[12])),
    threads: ticksMs(Number(all[11]) + Number(all[12])),
    children,
  };
}

export interface LoadResult {
  name: string;
  requests: number;
  reqPerSec: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  connections?: number;
  durationSeconds?: number;
}

export async function load(name: string, opts: LoadOptions): Promise<LoadResult> {
  const result = await autocannon({
    url: opts.url,
    method: opts.method ?? 'GET',
    headers: opts.headers,
    body: opts.body,
    connections: opts.connections ?? 50,
    duration: opts.durationSeconds ?? Number(process.env.BENCH_DURATION ?? 10),
  });
  return {
    name,
    requests: result.requests.total,
    reqPerSec: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

export function report(title: string, baseline: LoadResult, targets: LoadResult[]): void {
  console.log(`\n## ${title}`);
  console.log('| target | req/s | p50 ms | p99 ms | non-2xx | errors | ratio to baseline |');
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const r of [baseline, ...targets]) {
    const share = r.reqPerSec / baseline.reqPerSec;
    const ratio = r === baseline ? '1.00' : share.toFixed(share < 0.1 ? 3 : 2);
    console.log(`| ${r.name} | ${r.reqPerSec} | ${r.p50} | ${r.p99} | ${r.non2xx} | ${r.errors} | ${ratio} |`);
  }
}

/** The baseline of every benchmark: a bare node:http server answering a small JSON body, loaded the same way. */
export async function baselineLoad(): Promise<LoadResult> {
  const baseline = await startServer<{ url: string }>('bench/servers/baseline.ts');
  try {
    return await load('bare node:http', { url: `${baseline.info.url}/`, method: 'POST', body: '{}' });
  } finally {
    await baseline.stop();
  }
}

/** A JSON request to the service under test (Bearer `token` when given); throws on a non-2xx answer with its body. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- bench responses of several shapes
export async function json(url: string, init: RequestInit & { token?: string } = {}): Promise<any> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  const res = await fetch(url, { ...init, headers });
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Mulberry32: a small seeded PRNG, so generated benchmark data is the same in every run. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The pid and its descendants (sandbox processes, Chromium, script runners), from the parent pids in /proc/<pid>/stat (Linux). */
export function processTree(pid: number): number[] {
  const parent = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parent.set(ppid, [...(parent.get(ppid) ?? []), Number(name)]);
    } catch {
      // gone meanwhile
    }
  }
  const out = [pid];
  for (let i = 0; i < out.length; i++) out.push(...(parent.get(out[i]!) ?? []));
  return out;
}

/**
 * Calls a tool of the embedded browser-automation server over MCP's JSON-RPC (one POST) with a
 * runtime token; its structured result. Throws with the answer when the call fails.
 */
export async function browserTool(
  url: string,
  token: string,
  name: string,
  args: Record<string, unknown>,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tool results of several shapes
): Promise<any> {
  const res = await fetch(`${url}/mcp/browser-automation`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
  });
  const body = (await res.json()) as { result?: { isError?: boolean; structuredContent: Record<string, unknown> } };
  if (!body.result || body.result.isError) throw new Error(`${name}: ${JSON.stringify(body)}`);
  return body.result.structuredContent;
}
