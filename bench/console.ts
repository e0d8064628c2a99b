/**
 * Web console benchmark, not a test: the compiled service as `npm start` runs it, in real Chromium.
 * - First load: the JavaScript a fresh browser downloads to show /console (the sign-in page), as
 *   sent (gzip) and uncompressed; the budget is 150 KB gzipped. The lazily loaded chunks (the
 *   chart) are listed apart.
 * - First meaningful render, each in a fresh browser context (nothing cached): the sign-in page
 *   (navigation start to its heading), and the overview of a signed-in session (navigation
 *   start to the runs section's chart drawn: the API's answers and the lazily loaded chart
 *   module); the budget is 1 s. Baseline in the same run: a static page with one heading from a
 *   bare node:http server (navigation start to its heading).
 * `BENCH_CONSOLE_LOADS` (default 10) loads of each.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { chromium, type Browser } from 'playwright-core';
import { CHROMIUM_ARGS } from '../src/browser/index.js';
import { buildDist, startCompiled } from './lib.js';

const LOADS = Number(process.env.BENCH_CONSOLE_LOADS ?? 10);
const CHROMIUM = process.env.BROWSER_EXECUTABLE || '/usr/bin/chromium';
const KB = 1000;
/** The overview's runs section once its chart is drawn (or its empty state is shown). */
const OVERVIEW_DRAWN = 'section[aria-labelledby="ov-runs"] canvas, section[aria-labelledby="ov-runs"] .empty';

interface Bootstrap {
  clientId: string;
  clientSecret: string;
  orgId: string;
}

/** Records, before any page script runs, when the first element matching `selector` is in the document. */
export const markWhen = (selector: string) => `
  new MutationObserver((_, obs) => {
    if (document.querySelector(${JSON.stringify(selector)})) {
      window.__rendered = performance.now();
      obs.disconnect();
    }
  }).observe(document, { childList: true, subtree: true });
`;

export async function timeTo(
  browser: Browser,
  url: string,
  selector: string,
  init: string[] = [],
): Promise<{ ms: number; scripts: { url: string; bytes: number }[] }> {
  const context = await browser.newContext();
  for (const script of [markWhen(selector), ...init]) await context.addInitScript(script);
  const page = await context.newPage();
  const scripts: { url: string; bytes: number }[] = [];
  page.on('requestfinished', async (req) => {
    if (req.resourceType() !== 'script') return;
    const sizes = await req.sizes();
    scripts.push({ url: req.url(), bytes: sizes.responseBodySize });
  });
  await page.goto(url);
  await page.waitForSelector(selector);
  const ms = (await page.evaluate('window.__rendered')) as number;
  await context.close();
  return { ms, scripts };
}

const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (xs: number[]) => `p50 ${p50(xs).toFixed(0)} ms, max ${Math.max(...xs).toFixed(0)} ms`;

async function baselineServer(): Promise<http.Server> {
  const html = '<!doctype html><html lang="en"><title>Baseline</title><h1>Baseline</h1></html>';
  const server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(html));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}

export async function run(): Promise<void> {
  buildDist();
  const service = await startCompiled();
  const baseline = await baselineServer();
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  try {
    const base = service.info.url;
    const b = service.info.bootstrap as unknown as Bootstrap;
    const tokenRes = await fetch(`${base}/oauth/token`, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: b.clientId,
        client_secret: b.clientSecret,
        scope: `org:${b.orgId}`,
      }),
    });
    const token = ((await tokenRes.json()) as { access_token: string }).access_token;
    // One run of the demo workflow, so the overview draws its chart (the lazily loaded chunk).
    const demo = await fetch(`${base}/ext/triggers/${service.info.bootstrap.demo.apiTriggerId}`, {
      method: 'POST',
      headers: { 'x-api-key': service.info.bootstrap.apiKey, 'x-api-wait': 'true', 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench' }),
    });
    await demo.arrayBuffer();
    const session = JSON.stringify({ token, expiresAt: Date.now() + 3_000_000, orgId: b.orgId, clientId: b.clientId });
    const signedIn = `sessionStorage.setItem('switchyard.console.session', ${JSON.stringify(session)});`;

    // First load: the scripts of the sign-in page, and those the overview adds (the chart).
    const first = await timeTo(browser, `${base}/console/`, 'h1');
    const overview = await timeTo(browser, `${base}/console/`, OVERVIEW_DRAWN, [signedIn]);
    const sizes = async (urls: string[]) =>
      Promise.all(
        urls.map(async (u) => {
          const body = Buffer.from(await (await fetch(u)).arrayBuffer());
          return { url: new URL(u).pathname, raw: body.length, gzip: gzipSync(body, { level: 9 }).length };
        }),
      );
    const firstJs = await sizes(first.scripts.map((s) => s.url));
    const lazyJs = await sizes(
      overview.scripts.map((s) => s.url).filter((u) => !first.scripts.some((f) => f.url === u)),
    );
    const sent = first.scripts.reduce((a, s) => a + s.bytes, 0);
    const gz = firstJs.reduce((a, s) => a + s.gzip, 0);
    console.log('\nConsole (npm run bench console), Chromium, compiled service on loopback');
    console.log(
      `  first-load JavaScript: ${firstJs.length} file(s), ${(gz / KB).toFixed(1)} KB gzipped (budget 150 KB), ` +
        `${(sent / KB).toFixed(1)} KB as sent, ${(firstJs.reduce((a, s) => a + s.raw, 0) / KB).toFixed(1)} KB uncompressed`,
    );
    for (const s of lazyJs) console.log(`  loaded later: ${s.url} ${(s.gzip / KB).toFixed(1)} KB gzipped`);

    const times = { baseline: [] as number[], signIn: [] as number[], overview: [] as number[] };
    for (let i = 0; i < LOADS; i++) {
      times.baseline.push(
        (await timeTo(browser, `http://127.0.0.1:${(baseline.address() as AddressInfo).port}/`, 'h1')).ms,
      );
      times.signIn.push((await timeTo(browser, `${base}/console/`, 'h1')).ms);
      times.overview.push((await timeTo(browser, `${base}/console/`, OVERVIEW_DRAWN, [signedIn])).ms);
    }
    console.log(`  first render, ${LOADS} fresh contexts each (budget 1000 ms):`);
    console.log(`    baseline (static page, bare node:http): ${fmt(times.baseline)}`);
    console.log(`    sign-in page:                           ${fmt(times.signIn)}`);
    console.log(`    overview with its first API answers:    ${fmt(times.overview)}`);
  } finally {
    await browser.close();
    baseline.close();
    await service.stop();
  }
}
