/**
 * Many organisations (not a test): one service (sqlite, defaults, as bench/runs.ts starts it),
 * N organisations each with a workflow of one code step `return { sum: (ctx.inputs.a || 0) + 1 }`
 * and an API trigger, and synchronous calls (`X-API-Wait: true`) at 50 connections spread round
 * robin over 1, 32 and 200 of them, in alternating rounds. It prints executed runs/s, p50/p99 per
 * case and their ratios to the one-organisation case; the code runner processes the service
 * started in each round (counted from /proc) and, from its metrics, their start times; a
 * contained runner's start time and idle memory measured here; the service's process tree at
 * the end and the tenant memory budget. Then the browser part (bench/tenants-browser.ts) when
 * that file exists (BENCH_TENANTS_BROWSER=false leaves it out).
 *
 * BENCH_TENANTS_ORGS (default `1,32,200`), BENCH_TENANTS_ROUNDS (2), BENCH_TENANTS_SECONDS (10)
 * shorten it; BENCH_TENANTS_RUNNERS (20) is how many runners are started for the direct
 * measurement.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { createApiKey, createCredential, createOrganization } from '../src/auth/index.js';
import { cpuMs, probeIsolation, pssBytes, type IsolationMode } from '../src/containment/index.js';
import { DEFAULT_LIMITS } from '../src/engine/sandbox/limits.js';
import { SandboxWorker } from '../src/engine/sandbox/worker.js';
import { openStore } from '../src/storage/db.js';
import { freePort, json, processCpu, processTree, ROOT, startServer } from './lib.js';

interface DemoInfo {
  url: string;
  dataDir: string;
  metricsUrl?: string;
}

interface Org {
  orgId: string;
  apiKey: string;
  triggerId: string;
}

const CASES = (process.env.BENCH_TENANTS_ORGS ?? '1,32,200').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_TENANTS_ROUNDS ?? 2);
const SECONDS = Number(process.env.BENCH_TENANTS_SECONDS ?? 10);
const RUNNERS = Number(process.env.BENCH_TENANTS_RUNNERS ?? 20);
const CONNECTIONS = 50;
const CODE = 'return { sum: (ctx.inputs.a || 0) + 1 }';
const MiB = 1024 * 1024;

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : NaN;
};
const mib = (bytes: number) => (bytes / MiB).toFixed(1);

/** Resident memory and PSS of processes (Linux /proc), summed; gone ones count nothing. */
function memoryOf(pids: readonly number[]): { rss: number; pss: number } {
  let rss = 0;
  let pss = 0;
  for (const pid of pids) {
    try {
      const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
      rss += Number(/^Rss:\s+(\d+)/m.exec(text)?.[1] ?? 0) * 1024;
      pss += Number(/^Pss:\s+(\d+)/m.exec(text)?.[1] ?? 0) * 1024;
    } catch {
      // gone meanwhile
    }
  }
  return { rss, pss };
}

/**
 * A contained runner as the pool starts one, measured here: spawn to ready (sequential starts)
 * and each idle tree's RSS/PSS, once started and again after one execution.
 */
export async function measureRunners(n = RUNNERS): Promise<string[]> {
  const isolation = await probeIsolation({ mode: (process.env.CODE_ISOLATION || 'auto') as IsolationMode });
  const cwd = mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-runner-'));
  const options = {
    isolation,
    cwd,
    limits: DEFAULT_LIMITS,
    spawnTimeoutMs: 10_000,
    killGraceMs: 500,
    rssHeadroomMb: 384,
    contexts: 32,
    defaultMemoryMb: 128,
    breach: 'off' as const,
  };
  const workers: SandboxWorker[] = [];
  const starts: number[] = [];
  const cpu: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      const worker = await SandboxWorker.start(options);
      starts.push(performance.now() - t);
      workers.push(worker);
      cpu.push(await cpuMs(worker.tree));
    }
    await new Promise((r) => setTimeout(r, 1000));
    const idle = workers.map((w) => memoryOf(w.tree));
    for (const [i, w] of workers.entries()) {
      // Bound first where runners are bound (a runner runs only its organisation's steps).
      (w as unknown as { bind?: (orgId: string) => void }).bind?.('org_bench');
      await w.exec(
        {
          orgId: 'org_bench',
          code: CODE,
          data: JSON.stringify({ inputs: { a: i }, steps: [] }),
          timeoutMs: 1000,
          memoryMb: 128,
          key: 'k',
        },
        () => {},
      );
    }
    await new Promise((r) => setTimeout(r, 1000));
    const used = workers.map((w) => memoryOf(w.tree));
    const measuredPss = await pssBytes(workers[0]!.tree);
    return [
      `- contained runner (${isolation.report.level}) start, spawn to ready, ${n} one after another: p50 ${pct(starts, 50).toFixed(0)} ms, p99 ${pct(starts, 99).toFixed(0)} ms; CPU of its tree by then p50 ${pct(cpu, 50)} ms`,
      `- idle runner tree (${workers[0]!.tree.length} processes; ${n} alive at once): RSS ${mib(
        pct(
          idle.map((m) => m.rss),
          50,
        ),
      )} MiB, PSS ${mib(
        pct(
          idle.map((m) => m.pss),
          50,
        ),
      )} MiB; after one execution RSS ${mib(
        pct(
          used.map((m) => m.rss),
          50,
        ),
      )} MiB, PSS ${mib(
        pct(
          used.map((m) => m.pss),
          50,
        ),
      )} MiB (p50; one tree as the pool measures it: ${mib(measuredPss)} MiB)`,
    ];
  } finally {
    for (const w of workers) w.kill('crash', 'measured');
    await new Promise((r) => setTimeout(r, 200));
    rmSync(cwd, { recursive: true, force: true });
  }
}

/** Organisations with a credential, an API key, the one-step workflow and its API trigger. */
async function createOrgs(target: { url: string; dataDir: string }, n: number): Promise<Org[]> {
  const db = openStore({ dataDir: target.dataDir });
  const made: Array<{ orgId: string; apiKey: string; clientId: string; clientSecret: string }> = [];
  try {
    for (let i = 0; i < n; i++) {
      const org = await createOrganization(db, { name: `tenant ${i}` });
      const { credential, clientSecret } = await createCredential(db, org.id, { label: 'bench' });
      const { secret } = await createApiKey(db, org.id, { label: 'bench' });
      made.push({ orgId: org.id, apiKey: secret, clientId: credential.clientId, clientSecret });
    }
  } finally {
    await db.destroy();
  }
  const orgs: Org[] = [];
  let next = 0;
  const one = async () => {
    for (let i = next++; i < made.length; i = next++) {
      const m = made[i]!;
      const tok = await fetch(`${target.url}/oauth/token`, {
        method: 'POST',
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: m.clientId,
          client_secret: m.clientSecret,
          scope: `org:${m.orgId}`,
        }),
      });
      const token = ((await tok.json()) as { access_token: string }).access_token;
      const wf = await json(`${target.url}/v1/workflows`, {
        method: 'POST',
        token,
        body: JSON.stringify({ name: 'sum', steps: [{ type: 'code', name: 'sum', code: CODE }] }),
      });
      const trg = await json(`${target.url}/v1/triggers`, {
        method: 'POST',
        token,
        body: JSON.stringify({ automationId: wf.automationId, kind: 'api' }),
      });
      orgs[i] = { orgId: m.orgId, apiKey: m.apiKey, triggerId: trg.triggerId as string };
    }
  };
  await Promise.all(Array.from({ length: 8 }, one));
  return orgs;
}

/** One synchronous call; its latency, or throws unless the run is COMPLETE. */
async function syncCall(url: string, org: Org, a: number): Promise<number> {
  const t = performance.now();
  const res = await fetch(`${url}/ext/triggers/${org.triggerId}`, {
    method: 'POST',
    headers: { 'x-api-key': org.apiKey, 'x-api-wait': 'true', 'content-type': 'application/json' },
    body: JSON.stringify({ a }),
  });
  const body = (await res.json()) as { status?: string };
  if (body.status !== 'COMPLETE') throw new Error(`sync run ended ${res.status} ${JSON.stringify(body).slice(0, 500)}`);
  return performance.now() - t;
}

/**
 * Watches the processes below `pid` while a round runs (every 500 ms, from /proc): how many
 * appeared (each code runner is three with bubblewrap: a runner start is counted once, by its
 * direct child of the service), and the CPU they used, from each one's last reading, so that
 * runners killed during the round (never reaped by the service, their time is not in its
 * children's) still count up to their last sample (a runner that lived less than 500 ms may be missed).
 */
function treeWatcher(pid: number): { stop: () => { started: number; cpuMs: number } } {
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  const direct = new Set<number>();
  /** Its CPU ticks (user + system) and parent, from /proc/<pid>/stat. */
  const stat = (p: number): { ticks: number; ppid: number } | undefined => {
    try {
      const text = readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
      return { ticks: Number(f[11]) + Number(f[12]), ppid: Number(f[1]) };
    } catch {
      return undefined;
    }
  };
  let initial: Set<number> | undefined;
  const sample = () => {
    const tree = processTree(pid).slice(1);
    for (const p of tree) {
      const st = stat(p);
      if (st === undefined) continue;
      if (!first.has(p)) first.set(p, initial ? 0 : st.ticks);
      last.set(p, st.ticks);
      if (initial && !initial.has(p) && st.ppid === pid) direct.add(p);
    }
    initial ??= new Set(tree);
  };
  sample();
  const timer = setInterval(sample, 500);
  return {
    stop: () => {
      clearInterval(timer);
      sample();
      let cpu = 0;
      for (const [p, t] of last) cpu += t - (first.get(p) ?? 0);
      return { started: direct.size, cpuMs: cpu * 10 };
    },
  };
}

/** The service's Prometheus text, or undefined (no listener). */
async function scrape(metricsUrl: string | undefined): Promise<string | undefined> {
  if (!metricsUrl) return undefined;
  try {
    const res = await fetch(metricsUrl);
    return res.ok ? await res.text() : undefined;
  } catch {
    return undefined;
  }
}

function series(text: string | undefined, name: string): Map<string, number> {
  const out = new Map<string, number>();
  if (!text) return out;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m && m[1] === name) out.set(m[2] ?? '', Number(m[3]));
  }
  return out;
}

/** p50/p99 of the runner starts between two scrapes, as the bucket bound they fall under. */
function startPercentiles(before: string | undefined, after: string | undefined): string {
  const b = series(before, 'switchyard_sandbox_runner_start_seconds_bucket');
  const a = series(after, 'switchyard_sandbox_runner_start_seconds_bucket');
  if (a.size === 0) return 'start times: not reported by this service';
  const buckets = [...a.entries()]
    .map(([labels, n]) => ({ le: /le="([^"]+)"/.exec(labels)?.[1] ?? '', n: n - (b.get(labels) ?? 0) }))
    .sort((x, y) => (x.le === '+Inf' ? 1 : y.le === '+Inf' ? -1 : Number(x.le) - Number(y.le)));
  const total = buckets.at(-1)?.n ?? 0;
  if (total === 0) return 'no runner started in the service';
  const at = (p: number) => {
    const bucket = buckets.find((x) => x.n >= (p / 100) * total)!;
    return bucket.le === '+Inf' ? '> 10 s' : `≤ ${Math.round(Number(bucket.le) * 1000)} ms`;
  };
  return `${total} starts, p50 ${at(50)}, p99 ${at(99)}`;
}

interface CaseRound {
  orgs: number;
  runsPerSec: number;
  p50: number;
  p99: number;
  failed: number;
  runnerProcesses: number;
  starts: string;
  /** CPU per executed run, µs: the service's main thread, its other threads, the runner processes. */
  cpu: { main: number; other: number; runners: number } | undefined;
}

async function round(target: { url: string; metricsUrl?: string }, pid: number, orgs: Org[]): Promise<CaseRound> {
  let next = 0;
  let complete = 0;
  let failed = 0;
  const m0 = await scrape(target.metricsUrl);
  const tree = treeWatcher(pid);
  const c0 = processCpu(pid);
  const r = await autocannon({
    url: target.url,
    connections: CONNECTIONS,
    duration: SECONDS,
    requests: [
      {
        method: 'POST',
        setupRequest: (req) => {
          const i = next++;
          const org = orgs[i % orgs.length]!;
          return {
            ...req,
            path: `/ext/triggers/${org.triggerId}`,
            headers: { 'x-api-key': org.apiKey, 'x-api-wait': 'true', 'content-type': 'application/json' },
            body: `{"a":${i}}`,
          };
        },
        onResponse: (status, body) => {
          if (status === 200 && body.includes('"COMPLETE"')) complete += 1;
          else failed += 1;
        },
      },
    ],
  });
  const c1 = processCpu(pid);
  const watched = tree.stop();
  const runnerProcesses = watched.started;
  const m1 = await scrape(target.metricsUrl);
  const us = (ms: number) => Math.round((ms * 1000) / Math.max(1, complete));
  const cpu =
    c0 && c1
      ? {
          main: us(c1.main - c0.main),
          other: us(c1.threads - c0.threads - (c1.main - c0.main)),
          runners: us(watched.cpuMs),
        }
      : undefined;
  return {
    orgs: orgs.length,
    runsPerSec: complete / r.duration,
    p50: r.latency.p50,
    p99: r.latency.p99,
    failed: failed + r.errors,
    runnerProcesses,
    starts: startPercentiles(m0, m1),
    cpu,
  };
}

/** The code-step part: prints its tables; returns the lines it printed. */
export async function codeSteps(): Promise<string[]> {
  const lines: string[] = [];
  const print = (line: string) => {
    lines.push(line);
    console.log(line);
  };
  print(
    `\n## Many organisations: sync calls of a one-code-step workflow, ${CONNECTIONS} connections round robin over the organisations`,
  );
  // Measured first, on a quiet machine: the runner itself.
  const runnerLines = await measureRunners();
  const target = await startServer<DemoInfo>('bench/servers/switchyard-demo.ts', {
    METRICS_PORT: String(await freePort()),
  });
  const pid = target.child.pid!;
  try {
    const all = await createOrgs(target.info, Math.max(...CASES));
    // Each organisation's first call (its first runner), one caller after another per 4 callers.
    const first: number[] = [];
    let k = 0;
    const warm = async () => {
      for (let i = k++; i < all.length; i = k++) first.push(await syncCall(target.info.url, all[i]!, i));
    };
    const w0 = performance.now();
    await Promise.all(Array.from({ length: 4 }, warm));
    const warmS = (performance.now() - w0) / 1000;
    const rounds: CaseRound[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      for (const n of CASES) {
        // Calls still in flight when the previous round's load generator stopped finish first.
        await new Promise((resolve) => setTimeout(resolve, 3000));
        rounds.push(await round({ ...target.info }, pid, all.slice(0, n)));
      }
    }
    print(
      `| organisations | round | executed runs/s | p50 ms | p99 ms | not COMPLETE | CPU per run µs: main / other threads / runners | runner processes started (seen) | runner starts (service metrics) |`,
    );
    print('|---:|---:|---:|---:|---:|---:|---|---:|---|');
    for (const [i, x] of rounds.entries()) {
      print(
        `| ${x.orgs} | ${Math.floor(i / CASES.length) + 1} | ${Math.round(x.runsPerSec)} | ${x.p50} | ${x.p99} | ${x.failed} | ${x.cpu ? `${x.cpu.main} / ${x.cpu.other} / ${x.cpu.runners}` : 'n/a'} | ${x.runnerProcesses} | ${x.starts} |`,
      );
    }
    const summary = CASES.map((n) => {
      const xs = rounds.filter((x) => x.orgs === n);
      const mean = (f: (x: CaseRound) => number) => xs.reduce((s, x) => s + f(x), 0) / xs.length;
      return { n, runs: mean((x) => x.runsPerSec), p50: mean((x) => x.p50), p99: mean((x) => x.p99) };
    });
    const base = summary[0]!;
    print('');
    print(
      `| organisations | executed runs/s (mean of ${ROUNDS} rounds) | ratio to ${base.n} | p50 ms | p99 ms | p99 ratio to ${base.n} |`,
    );
    print('|---:|---:|---:|---:|---:|---:|');
    for (const s of summary) {
      print(
        `| ${s.n} | ${Math.round(s.runs)} | ${(s.runs / base.runs).toFixed(2)} | ${s.p50.toFixed(1)} | ${s.p99.toFixed(1)} | ${(s.p99 / base.p99).toFixed(2)} |`,
      );
    }
    print('');
    print(
      `- first call of each of ${all.length} organisations (4 callers, ${warmS.toFixed(1)} s): p50 ${pct(first, 50).toFixed(0)} ms, p99 ${pct(first, 99).toFixed(0)} ms`,
    );
    for (const line of runnerLines) print(line);
    const tree = processTree(pid);
    const mem = memoryOf(tree);
    print(
      `- service process tree at the end: ${tree.length} processes, RSS ${mib(mem.rss)} MiB, PSS ${mib(mem.pss)} MiB (the service alone: RSS ${mib(memoryOf([pid]).rss)} MiB)`,
    );
    const metrics = await scrape(target.info.metricsUrl);
    const budget = series(metrics, 'switchyard_tenant_memory_bytes');
    const runners = series(metrics, 'switchyard_sandbox_runners');
    const evictions = series(metrics, 'switchyard_tenant_memory_evictions_total').get('');
    if (budget.size > 0) {
      const state = (m: Map<string, number>, s: string) => m.get(`{state="${s}"}`) ?? 0;
      print(
        `- tenant memory budget: ${mib(state(budget, 'used'))} of ${mib(state(budget, 'total'))} MiB used; ${evictions ?? 0} evictions; runners: ${['spare', 'idle', 'busy', 'starting'].map((s) => `${state(runners, s)} ${s}`).join(', ')}`,
      );
    } else {
      print('- tenant memory budget: not reported by this service');
    }
  } finally {
    await target.stop();
    rmSync(target.info.dataDir, { recursive: true, force: true });
  }
  return lines;
}

export async function run(): Promise<void> {
  await codeSteps();
  // The browser part of the same benchmark, where it exists (bench/tenants-browser.ts prints its figures).
  const browser = path.join(ROOT, 'bench/tenants-browser.ts');
  if (existsSync(browser) && process.env.BENCH_TENANTS_BROWSER !== 'false') {
    const mod = (await import(browser)) as { runBrowserTenants?: () => Promise<unknown>; run?: () => Promise<void> };
    await (mod.runBrowserTenants ?? mod.run)?.();
  }
}
