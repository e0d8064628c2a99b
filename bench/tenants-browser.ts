/**
 * Browser tasks of many organisations, not a test (`npm run bench tenants-browser`; bench/README
 * "Browser tasks of many organisations"). One service with 8 organisations, each with its own
 * browser box; a simple task (`playwright_run` opening a local page and returning its title),
 * measured from the start call to the first poll that answers `completed` (polls every 50 ms):
 * - throughput (tasks/s) and p50/p99 with BENCH_BROWSER_CLIENTS (8) tasks in flight at all times,
 *   all of one organisation, or one client per organisation for 8 organisations; alternating
 *   rounds of BENCH_BROWSER_ROUND_S (8) seconds, BENCH_BROWSER_ROUNDS (3) of each, and the ratio
 *   8 orgs / 1 org (target ≥ 0.7). The service runs with BROWSER_MAX_CONTEXTS 4 and, so that both
 *   sides may use every slot, BROWSER_ORG_MAX_CONTEXTS 4 (BENCH_BROWSER_ORG_CAP to change it);
 * - what one organisation's box costs: its first task (Chromium started for it) p50, and the
 *   memory (PSS, RSS) of the service's whole process tree with 1 and with 8 boxes;
 * - fairness, on a second service with the default slots: organisation A starts 6 scripts of 10 s
 *   at once, then B a script of 1 s; B's start call to `completed`, next to B's own idle figure.
 * Print and return the figures (bench/tenants.ts takes them).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { browserTool, processTree, startServer } from './lib.js';

interface OrgsInfo {
  url: string;
  pid: number;
  orgs: Array<{ orgId: string; token: string }>;
}

const ROUND_MS = Number(process.env.BENCH_BROWSER_ROUND_S ?? 8) * 1000;
const ROUNDS = Number(process.env.BENCH_BROWSER_ROUNDS ?? 3);
const CLIENTS = Number(process.env.BENCH_BROWSER_CLIENTS ?? 8);
const MAX_CONTEXTS = process.env.BENCH_BROWSER_MAX_CONTEXTS ?? '4';
const ORG_CAP = process.env.BENCH_BROWSER_ORG_CAP ?? MAX_CONTEXTS;
const ORGS = 8;
const POLL_MS = 50;

export interface ModeFigures {
  orgs: number;
  tasks: number;
  failed: number;
  perSecond: number;
  p50: number;
  p99: number;
}

export interface BrowserTenantsFigures {
  one: ModeFigures;
  many: ModeFigures;
  ratio: number;
  firstTaskP50: number;
  memory: { oneBox: { pss: number; rss: number }; manyBoxes: { pss: number; rss: number } };
  fairness: { idleMs: number; floodedMs: number };
}

/** One task, start call to completed, in ms; throws when it fails. */
async function task(url: string, tok: string, code: string): Promise<number> {
  const t0 = performance.now();
  const started = await browserTool(url, tok, 'browser-automation_playwright_run', { code, buildId: 'bench' });
  for (;;) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    const polled = await browserTool(url, tok, 'browser-automation_playwright_run_continue', {
      sessionId: started.sessionId,
    });
    if (polled.status === 'completed') return performance.now() - t0;
    if (polled.status === 'failed') throw new Error(`task failed: ${polled.result}`);
  }
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? Math.round(s[Math.min(s.length - 1, Math.floor(q * s.length))]!) : NaN;
}

/** PSS and RSS of a process and all its descendants, in MiB (Linux /proc). */
function treeMemMiB(root: number): { pss: number; rss: number } {
  let pss = 0;
  let rss = 0;
  for (const pid of processTree(root)) {
    try {
      const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
      pss += Number(/^Pss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0);
      rss += Number(/^Rss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0);
    } catch {
      /* gone */
    }
  }
  return { pss: Math.round(pss / 1024), rss: Math.round(rss / 1024) };
}

/** CLIENTS clients, each running tasks back to back for ROUND_MS, client i for organisation i mod `orgs`. */
async function round(
  info: OrgsInfo,
  { orgs, code }: { orgs: number; code: string },
): Promise<{ done: number[]; failed: number; ms: number }> {
  const done: number[] = [];
  let failed = 0;
  const t0 = performance.now();
  const end = t0 + ROUND_MS;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, i) => {
      const tok = info.orgs[i % orgs]!.token;
      while (performance.now() < end) {
        try {
          done.push(await task(info.url, tok, code));
        } catch {
          failed += 1;
        }
      }
    }),
  );
  return { done, failed, ms: performance.now() - t0 };
}

export async function runBrowserTenants(): Promise<BrowserTenantsFigures> {
  const site = http.createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>Bench page</title><h1>Hello</h1>'),
  );
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', () => r()));
  const page = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;
  const code = `const res = await page.goto(${JSON.stringify(page)}); if (!res.ok()) throw new Error('HTTP ' + res.status()); return await page.title();`;
  const env = { OUTBOUND_ALLOWLIST: '127.0.0.0/8', BROWSER_IDLE_MS: '600000', BENCH_ORGS: String(ORGS) };
  const svc = await startServer<OrgsInfo>('bench/servers/switchyard-orgs.ts', {
    ...env,
    BROWSER_MAX_CONTEXTS: MAX_CONTEXTS,
    BROWSER_ORG_MAX_CONTEXTS: ORG_CAP,
  });
  try {
    const info = svc.info;
    // Organisation 1's box up, then the memory of the tree with one box; then every other box.
    const first = [await task(info.url, info.orgs[0]!.token, code)];
    await new Promise((r) => setTimeout(r, 2000));
    const oneBox = treeMemMiB(info.pid);
    for (const org of info.orgs.slice(1)) first.push(await task(info.url, org.token, code));
    await round(info, { orgs: ORGS, code }); // warm-up: every organisation's runners and contexts
    await new Promise((r) => setTimeout(r, 2000));
    const manyBoxes = treeMemMiB(info.pid);
    const modes = {
      1: { done: [] as number[], failed: 0, ms: 0 },
      [ORGS]: { done: [] as number[], failed: 0, ms: 0 },
    } as Record<number, { done: number[]; failed: number; ms: number }>;
    for (let r = 0; r < ROUNDS; r++) {
      for (const orgs of [1, ORGS]) {
        const got = await round(info, { orgs, code });
        const m = modes[orgs]!;
        m.done.push(...got.done);
        m.failed += got.failed;
        m.ms += got.ms;
        console.log(
          `  round ${r + 1}, ${orgs} org${orgs > 1 ? 's' : ''}: ${(got.done.length / (got.ms / 1000)).toFixed(2)} tasks/s`,
        );
      }
    }
    const figures = (orgs: number): ModeFigures => {
      const m = modes[orgs]!;
      return {
        orgs,
        tasks: m.done.length,
        failed: m.failed,
        perSecond: m.done.length / (m.ms / 1000),
        p50: quantile(m.done, 0.5),
        p99: quantile(m.done, 0.99),
      };
    };
    const one = figures(1);
    const many = figures(ORGS);
    await svc.stop();

    // Fairness: the default slots (4, 2 per organisation), organisation A floods, B runs a 1-s script.
    const fair = await startServer<OrgsInfo>('bench/servers/switchyard-orgs.ts', { ...env, BENCH_ORGS: '2' });
    let fairness = { idleMs: NaN, floodedMs: NaN };
    try {
      const a = fair.info.orgs[0]!;
      const b = fair.info.orgs[1]!;
      const quick = 'await page.waitForTimeout(1000); return 1;';
      await Promise.all([task(fair.info.url, a.token, 'return 1'), task(fair.info.url, b.token, 'return 1')]);
      const idleMs = await task(fair.info.url, b.token, quick);
      const flood = Array.from({ length: 6 }, () =>
        task(fair.info.url, a.token, 'await page.waitForTimeout(10000); return 1;'),
      );
      await new Promise((r) => setTimeout(r, 1000));
      const floodedMs = await task(fair.info.url, b.token, quick);
      await Promise.all(flood);
      fairness = { idleMs: Math.round(idleMs), floodedMs: Math.round(floodedMs) };
    } finally {
      await fair.stop();
    }

    const result: BrowserTenantsFigures = {
      one,
      many,
      ratio: many.perSecond / one.perSecond,
      firstTaskP50: quantile(first, 0.5),
      memory: { oneBox, manyBoxes },
      fairness,
    };
    const line = (m: ModeFigures) =>
      `  ${String(m.orgs).padStart(2)} org${m.orgs > 1 ? 's' : ' '}  ${m.perSecond.toFixed(2).padStart(6)} tasks/s  p50 ${m.p50} ms  p99 ${m.p99} ms  (${m.tasks} tasks, ${m.failed} failed)`;
    console.log(
      `browser tasks of many organisations (${CLIENTS} in flight, BROWSER_MAX_CONTEXTS ${MAX_CONTEXTS}, BROWSER_ORG_MAX_CONTEXTS ${ORG_CAP}, ${ROUNDS} alternating rounds of ${ROUND_MS / 1000} s)`,
    );
    console.log(line(one));
    console.log(line(many));
    console.log(`  ratio ${ORGS} orgs / 1 org: ${result.ratio.toFixed(2)} (target >= 0.7)`);
    console.log(`  an organisation's first task (its box started): p50 ${result.firstTaskP50} ms`);
    console.log(
      `  service process tree: 1 box ${oneBox.pss} MiB PSS (${oneBox.rss} MiB RSS); ${ORGS} boxes ${manyBoxes.pss} MiB PSS (${manyBoxes.rss} MiB RSS)`,
    );
    console.log(
      `  fairness: B's 1-s script ${fairness.idleMs} ms idle, ${fairness.floodedMs} ms while A runs 6 scripts of 10 s (default slots)`,
    );
    return result;
  } finally {
    await svc.stop();
    site.close();
  }
}

export async function run(): Promise<void> {
  await runBrowserTenants();
}
