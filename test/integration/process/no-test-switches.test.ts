/**
 * No environment variable weakens containment (README.md "Security model"): the built service,
 * started as `npm start` starts it, with NODE_ENV=test and SANDBOX_TEST_BREACH=1,
 * BROWSER_TEST_NO_SCHEME_REFUSAL=1, BROWSER_TEST_RELAY_OPEN=1 and VALIDATE_RESPONSES=true in its
 * environment, runs exactly as without them:
 * - a code step sees no `process` of its runner, and the runner was started with the breach mode
 *   `off` and its realm unable to compile strings (its command line, read through /proc);
 * - a browser script sees no `process` either, `file:` URLs are refused, and the relay refuses a
 *   CDP command outside its allow-list, naming it.
 * Only test code turns a layer off, through the composition root (src/app.ts AssumedBreach).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { expect } from 'chai';
import { processTree } from '../../../src/containment/index.js';
import { call, freePort } from '../../helpers/server.js';
import { bootstrapToken, startServer, waitReady } from '../../helpers/process.js';
import { requireChromium } from '../../helpers/chromium.js';

const SWITCHES = {
  NODE_ENV: 'test',
  SANDBOX_TEST_BREACH: '1',
  BROWSER_TEST_NO_SCHEME_REFUSAL: '1',
  BROWSER_TEST_RELAY_OPEN: '1',
  VALIDATE_RESPONSES: 'true',
};

const STEP = `return {
  process: typeof process,
  viaThis: typeof globalThis.process,
  require: typeof require,
};`;

const SCRIPT = `const out = { process: typeof process, viaThis: typeof globalThis.process };
try { await page.goto('file:///etc/hostname'); out.file = 'opened: ' + (await page.content()).slice(0, 200); }
catch (e) { out.file = String(e.message).split('\\n')[0]; }
const cdp = await page.context().browser().newBrowserCDPSession();
try { await cdp.send('Target.setRemoteLocations', { locations: [{ host: '127.0.0.1', port: 9 }] }); out.remote = 'sent'; }
catch (e) { out.remote = String(e.message).split('\\n')[0]; }
return out;`;

/** The start options (one JSON argument) of each runner program below `pid`, by program file. */
function runnerStarts(pids: number[]): { program: string; argv: string[]; options: Record<string, unknown> }[] {
  const found: { program: string; argv: string[]; options: Record<string, unknown> }[] = [];
  for (const pid of pids) {
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    } catch {
      continue;
    }
    // The program's own process: its file, then its one JSON argument (a launcher such as bwrap
    // names the file among its binds too).
    const at = argv.findIndex((a, i) => /(^|\/)(runner|script-runner)\.cjs$/.test(a) && argv[i + 1]?.startsWith('{'));
    if (at < 0) continue;
    found.push({
      program: path.basename(argv[at]!),
      argv,
      options: JSON.parse(argv[at + 1] ?? '{}') as Record<string, unknown>,
    });
  }
  return found;
}

/** tools/call on the gateway's browser-automation server; the JSON-RPC result. */
async function browserTool(base: string, token: string, name: string, args: unknown): Promise<any> {
  const res = await call(base, 'POST', '/mcp/browser-automation', {
    token,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    raw: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
  });
  expect(res.status, res.text).to.equal(200);
  return res.body.result ?? res.body.error;
}

describe('a production start with the test switch names in its environment', function () {
  this.timeout(180_000);
  let dataDir: string;
  let base: string;
  let service: ChildProcess;
  let token: string;
  let b: any;

  before(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-switches-'));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    service = startServer(dataDir, port, {
      ...SWITCHES,
      CODE_ISOLATION: process.env.CODE_ISOLATION ?? 'auto',
      BROWSER_TASK_TIMEOUT_MS: '60000',
    });
    await waitReady(base);
    ({ token, b } = await bootstrapToken(base, dataDir));
  });
  after(() => {
    service?.kill('SIGKILL');
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("code steps get no runner's process and the runner starts with every layer", async () => {
    const wf = await call(base, 'POST', '/v1/workflows', {
      token,
      body: { name: 'Switches', steps: [{ type: 'code', name: 'look', code: STEP }] },
    });
    expect(wf.status, wf.text).to.equal(201);
    const trg = await call(base, 'POST', '/v1/triggers', {
      token,
      body: { automationId: wf.body.automationId, kind: 'api' },
    });
    expect(trg.status, trg.text).to.equal(201);
    const run = await call(base, 'POST', `/ext/triggers/${trg.body.triggerId}`, {
      headers: { 'X-API-KEY': b.apiKey, 'x-api-wait': 'true' },
      body: {},
    });
    expect(run.status, run.text).to.equal(200);
    const step = run.body.results.find((r: any) => r.stepIndex === 0);
    expect(step.exitCode, run.text).to.equal(0);
    expect(JSON.parse(step.result.result)).to.deep.equal({
      process: 'undefined',
      viaThis: 'undefined',
      require: 'undefined',
    });
    const runners = runnerStarts(await processTree(service.pid!)).filter((r) => r.program === 'runner.cjs');
    expect(runners, 'code runners below the service').to.not.be.empty;
    for (const r of runners) {
      expect(r.options.breach, r.argv.join(' ')).to.equal('off');
      expect(r.argv).to.include('--disallow-code-generation-from-strings');
      expect(r.argv).to.include('--permission');
    }
  });

  it("browser scripts get no runner's process, file: URLs are refused and the relay keeps its allow-list", async function () {
    requireChromium(this);
    const started = await browserTool(base, token, 'browser-automation_playwright_run', {
      code: SCRIPT,
      buildId: 'bld_switches',
    });
    expect(started.isError, JSON.stringify(started)).to.not.equal(true);
    const sessionId = started.structuredContent.sessionId as string;
    let done: any;
    const until = Date.now() + 90_000;
    for (;;) {
      done = (
        await browserTool(base, token, 'browser-automation_playwright_run_continue', {
          sessionId,
        })
      ).structuredContent;
      if (done?.status !== 'RUNNING') break;
      if (Date.now() > until) throw new Error(`task ${sessionId} still RUNNING`);
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(done.status, JSON.stringify(done)).to.equal('completed');
    const r = JSON.parse(done.result) as Record<string, string>;
    expect([r.process, r.viaThis]).to.deep.equal(['undefined', 'undefined']);
    expect(r.file).to.match(/is refused: browser tasks may open http\(s\) pages and about:blank only/);
    expect(r.remote).to.match(/The CDP command Target\.setRemoteLocations is not available to browser scripts/);
    const scripts = runnerStarts(await processTree(service.pid!)).filter((s) => s.program === 'script-runner.cjs');
    expect(scripts, 'script runners below the service').to.not.be.empty;
    for (const s of scripts) expect(s.options.breach, s.argv.join(' ')).to.equal('off');
  });
});
