/**
 * The relay's allow-list (src/browser/README.md "Network") against a real service, real
 * Chromium and real scripts, by the two ways a red team got through a deny-list:
 * - a browser-level CDP session sends `Target.setRemoteLocations` with a host and port of the
 *   service's machine, and Chromium's browser process connects there by itself, around the
 *   guarded proxy: refused, naming the command, and a listener of the test hears nothing;
 * - `browser._channel.newContextForReuse({recordVideo: {dir}})` names a folder on the service's
 *   machine for playwright-core's server side: refused, naming the call, and nothing is made at
 *   that path.
 * With the relay assumed broken (assumeBreach.relayOpen, given by the test to the composition root) the relay forwards every
 * call, as if the allow-list had failed: the browser box must then hold on its own, and does —
 * Chromium reaches no listener, Redis, PostgreSQL or service port of the host, and nothing the
 * Playwright server is asked to write (video, HAR, trace, launch folders, a saved artifact)
 * lands on the host. And a script that
 * uses the usual Playwright API (locators, handles, frames, input, routes, page.request, dialogs,
 * console, cookies and storage, new pages and contexts, screenshots, PDF, downloads read as
 * streams, tracing, clock, coverage, workers, a CDP session) runs under the allow-list.
 * In front of a real browser server, the relay counts its pages and contexts from the server's
 * own messages, over every connection, and ends them past a limit.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { BrowserRelay } from '../../../src/browser/relay.js';
import { CHROMIUM_ARGS } from '../../../src/browser/pool.js';
import { createLogger } from '../../../src/config/logger.js';
import {
  createTestOrg,
  startBreachedServer,
  startTestServer,
  type TestOrg,
  type TestServer,
} from '../../helpers/server.js';
import { runScript as run } from '../../helpers/browser-tasks.js';
import { CHROMIUM, requireChromium } from '../../helpers/chromium.js';

/** A TCP listener on loopback that counts the connections it gets. */
async function listener(): Promise<{ port: number; hits: () => number; close(): void }> {
  let hits = 0;
  const server = net.createServer((s) => {
    hits += 1;
    s.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as net.AddressInfo).port, hits: () => hits, close: () => server.close() };
}

const SITE = `<!doctype html><title>Site</title><h1 id="top">Plans</h1><ul><li>Basic</li><li>Pro</li></ul>
<input id="name"><select id="size"><option>S</option><option>M</option></select><input type="checkbox" id="terms">
<input type="file" id="doc"><button onclick="document.title = 'clicked'">Go</button>
<a id="dl" href="/export.csv" download>Export</a><iframe src="/inner"></iframe>`;

function site(): Promise<{ url: string; close(): void }> {
  const server = http.createServer((req, res) => {
    if (req.url === '/export.csv')
      return res
        .writeHead(200, { 'content-type': 'text/csv', 'content-disposition': 'attachment; filename="export.csv"' })
        .end('a,b\n');
    if (req.url === '/inner')
      return res.writeHead(200, { 'content-type': 'text/html' }).end('<title>Inner</title><button>Inner</button>');
    return res.writeHead(200, { 'content-type': 'text/html' }).end(SITE);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
        close: () => {
          server.closeAllConnections();
          server.close();
        },
      }),
    ),
  );
}

/** Each step of the usual Playwright API a script may use; the script answers each step's name, or its failure. */
function usualApi(url: string): string {
  return `const SITE = ${JSON.stringify(url)};
const out = [];
const step = async (name, f) => { try { await f(); out.push(name); } catch (e) { out.push(name + ' FAILED: ' + String(e.message).split('\\n')[0]); } };
await page.goto(SITE);
await step('locators', async () => {
  await page.getByRole('button', { name: 'Go' }).click(); await page.locator('#name').fill('x'); await page.locator('#name').press('Enter');
  await page.locator('#size').selectOption('M'); await page.locator('#terms').check(); await page.locator('#terms').isChecked();
  await page.locator('h1').textContent(); await page.locator('h1').innerText(); await page.locator('li').count(); await page.locator('li').allTextContents();
  await page.locator('h1').getAttribute('id'); await page.locator('h1').boundingBox(); await page.locator('h1').hover(); await page.locator('h1').ariaSnapshot();
  await page.locator('h1').waitFor(); await page.locator('h1').highlight();
});
await step('handles', async () => {
  const h = await page.$('h1'); await h.textContent(); await h.evaluate((e) => e.tagName); await h.screenshot();
  const js = await page.evaluateHandle(() => ({ a: 1 })); await js.jsonValue(); await js.getProperty('a'); await js.dispose();
  await page.$$eval('li', (els) => els.length); await page.$eval('h1', (e) => e.id);
});
await step('evaluate', async () => { await page.evaluate(() => 1 + 1); await page.waitForFunction(() => true); await page.waitForSelector('h1'); await page.waitForLoadState('load'); });
await step('input', async () => {
  await page.keyboard.type('abc'); await page.keyboard.press('Tab'); await page.mouse.move(10, 10); await page.mouse.click(10, 10); await page.mouse.wheel(0, 100);
});
await step('frames', async () => { await page.frameLocator('iframe').locator('button').click(); await page.frames()[1].title(); });
await step('upload', async () => {
  const Bytes = (await page.screenshot()).constructor;
  await page.locator('#doc').setInputFiles({ name: 'a.txt', mimeType: 'text/plain', buffer: Bytes.from('hi') });
});
await step('network', async () => {
  await page.route('**/api', (r) => r.fulfill({ status: 200, body: '{"ok":true}', contentType: 'application/json' }));
  const [resp] = await Promise.all([page.waitForResponse('**/api'), page.evaluate(() => fetch('/api').then((r) => r.text()))]);
  await resp.text(); await resp.allHeaders(); await resp.request().allHeaders(); await page.unroute('**/api');
  page.on('request', () => {}); page.on('response', () => {}); await page.reload();
  const api = await page.request.get(SITE); await api.text(); await api.dispose();
});
await step('dialog-console', async () => {
  page.once('dialog', (d) => d.accept()); await page.evaluate(() => alert('x'));
  const [msg] = await Promise.all([page.waitForEvent('console'), page.evaluate(() => console.log('hello'))]); msg.text();
});
await step('context', async () => {
  const c = page.context(); await c.addCookies([{ name: 'a', value: 'b', url: SITE }]); await c.cookies(); await c.clearCookies(); await c.storageState();
  await c.grantPermissions(['geolocation']); await c.clearPermissions(); await c.setGeolocation({ latitude: 1, longitude: 2 });
  await c.setExtraHTTPHeaders({ 'x-a': '1' }); await c.setOffline(false); await c.addInitScript(() => { window.__x = 1; }); await c.exposeFunction('hello', () => 'hi');
  const p2 = await c.newPage(); await p2.goto(SITE); await p2.close();
  const other = await c.browser().newContext({ viewport: { width: 500, height: 400 } }); const p3 = await other.newPage(); await p3.setContent('<p>x</p>'); await other.close();
});
await step('page', async () => {
  await page.setViewportSize({ width: 800, height: 600 }); await page.emulateMedia({ colorScheme: 'dark' }); await page.screenshot({ fullPage: true }); await page.pdf();
  await page.content(); await page.title(); await page.goBack(); await page.goForward(); await page.bringToFront(); await page.addInitScript('1');
  await page.exposeBinding('b', () => 1); await page.waitForTimeout(10); await page.clock.install(); await page.clock.fastForward(1000);
});
await step('download', async () => {
  await page.goto(SITE); const [d] = await Promise.all([page.waitForEvent('download'), page.click('#dl')]);
  const s = await d.createReadStream(); for await (const _ of s) {} await d.failure();
});
// tracing.start() also writes a file of stacks on the client's side, which the runner may not;
// the protocol calls themselves go through the relay.
await step('tracing', async () => {
  const t = page.context().tracing._channel;
  await t.tracingStart({ name: 'run-1', snapshotDom: true }); await t.tracingStartChunk({ name: 'run-1' });
  await page.goto(SITE); await t.tracingStopChunk({ mode: 'discard' }); await t.tracingStop();
});
await step('coverage', async () => { await page.coverage.startJSCoverage(); await page.coverage.stopJSCoverage(); });
await step('worker', async () => {
  const [w] = await Promise.all([page.waitForEvent('worker'), page.evaluate(() => { window.w = new Worker(URL.createObjectURL(new Blob(['setInterval(() => {}, 1000)'], { type: 'text/javascript' }))); })]);
  await w.evaluate(() => 1);
});
await step('cdp', async () => {
  const s = await page.context().newCDPSession(page); await s.send('Runtime.evaluate', { expression: '1+1' }); await s.send('DOM.getDocument');
  await s.send('Network.enable'); await s.send('Emulation.setTimezoneOverride', { timezoneId: 'Europe/Paris' }); await s.detach();
});
return out;`;
}

/** The two attacks; each records what the script saw. The script then waits 3 s for Chromium to act. */
/**
 * What a script tries once every call passes the relay: Chromium's browser process sent to the
 * host's loopback (CDP remote locations), pages without the proxy to a listener, Redis,
 * PostgreSQL and the service's port, and the Playwright server asked to write on the host (a
 * video folder, a HAR file, a trace name with a path, a launch with traces and downloads
 * folders, an artifact saved to a path).
 */
function breachAttempts({
  listener,
  servicePort,
  dir,
}: {
  listener: number;
  servicePort: number;
  dir: string;
}): string {
  const at = (name: string) => JSON.stringify(path.join(dir, name));
  return `const out = {};
const browser = page.context().browser();
const attempt = async (name, fn) => { try { out[name] = String(await fn()); } catch (e) { out[name] = e.message.split('\\n')[0]; } };
const cdp = await browser.newBrowserCDPSession();
await attempt('remote', async () => { await cdp.send('Target.setRemoteLocations', { locations: [${[listener, 6379, 5432, servicePort].map((p) => `{ host: '127.0.0.1', port: ${p} }`).join(', ')}] }); return 'sent'; });
const direct = await browser.newContext({ proxy: { server: 'http://127.0.0.1:9', bypass: '*' } });
const p = await direct.newPage();
for (const [name, port] of [['listener', ${listener}], ['redis', 6379], ['postgres', 5432], ['service', ${servicePort}]])
  await attempt(name, async () => 'status ' + (await p.goto('http://127.0.0.1:' + port + '/', { timeout: 10000 })).status());
await attempt('reuse', () => browser._channel.newContextForReuse({ recordVideo: { dir: ${at('video')} } }).then(() => 'made'));
await attempt('video', () => browser._channel.newContext({ recordVideo: { dir: ${at('video2')} } }).then(() => 'made'));
await attempt('har', () => page.context()._channel.harStart({ options: { content: 'embed', harPath: ${at('x.har')}, resourcesDir: ${at('har-resources')} } }).then(() => 'started'));
await attempt('trace', async () => { await page.context().tracing._channel.tracingStart({ name: ${JSON.stringify(`../../../../../..${dir}/trace`)}, snapshots: true }); await page.context().tracing._channel.tracingStartChunk({ name: ${JSON.stringify(`../../../../../..${dir}/chunk`)} }); return 'started'; });
await attempt('launch', () => browser.browserType()._channel.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--headless'], tracesDir: ${at('traces')}, downloadsPath: ${at('downloads')}, artifactsDir: ${at('artifacts')} }).then(() => 'launched'));
await page.setContent('<a download="f.txt" href="data:text/plain,hello">get</a>');
const [download] = await Promise.all([page.waitForEvent('download'), page.click('a')]);
await attempt('saveAs', () => download._artifact._channel.saveAs({ path: ${at('saved.txt')} }).then(() => 'saved'));
await page.waitForTimeout(3000);
return out;`;
}

function attacks(port: number, dir: string): string {
  return `const out = {};
const cdp = await page.context().browser().newBrowserCDPSession();
try { await cdp.send('Target.setRemoteLocations', { locations: [{ host: '127.0.0.1', port: ${port} }] }); out.remote = 'sent'; }
catch (e) { out.remote = e.message; }
try { const made = await page.context().browser()._channel.newContextForReuse({ recordVideo: { dir: ${JSON.stringify(dir)} } }); out.reuse = 'made ' + typeof made.context; }
catch (e) { out.reuse = e.message; }
await page.waitForTimeout(3000);
return out;`;
}

describe('browser scripts against the relay allow-list', function () {
  this.timeout(180_000);

  before(function () {
    requireChromium(this);
  });

  describe('with the allow-list in force', () => {
    let server: TestServer;
    let org: TestOrg;
    let remote: Awaited<ReturnType<typeof listener>>;
    let pages: Awaited<ReturnType<typeof site>>;

    before(async () => {
      remote = await listener();
      pages = await site();
      server = await startTestServer('sqlite', { BROWSER_TASK_TIMEOUT_MS: '60000' });
      org = await createTestOrg(server);
    });
    after(async () => {
      remote?.close();
      pages?.close();
      await server?.close();
    });

    it('a script using the usual Playwright API runs every step under the allow-list', async () => {
      const done = await run(server, org, usualApi(pages.url));
      expect(done.status, done.result).to.equal('completed');
      const steps = JSON.parse(done.result) as string[];
      expect(
        steps.filter((s) => s.includes('FAILED')),
        done.result,
      ).to.deep.equal([]);
      expect(steps).to.have.length(15);
    });

    it('refuses Target.setRemoteLocations and newContextForReuse naming them; Chromium connects nowhere and no folder is made', async () => {
      const dir = path.join(os.tmpdir(), `sy-relay-video-${process.pid}-${Date.now()}`);
      const done = await run(server, org, attacks(remote.port, dir));
      expect(done.status, done.result).to.equal('completed');
      const r = JSON.parse(done.result) as Record<string, string>;
      expect(r.remote).to.match(
        /The CDP command Target\.setRemoteLocations is not available to browser scripts: the browser process would connect to any host and port itself/,
      );
      expect(r.reuse).to.match(
        /The call Browser\.newContextForReuse is not available to browser scripts: a context for reuse outlives the connection/,
      );
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(remote.hits(), 'connections the listener got from Chromium').to.equal(0);
      expect(existsSync(dir), "a folder made on the service's machine").to.equal(false);
    });
  });

  describe('with the relay open (assumeBreach.relayOpen, tests only)', () => {
    let server: TestServer;
    let org: TestOrg;
    let remote: Awaited<ReturnType<typeof listener>>;

    before(async () => {
      remote = await listener();
      server = await startBreachedServer('sqlite', { relayOpen: true }, { BROWSER_TASK_TIMEOUT_MS: '60000' });
      org = await createTestOrg(server);
    });
    after(async () => {
      remote?.close();
      await server?.close();
    });

    it("forwards every call, and still Chromium connects to nothing of the host (a listener, Redis, PostgreSQL, the service's port) and nothing is written outside the browser's private disk", async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'sy-relay-open-'));
      const servicePort = Number(new URL(server.baseUrl).port);
      try {
        const done = await run(server, org, breachAttempts({ listener: remote.port, servicePort, dir }));
        expect(done.status, done.result).to.equal('completed');
        const r = JSON.parse(done.result) as Record<string, string>;
        // The relay forwarded the calls the allow-list refuses: the browser side answered them.
        expect(r.remote, 'Target.setRemoteLocations').to.equal('sent');
        expect(r.reuse, 'newContextForReuse with a video folder').to.not.match(/not available to browser scripts/);
        // Straight connections, without the proxy: nothing of the host is in the browser's network.
        for (const name of ['listener', 'redis', 'postgres', 'service'])
          expect(r[name], `${name} without the proxy`).to.match(/ERR_CONNECTION_REFUSED|ERR_ADDRESS_UNREACHABLE/);
        await new Promise((resolve) => setTimeout(resolve, 1000));
        expect(remote.hits(), 'connections the listener got').to.equal(0);
        // Video, HAR, trace, downloads and a saved artifact named paths on the host: none is there.
        expect(readdirSync(dir), JSON.stringify(r)).to.deep.equal([]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe('in front of a real browser server', () => {
    const until = async (what: () => unknown, want: unknown) => {
      for (let i = 0; i < 100; i++) {
        try {
          expect(what()).to.deep.equal(want);
          return;
        } catch {
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      expect(what()).to.deep.equal(want);
    };

    it('counts pages and contexts over every connection (a closed context takes its pages), and past a limit tells onLimit once and ends the connections', async () => {
      const { chromium } = await import('playwright-core');
      const server = await chromium.launchServer({
        executablePath: CHROMIUM,
        headless: true,
        args: [...CHROMIUM_ARGS, '--proxy-server=http://127.0.0.1:9'],
      });
      const told: Array<[string, string]> = [];
      const relay = new BrowserRelay({
        proxyUrl: async () => 'http://127.0.0.1:9',
        transport: 'tcp',
        refuseSchemes: true,
        filter: true,
        limits: { pages: 4, contexts: 2 },
        onLimit: (t, why) => told.push([t, why]),
        log: createLogger('silent'),
      });
      try {
        const target = server.wsEndpoint();
        const { url } = await relay.endpointFor('org_a', target);
        const counts = () => relay.counts(target);
        const first = await chromium.connect(url);
        const c1 = await first.newContext();
        const [p1] = [await c1.newPage(), await c1.newPage()];
        await until(counts, { pages: 2, contexts: 1 });
        await p1!.close();
        await until(counts, { pages: 1, contexts: 1 });
        const second = await chromium.connect(url);
        const c2 = await second.newContext();
        await c2.newPage();
        await until(counts, { pages: 2, contexts: 2 });
        await c1.close();
        await until(counts, { pages: 1, contexts: 1 });
        await second.close();
        await until(counts, { pages: 0, contexts: 0 });
        const c3 = await first.newContext();
        for (let i = 0; i < 4; i++) await c3.newPage();
        expect(told).to.deep.equal([]);
        const closed = new Promise<void>((r) => first.once('disconnected', () => r()));
        await c3.newPage().catch(() => undefined);
        await closed;
        expect(told).to.deep.equal([[target, 'more than 4 pages open at once']]);
        await until(counts, { pages: 0, contexts: 0 });
        await chromium.connect(url, { timeout: 5000 }).then(
          () => expect.fail('connected to a browser past its limit'),
          (err: Error) => expect(err.message).to.match(/4008|limit|closed/i),
        );
        expect(told).to.have.length(1);
      } finally {
        await relay.close();
        await server.close();
      }
    });
  });
});
