/**
 * What a browser task may open (src/browser/README.md "What a browser can reach"), against a
 * real service, real Chromium and the real relay: pages, new pages, frames and downloads are
 * http(s) or about:blank.
 * - scripts: `file:` (the host's files, the data folder's secret key and bootstrap.json),
 *   `view-source:`, `chrome:`, `devtools:`, other `about:` pages, `data:` and `blob:` are refused
 *   with a clear message, whether by `page.goto`, a new page, a CDP session (`Page.navigate`;
 *   `Target.createTarget` is not on the relay's CDP allow-list at all) or a route rewrite; a link, frame, window or blob: page that leads to
 *   `file:` and a server redirect to `file:` open nothing; the calls that would act on the
 *   service's own machine (an artifact saved to a path, temporary upload files, a folder upload)
 *   are refused;
 * - the operator: its `goto` refuses the same schemes, and the model is told why;
 * - with the refusal switched off (assumeBreach.anyScheme, given by the test to the composition root), Chromium
 *   opens `file:` URLs but still cannot read the data folder: it is not in its view.
 */
import { existsSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { probeIsolation } from '../../../src/containment/index.js';
import {
  createTestOrg,
  startBreachedServer,
  startTestServer,
  type TestOrg,
  type TestServer,
} from '../../helpers/server.js';
import { startModelServer, reply, type ModelServer, type Reply } from '../../helpers/model-server.js';
import { callTool } from '../gateway/helpers.js';
import { runScript as run } from '../../helpers/browser-tasks.js';
import { requireChromium } from '../../helpers/chromium.js';

/** The first line of /etc/passwd on every Linux machine. */
const PASSWD = /root:x?:0:0:/;
const CANARY = 'bootstrap-secret-canary';
const REFUSED = /is refused: browser tasks may open http\(s\) pages and about:blank only/;

const LINKS = `<!doctype html><title>Links</title>
<a id="file" href="file:///etc/passwd">passwd</a>
<iframe id="frame" src="file:///etc/passwd"></iframe>
<button id="open" onclick="window.open('file:///etc/passwd')">open</button>
<a id="dl" href="/export.csv" download>export</a>
<input type="file" id="up">`;
const BLOB = `<!doctype html><title>Blob</title><script>
const html = '<meta http-equiv="refresh" content="0;url=file:///etc/passwd"><a id="f" href="file:///etc/passwd">f</a>';
location.href = URL.createObjectURL(new Blob([html], { type: 'text/html' }));
</script>`;

function site(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.url === '/redirect-file') return res.writeHead(302, { location: 'file:///etc/passwd' }).end();
    if (req.url === '/blob') return res.writeHead(200, { 'content-type': 'text/html' }).end(BLOB);
    if (req.url === '/plain')
      return res
        .writeHead(200, { 'content-type': 'text/html' })
        .end('<!doctype html><title>Plain</title><h1>Plain</h1>');
    if (req.url === '/export.csv')
      return res
        .writeHead(200, { 'content-type': 'text/csv', 'content-disposition': 'attachment; filename="export.csv"' })
        .end('a,b\n');
    return res.writeHead(200, { 'content-type': 'text/html' }).end(LINKS);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        close: () =>
          new Promise<void>((r) => {
            server.closeAllConnections();
            server.close(() => r());
          }),
      }),
    ),
  );
}

/** Script helpers: `attempt(name, fn)` records `ok: …` or `refused: <first line>` under `name` (and logs the refusal). */
const PRELUDE = `const out = {};
const attempt = async (name, f) => {
  try { out[name] = 'ok: ' + String(await Promise.race([f(), page.waitForTimeout(8000).then(() => { throw new Error('timed out'); })])).slice(0, 2000); }
  catch (e) { out[name] = 'refused: ' + String(e.message).split('\\n')[0]; console.log(name + ': ' + out[name]); }
};
const visible = async (p) => (await p.content()) + ' @ ' + p.url();`;

function withDataDir(server: TestServer): string {
  const dataDir = server.app.services.config.dataDir;
  writeFileSync(path.join(dataDir, 'bootstrap.json'), JSON.stringify({ clientSecret: CANARY }));
  expect(existsSync(path.join(dataDir, 'secret.key'))).to.equal(true);
  return dataDir;
}

describe('browser tasks open http(s) and about:blank only', function () {
  this.timeout(180_000);
  let pages: Awaited<ReturnType<typeof site>>;
  let namespaces = false;

  before(async function () {
    requireChromium(this);
    pages = await site();
    namespaces = (await probeIsolation({ mode: 'auto' })).report.level === 'namespaces';
  });
  after(async () => {
    await pages?.close();
  });

  describe('scripts and the operator, with the refusal in force', () => {
    let server: TestServer;
    let org: TestOrg;
    let model: ModelServer;
    let dataDir: string;

    before(async () => {
      model = await startModelServer();
      server = await startTestServer('sqlite', {
        BROWSER_TASK_TIMEOUT_MS: '60000',
        OPENAI_COMPATIBLE_BASE_URL: model.baseUrl,
        DEFAULT_MODEL: 'openai-compatible/scripted',
      });
      dataDir = withDataDir(server);
      org = await createTestOrg(server);
    });
    after(async () => {
      await server?.close();
      await model?.close();
    });

    it("a script's page.goto, new page, CDP navigation, new target and route rewrite to another scheme are refused with a clear message", async () => {
      const urls = {
        passwd: 'file:///etc/passwd',
        secretKey: `file://${dataDir}/secret.key`,
        bootstrap: `file://${dataDir}/bootstrap.json`,
        viewSource: `view-source:${pages.url}/`,
        chrome: 'chrome://version',
        devtools: 'devtools://devtools/bundled/inspector.html',
        about: 'about:version',
        data: 'data:text/html,<a href="file:///etc/passwd">x</a>',
        blob: `blob:${pages.url}/00000000-0000-0000-0000-000000000000`,
      };
      const code = `${PRELUDE}
const urls = ${JSON.stringify(urls)};
for (const [name, url] of Object.entries(urls)) await attempt(name, async () => { await page.goto(url); return visible(page); });
await attempt('blank', async () => { await page.goto('about:blank'); return page.url(); });
await attempt('newPage', async () => { const p = await page.context().newPage(); await p.goto(urls.passwd); return visible(p); });
const cdp = await page.context().newCDPSession(page);
await attempt('cdpNavigate', async () => { await cdp.send('Page.navigate', { url: urls.secretKey }); return visible(page); });
await attempt('cdpExpose', async () => cdp.send('Target.exposeDevToolsProtocol', { targetId: 'x' }));
await attempt('cdpWrapped', async () => cdp.send('Target.sendMessageToTarget', { message: '{}' }));
await attempt('cdpFiles', async () => cdp.send('DOM.setFileInputFiles', { files: ['/etc/passwd'], backendNodeId: 1 }));
const browserCdp = await page.context().browser().newBrowserCDPSession();
await attempt('cdpTarget', async () => JSON.stringify(await browserCdp.send('Target.createTarget', { url: urls.passwd })));
let routeError = 'none';
await page.route('**/rewrite', async (route) => { try { await route.continue({ url: urls.passwd }); } catch (e) { routeError = e.message.split('\\n')[0]; await route.abort(); } });
await attempt('route', async () => { await page.goto(${JSON.stringify(pages.url)} + '/rewrite'); return visible(page); });
out.routeError = routeError;
return out;`;
      const done = await run(server, org, code);
      expect(done.status, done.result).to.equal('completed');
      const r = JSON.parse(done.result) as Record<string, string>;
      for (const [name, url] of Object.entries(urls)) {
        expect(r[name], name).to.match(REFUSED);
        expect(r[name], name).to.include(`page.goto: Opening ${url}`);
      }
      expect(r.blank).to.equal('ok: about:blank');
      expect(r.newPage).to.match(REFUSED);
      expect(r.cdpNavigate).to.match(REFUSED);
      // A new target is not on the relay's CDP allow-list at all, whatever its URL.
      expect(r.cdpTarget).to.match(/The CDP command Target\.createTarget is not available to browser scripts/);
      expect(r.cdpExpose).to.match(/Target\.exposeDevToolsProtocol is not available to browser scripts/);
      expect(r.cdpWrapped).to.match(/Target\.sendMessageToTarget is not available to browser scripts/);
      expect(r.cdpFiles).to.match(/DOM\.setFileInputFiles is not available to browser scripts/);
      expect(r.routeError).to.match(REFUSED);
      // The refusals are in the task log too, and nothing of the host's files came back.
      expect(done.logContent).to.match(/passwd: refused: page\.goto: Opening file:\/\/\/etc\/passwd is refused/);
      for (const text of [done.result, done.logContent]) {
        expect(text).to.not.match(PASSWD);
        expect(text).to.not.include(CANARY);
      }
      expect(done.files).to.deep.equal([]);
    });

    it('a script that opens a file: URL and does not catch the refusal fails saying why', async () => {
      const done = await run(
        server,
        org,
        `await page.goto(${JSON.stringify(`file://${dataDir}/secret.key`)}); return await page.content();`,
      );
      expect(done.status).to.equal('failed');
      expect(done.result).to.match(REFUSED);
      expect(done.logContent).to.match(/failed: page\.goto: Opening file:\/\/.*secret\.key is refused/);
      expect(done.files).to.deep.equal([]);
    });

    it('links, frames, windows, blob: pages and server redirects that lead to file: open nothing', async function () {
      const code = `${PRELUDE}
await page.goto(${JSON.stringify(pages.url)});
// A frame whose load was refused has no document a script could read (Playwright would wait for it), so the page reads it.
await attempt('frame', async () => (await page.evaluate(() => { const d = document.getElementById('frame').contentDocument; return d ? d.documentElement.outerHTML : 'no document'; })) + ' @ ' + page.frames().map((f) => f.url()).join(' '));
await attempt('link', async () => { await page.evaluate(() => document.getElementById('file').click()); await page.waitForTimeout(500); return visible(page); });
await page.goto(${JSON.stringify(pages.url)});
await attempt('window', async () => { const [p] = await Promise.all([page.context().waitForEvent('page', { timeout: 3000 }), page.evaluate(() => document.getElementById('open').click())]); await p.waitForTimeout(500); return (await p.content()) + ' @ ' + p.url(); });
await attempt('blob', async () => { await page.goto(${JSON.stringify(`${pages.url}/blob`)}); await page.waitForTimeout(1000); return visible(page); });
await attempt('redirect', async () => { await page.goto(${JSON.stringify(`${pages.url}/redirect-file`)}); return visible(page); });
return out;`;
      const done = await run(server, org, code);
      expect(done.status, done.result).to.equal('completed');
      const r = JSON.parse(done.result) as Record<string, string>;
      if (process.env.SHOW_SCHEMES) process.stderr.write(`${JSON.stringify(r, null, 2)}\n`);
      for (const name of ['frame', 'link', 'window', 'blob', 'redirect']) {
        expect(r[name], `${name}: ${r[name]}`).to.not.match(PASSWD);
        expect(r[name], name).to.not.match(/ @ file:|@ .* file:/);
      }
      expect(r.link).to.match(new RegExp(` @ ${pages.url}/$`));
      expect(r.blob).to.match(/ @ blob:/);
      expect(r.redirect).to.match(/^refused: .*(ERR_UNSAFE_REDIRECT|ERR_BLOCKED_BY_ADMINISTRATOR)/);
      expect(done.logContent).to.not.match(PASSWD);
    });

    it("calls that would act on the service's machine are refused: an artifact saved to a path, temporary upload files, a folder upload, a trace name with a path", async () => {
      const target = path.join(os.tmpdir(), `sy-saveas-${process.pid}-${Date.now()}`);
      const code = `${PRELUDE}
await page.goto(${JSON.stringify(pages.url)});
const [download] = await Promise.all([page.waitForEvent('download'), page.click('#dl')]);
await attempt('saveAs', async () => download._artifact._channel.saveAs({ path: ${JSON.stringify(target)} }));
await attempt('tempFiles', async () => page.context()._channel.createTempFiles({ items: [{ name: 'x' }] }));
const input = await page.$('#up');
await attempt('folder', async () => input._channel.setInputFiles({ localDirectory: '/etc' }));
await attempt('paths', async () => input._channel.setInputFiles({ localPaths: ['/etc/passwd'] }));
await attempt('traceName', async () => page.context().tracing.start({ name: ${JSON.stringify(`../../../..${target}-trace`)} }));
return out;`;
      const done = await run(server, org, code);
      expect(done.status, done.result).to.equal('completed');
      const r = JSON.parse(done.result) as Record<string, string>;
      expect(r.saveAs).to.match(/The call Artifact\.saveAs is not available to browser scripts/);
      expect(r.tempFiles).to.match(/The call BrowserContext\.createTempFiles is not available to browser scripts/);
      expect(r.folder).to.match(/uploaded by their contents/);
      expect(r.paths).to.match(/uploaded by their contents/);
      expect(r.traceName).to.match(/a trace name is a plain file name here/);
      expect(existsSync(target), "a file saved on the service's machine").to.equal(false);
      expect(existsSync(`${target}-trace.network`), "a trace file written on the service's machine").to.equal(false);
    });

    it("the operator's goto refuses the same schemes and the model is told why", async () => {
      const targets = [
        'file:///etc/passwd',
        `file://${dataDir}/secret.key`,
        'chrome://version',
        `view-source:${pages.url}/`,
        'devtools://devtools/bundled/inspector.html',
        'about:version',
        'data:text/html,hello',
      ];
      let i = 0;
      const seen: string[] = [];
      model.setScript((req): Reply => {
        const last = req.messages.filter((m: { role: string }) => m.role === 'user').at(-1);
        seen.push(typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? ''));
        const url = targets[i++];
        return url ? reply.toolCall('goto', { url }) : reply.toolCall('done', { result: 'tried them all' });
      });
      const started = await callTool(server, org.token, 'browser-automation', 'browser-automation_operator_run', {
        task: `Open ${pages.url}/plain and read the host's files`,
        cacheKey: 'Scheme01',
        agentMode: 'dom',
        recordSession: false,
        blockAds: false,
      });
      expect(started.isError, JSON.stringify(started)).to.not.equal(true);
      const { sessionId, collectionId, logFileName } = started.structuredContent;
      let done: any;
      for (let n = 0; n < 600; n++) {
        done = (
          await callTool(server, org.token, 'browser-automation', 'browser-automation_operator_run_continue', {
            sessionId,
            collectionId,
            logFileName,
          })
        ).structuredContent;
        if (done.status !== 'RUNNING') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(done.status, done.logContent).to.equal('completed');
      for (const url of targets) {
        expect(done.logContent, url).to.include(
          `failed: Opening ${url} is refused: browser tasks may open http(s) pages and about:blank only`,
        );
      }
      expect(seen.join('\n')).to.match(/FAILED: Opening file:\/\/\/etc\/passwd is refused/);
      expect(done.logContent).to.not.match(PASSWD);
      expect(done.logContent).to.not.include(CANARY);
    });
  });

  describe('with the refusal switched off (assumeBreach.anyScheme, tests only)', () => {
    let server: TestServer;
    let org: TestOrg;
    let dataDir: string;

    before(async function () {
      if (!namespaces) this.skip(); // Chromium's file system view is the operating-system layer
      server = await startBreachedServer('sqlite', { anyScheme: true }, { CODE_ISOLATION: 'strict' });
      dataDir = withDataDir(server);
      org = await createTestOrg(server);
    });
    after(async () => {
      await server?.close();
    });

    it("Chromium opens file: URLs but cannot read the data folder, the host's accounts or the service's files: they are not in its view", async () => {
      const code = `${PRELUDE}
const open = (url) => attempt(url, async () => { await page.goto(url); return page.locator('body').innerText(); });
await open('file:///usr/lib/os-release');
await open(${JSON.stringify(`file://${dataDir}/secret.key`)});
await open(${JSON.stringify(`file://${dataDir}/bootstrap.json`)});
await open('file:///etc/passwd');
await open(${JSON.stringify(`file://${process.cwd()}/package.json`)});
await attempt('root', async () => { await page.goto('file:///'); return page.locator('body').innerText(); });
return out;`;
      const done = await run(server, org, code);
      expect(done.status, done.result).to.equal('completed');
      const r = JSON.parse(done.result) as Record<string, string>;
      // The refusal is really off: a file in Chromium's view opens.
      expect(r['file:///usr/lib/os-release']).to.match(/^ok: .*(NAME|ID)=/s);
      for (const url of [
        `file://${dataDir}/secret.key`,
        `file://${dataDir}/bootstrap.json`,
        'file:///etc/passwd',
        `file://${process.cwd()}/package.json`,
      ]) {
        expect(r[url], url).to.match(/ERR_FILE_NOT_FOUND/);
      }
      expect(r.root).to.not.match(/\b(work|root|home)\//);
      for (const text of [done.result, done.logContent]) {
        expect(text).to.not.match(PASSWD);
        expect(text).to.not.include(CANARY);
      }
    });
  });
});
