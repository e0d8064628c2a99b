/**
 * Browser task benchmark, not a test: `browser-automation_playwright_run` of a
 * trivial script (`return await page.title()`) and of one that opens a local page, measured
 * from the start call to the first poll that answers `completed` (polls every 10 ms), in one run:
 * - warm: the organisation's browser stays up between tasks (default BROWSER_IDLE_MS);
 * - cold: a service with BROWSER_IDLE_MS=1000 and tasks 1.6 s apart, so every task launches
 *   Chromium and a script process anew (the baseline the pool is measured against);
 * - ten concurrent tasks opening the local page on the warm service (each polling every 100 ms): throughput, failures, and the peak resident
 *   memory (PSS) of the service with every process it started (Chromium, script runners).
 * Target: warm p50 ≤ 300 ms.
 * - operator_run (dom mode, blockAds and recordSession off) on a local form with the scripted
 *   model (bench/servers/scripted-model.ts, answering at once): a cache MISS (a new cacheKey
 *   each time: 4 model calls — fill, click, extract, done) vs a cache HIT (the same task and key:
 *   the steps replayed, no model call), start call to completed, same service and run.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { browserTool, processTree, startServer } from './lib.js';

interface DemoInfo {
  url: string;
  bootstrap: { clientId: string; clientSecret: string; orgId: string };
}

const WARM_TASKS = Number(process.env.BENCH_BROWSER_TASKS ?? 30);
const COLD_TASKS = Number(process.env.BENCH_BROWSER_COLD_TASKS ?? 10);
const CONCURRENT = 10;
const OPERATOR_TASKS = Number(process.env.BENCH_OPERATOR_TASKS ?? 10);
const FORM = `<!doctype html><title>Bench form</title><label for="n">Name</label><input id="n"><button id="b" type="button">Send</button><p role="status" id="s"></p>
<script>document.getElementById('b').onclick = () => { document.getElementById('s').textContent = 'Thanks ' + document.getElementById('n').value; };</script>`;

async function token(info: DemoInfo): Promise<string> {
  const b = info.bootstrap;
  const res = await fetch(`${info.url}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: b.clientId,
      client_secret: b.clientSecret,
      scope: `org:${b.orgId}`,
    }),
  });
  return ((await res.json()) as { access_token: string }).access_token;
}

/** One task, start call to completed, in ms; throws when it fails. */
async function task(info: DemoInfo, tok: string, page?: string, pollMs = 10): Promise<number> {
  const t0 = performance.now();
  const code = page
    ? `const res = await page.goto(${JSON.stringify(page)}); if (!res.ok()) throw new Error('HTTP ' + res.status()); return await page.title();`
    : 'return await page.title();';
  const started = await browserTool(info.url, tok, 'browser-automation_playwright_run', { code, buildId: 'bench' });
  for (;;) {
    const polled = await browserTool(info.url, tok, 'browser-automation_playwright_run_continue', {
      sessionId: started.sessionId,
    });
    if (polled.status === 'completed') return performance.now() - t0;
    if (polled.status === 'failed') throw new Error(`task failed: ${polled.result}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/**
 * Memory of a process and all its descendants, in MiB (Linux /proc): the sum of their
 * proportional set sizes (PSS), so pages shared between Chromium's processes count once, not
 * once per process as summed RSS would.
 */
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
  return { pss: pss / 1024, rss: rss / 1024 };
}

function quantiles(xs: number[]): { p50: number; p95: number } {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => Math.round(s[Math.min(s.length - 1, Math.floor(q * s.length))]!);
  return { p50: at(0.5), p95: at(0.95) };
}

export async function run(): Promise<void> {
  const site = http.createServer((req, res) =>
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end(req.url === '/form' ? FORM : '<!doctype html><title>Bench page</title><h1>Hello</h1>'),
  );
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', () => r()));
  const page = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;
  const model = await startServer<{ url: string }>('bench/servers/scripted-model.ts', {});
  // The local pages are on loopback, which the outbound guard refuses unless OUTBOUND_ALLOWLIST names it.
  const warm = await startServer<DemoInfo>('bench/servers/switchyard-demo.ts', {
    BROWSER_MAX_CONTEXTS: '4',
    OUTBOUND_ALLOWLIST: '127.0.0.0/8',
    OPENAI_COMPATIBLE_BASE_URL: model.info.url,
    DEFAULT_MODEL: 'openai-compatible/bench',
  });
  const cold = await startServer<DemoInfo>('bench/servers/switchyard-demo.ts', {
    BROWSER_IDLE_MS: '1000',
    OUTBOUND_ALLOWLIST: '127.0.0.0/8',
  });
  try {
    const warmToken = await token(warm.info);
    const coldToken = await token(cold.info);
    await task(warm.info, warmToken); // launches the organisation's browser
    const warmMs: number[] = [];
    for (let i = 0; i < WARM_TASKS; i++) warmMs.push(await task(warm.info, warmToken));
    const navMs: number[] = [];
    for (let i = 0; i < WARM_TASKS; i++) navMs.push(await task(warm.info, warmToken, page));
    const coldMs: number[] = [];
    for (let i = 0; i < COLD_TASKS; i++) {
      await new Promise((r) => setTimeout(r, 1600)); // past BROWSER_IDLE_MS: the browser and the script processes were closed
      coldMs.push(await task(cold.info, coldToken));
    }

    // operator_run: MISS (a new key each time) vs HIT (the same key), alternating, after one run that records the HIT's entry.
    const operatorTask = async (cacheKey: string): Promise<{ ms: number; message: string; result: string }> => {
      const t0 = performance.now();
      const started = await browserTool(warm.info.url, warmToken, 'browser-automation_operator_run', {
        task: `Open ${page}form, send the name Ada and report the answer`,
        cacheKey,
        agentMode: 'dom',
        blockAds: false,
        recordSession: false,
      });
      for (;;) {
        const polled = await browserTool(warm.info.url, warmToken, 'browser-automation_operator_run_continue', {
          sessionId: started.sessionId,
          collectionId: started.collectionId,
          logFileName: started.logFileName,
        });
        if (polled.status === 'completed')
          return { ms: performance.now() - t0, message: String(polled.message), result: String(polled.result) };
        if (polled.status === 'failed') throw new Error(`operator task failed: ${polled.result}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    const recorded = await operatorTask('HitBench');
    if (!/Cache MISS/.test(recorded.message) || recorded.result !== 'Answer: Thanks Ada')
      throw new Error(`operator bench: unexpected first run: ${recorded.message} ${recorded.result}`);
    const missMs: number[] = [];
    const hitMs: number[] = [];
    for (let i = 0; i < OPERATOR_TASKS; i++) {
      const miss = await operatorTask(`Miss${String(i).padStart(4, '0')}`);
      if (!/Cache MISS/.test(miss.message)) throw new Error(`operator bench: expected a MISS: ${miss.message}`);
      missMs.push(miss.ms);
      const hit = await operatorTask('HitBench');
      if (!/Cache HIT/.test(hit.message) || hit.result !== 'Answer: Thanks Ada')
        throw new Error(`operator bench: expected a HIT: ${hit.message} ${hit.result}`);
      hitMs.push(hit.ms);
    }

    const peak = treeMemMiB(warm.child.pid!);
    const sampler = setInterval(() => {
      const now = treeMemMiB(warm.child.pid!);
      peak.pss = Math.max(peak.pss, now.pss);
      peak.rss = Math.max(peak.rss, now.rss);
    }, 100);
    const t0 = performance.now();
    const results = await Promise.allSettled(
      Array.from({ length: CONCURRENT }, () => task(warm.info, warmToken, page, 100)),
    );
    const wall = performance.now() - t0;
    clearInterval(sampler);
    const ok = results.filter((r) => r.status === 'fulfilled').length;

    const w = quantiles(warmMs);
    const c = quantiles(coldMs);
    const v = quantiles(navMs);
    console.log('\n## playwright_run: start call → completed\n');
    console.log('| pool | script | tasks | p50 ms | p95 ms |');
    console.log('|---|---|---:|---:|---:|');
    console.log(
      `| warm (browser and script process kept) | trivial: \`return await page.title()\` | ${warmMs.length} | ${w.p50} | ${w.p95} |`,
    );
    console.log(`| warm | open a local page, return its title | ${navMs.length} | ${v.p50} | ${v.p95} |`);
    console.log(
      `| cold (Chromium and the script process started per task) | trivial | ${coldMs.length} | ${c.p50} | ${c.p95} |`,
    );
    console.log(`- warm p50 ${w.p50} ms (target ≤ 300 ms); cold/warm p50 ratio ${(c.p50 / w.p50).toFixed(2)}`);
    console.log(
      `- ${CONCURRENT} concurrent tasks opening the local page (BROWSER_MAX_CONTEXTS=4, polls every 100 ms): ${ok} completed, ${CONCURRENT - ok} failed, ${(ok / (wall / 1000)).toFixed(1)} tasks/s, all done in ${Math.round(wall)} ms; peak memory of the service with its Chromium and script processes: PSS ${Math.round(peak.pss)} MiB (RSS summed per process, shared pages counted in each: ${Math.round(peak.rss)} MiB)`,
    );
    for (const r of results) if (r.status === 'rejected') console.log(`  - failure: ${(r.reason as Error).message}`);
    const miss = quantiles(missMs);
    const hit = quantiles(hitMs);
    console.log(
      '\n## operator_run on a local form (dom mode, scripted model answering at once): start call → completed\n',
    );
    console.log('| cache | model calls | tasks | p50 ms | p95 ms |');
    console.log('|---|---:|---:|---:|---:|');
    console.log(`| MISS (live: fill, click, extract, done) | 4 | ${missMs.length} | ${miss.p50} | ${miss.p95} |`);
    console.log(`| HIT (replayed by locators) | 0 | ${hitMs.length} | ${hit.p50} | ${hit.p95} |`);
    console.log(
      `- HIT/MISS p50 ratio ${(hit.p50 / miss.p50).toFixed(2)} (a real model adds its own seconds per call to every MISS step; a HIT adds none)`,
    );
  } finally {
    await model.stop();
    await warm.stop();
    await cold.stop();
    site.close();
  }
}
