/**
 * The limits of an organisation's browser (src/browser/README.md "Limits"), through
 * `browser-automation_playwright_run` against a real service and real Chromium: a page that
 * allocates past BROWSER_MEMORY_MB, a page that spins past BROWSER_TASK_CPU_MS, a download that
 * fills the box's private disk (BROWSER_DISK_MB), popups past BROWSER_MAX_PAGES and contexts
 * past BROWSER_MAX_OPEN_CONTEXTS each end their own task, failed with the limit named in its
 * result and log; another organisation's task running at the same time completes, and the
 * organisation's next task gets a fresh browser.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { startScript as start, finishedScript as finished, runScript as run } from '../../helpers/browser-tasks.js';
import { requireChromium } from '../../helpers/chromium.js';
import { probeIsolation } from '../../../src/containment/index.js';

describe('browser limits: memory, CPU time and disk of an organisation’s browser', function () {
  this.timeout(240_000);
  let server: TestServer;
  let a: TestOrg;
  let b: TestOrg;
  let site: http.Server;
  let siteUrl = '';
  let namespaces = false;

  before(async function () {
    requireChromium(this);
    const isolation = await probeIsolation({ mode: process.env.CODE_ISOLATION === 'strict' ? 'strict' : 'auto' });
    namespaces = isolation.report.level === 'namespaces';
    site = http.createServer((req, res) => {
      if (req.url !== '/big') {
        res.writeHead(200, { 'content-type': 'text/html' }).end('<title>Site</title><p>hello</p>');
        return;
      }
      // 100 MiB as an attachment, chunked: its size is known to nobody before it has all been written.
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-disposition': 'attachment; filename=big.bin',
      });
      const chunk = Buffer.alloc(1024 * 1024, 7);
      let sent = 0;
      const write = () => {
        while (sent < 100) {
          sent += 1;
          if (!res.write(chunk)) {
            res.once('drain', write);
            return;
          }
        }
        res.end();
      };
      res.on('close', () => (sent = 100));
      write();
    });
    await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    server = await startTestServer('sqlite', {
      NODE_ENV: 'test',
      OUTBOUND_ALLOWLIST: '127.0.0.0/8',
      BROWSER_MEMORY_MB: '1000',
      BROWSER_TASK_CPU_MS: '15000',
      BROWSER_DISK_MB: '64',
      BROWSER_MAX_PAGES: '6',
      BROWSER_MAX_OPEN_CONTEXTS: '5',
      BROWSER_TASK_TIMEOUT_MS: '120000',
    });
    a = await createTestOrg(server, 'Org A');
    b = await createTestOrg(server, 'Org B');
  });
  after(async () => {
    site?.close();
    await server?.close();
  });

  /** B's task that runs while A crosses a limit: it opens a page, waits, and must complete. */
  const slowB = () =>
    start(
      server,
      b,
      `await page.goto(${JSON.stringify(siteUrl)}); await page.waitForTimeout(3000); return await page.title();`,
    );

  it("a page that allocates past BROWSER_MEMORY_MB ends its own task, naming the limit; B's task completes; A's next task gets a fresh browser", async () => {
    await run(server, a, 'return 1'); // A's browser is up
    const pool = server.app.services.browser.pool;
    const before = await pool.pidOf(a.orgId);
    const other = await slowB();
    const bomb = await run(
      server,
      a,
      `await page.evaluate(() => { window.keep = []; for (let i = 0; i < 40; i++) { window.keep.push(new Uint8Array(48 * 1024 * 1024).fill(1)); } });
       await page.waitForTimeout(5000);
       return 'survived';`,
    );
    expect(bomb.status, bomb.result).to.equal('failed');
    expect(bomb.result, bomb.result).to.match(
      /^The task's browser was stopped: it used more than 1000 MiB of memory \(\d+ MiB; BROWSER_MEMORY_MB\)\.$/,
    );
    expect(bomb.logContent).to.match(/the browser was stopped: it used more than 1000 MiB of memory/);
    const doneB = await finished(server, b, other);
    expect(doneB, doneB.result).to.include({ status: 'completed', result: 'Site' });
    const next = await run(server, a, 'return "fresh"');
    expect(next).to.include({ status: 'completed', result: 'fresh' });
    const after = await pool.pidOf(a.orgId);
    expect(after).to.be.a('number').and.not.equal(before);
  });

  it("a page that spins past BROWSER_TASK_CPU_MS ends its own task, naming the limit; B's task completes", async () => {
    const other = await slowB();
    const spin = await run(
      server,
      a,
      'await page.evaluate(() => { const end = Date.now() + 90000; while (Date.now() < end) {} }); return "spun";',
    );
    expect(spin.status, spin.result).to.equal('failed');
    expect(spin.result).to.equal(
      "The task's browser was stopped: it used more than 15 s of CPU time for one task (BROWSER_TASK_CPU_MS).",
    );
    const doneB = await finished(server, b, other);
    expect(doneB, doneB.result).to.include({ status: 'completed', result: 'Site' });
    expect(await run(server, a, 'return "fresh"')).to.include({ status: 'completed', result: 'fresh' });
  });

  it("a download that fills the box's private disk (BROWSER_DISK_MB) ends its own task, naming the limit; B's task completes", async function () {
    if (!namespaces) this.skip(); // the private disk is a tmpfs of the operating-system layer
    const other = await slowB();
    const fill = await run(
      server,
      a,
      `await page.goto(${JSON.stringify(`${siteUrl}/big`)}).catch(() => undefined); // a download, not a page
       await page.waitForTimeout(10000);
       return 'kept';`,
    );
    expect(fill.status, fill.result).to.equal('failed');
    expect(fill.result, fill.result).to.match(
      /^The task's browser was stopped: it filled its private disk \(64 MiB of \/tmp for its profile, downloads and temporary files; BROWSER_DISK_MB\)\.$/,
    );
    const doneB = await finished(server, b, other);
    expect(doneB, doneB.result).to.include({ status: 'completed', result: 'Site' });
    expect(await run(server, a, 'return "fresh"')).to.include({ status: 'completed', result: 'fresh' });
  });

  it("popups past BROWSER_MAX_PAGES and contexts past BROWSER_MAX_OPEN_CONTEXTS end their own task, naming the limit; B's task completes", async () => {
    const other = await slowB();
    const popups = await run(
      server,
      a,
      `await page.evaluate(() => { for (let i = 0; i < 12; i++) window.open('about:blank'); });
       await page.waitForTimeout(5000);
       return 'opened';`,
    );
    expect(popups.status, popups.result).to.equal('failed');
    expect(popups.result).to.equal(
      "The task's browser was stopped: it had more than 6 pages open at once (BROWSER_MAX_PAGES).",
    );
    expect(popups.logContent).to.include('the browser was stopped: it had more than 6 pages open at once');
    const contexts = await run(
      server,
      a,
      `const browser = page.context().browser();
       for (let i = 0; i < 6; i++) await browser.newContext();
       return 'made';`,
    );
    expect(contexts.status, contexts.result).to.equal('failed');
    expect(contexts.result).to.equal(
      "The task's browser was stopped: it had more than 5 browser contexts open at once (BROWSER_MAX_OPEN_CONTEXTS).",
    );
    const doneB = await finished(server, b, other);
    expect(doneB, doneB.result).to.include({ status: 'completed', result: 'Site' });
    expect(await run(server, a, 'return "fresh"')).to.include({ status: 'completed', result: 'fresh' });
  });
});
