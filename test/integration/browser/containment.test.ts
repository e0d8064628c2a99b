/**
 * browser-automation_playwright_run against a real service, real Chromium and the real relay,
 * each layer tested as if the one inside it had been broken (src/browser/README.md "Script
 * isolation", "Pool"):
 * - assume breach: assumeBreach.runnerProcess (given by the test to the composition root) hands the contained script runner's
 *   real `process` to the script, which then tries the network (Redis, PostgreSQL, the service's
 *   port, a listener of the test, the PostgreSQL Unix socket), signals (the service, a sleeper),
 *   the service's secret key, writes outside its tmpfs, children, root and memory past its
 *   limit; every attempt fails, and the test checks from outside (through /proc) that the runner
 *   is in its own namespaces, under its own user, with a view that holds none of the service's
 *   files;
 * - across organisations: what organisation B leaves in its runner's realm or process, or in its
 *   browser, is never visible to organisation A; they never share a runner or a browser;
 * - Chromium runs under a user of its own, in its own PID namespace, with a file system view
 *   without the data folder, the service's files or home folders, and the URL blocklist policy;
 * - without the operating-system layer (CODE_ISOLATION=process) scripts still run, the runner and
 *   Chromium under users of their own when the service is root.
 * The operating-system layer must be in force for most of this (CI runs with
 * CODE_ISOLATION=strict); on a machine without it those tests are skipped and say why.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { expect } from 'chai';
import { probeIsolation, processTree, uidOf } from '../../../src/containment/index.js';
import { BrowserBox } from '../../../src/browser/box.js';
import { ChromiumBox } from '../../../src/browser/contain.js';
import { CHROMIUM_ARGS } from '../../../src/browser/pool.js';
import { createLogger } from '../../../src/config/logger.js';
import {
  call,
  createTestOrg,
  startBreachedServer,
  startTestServer,
  type TestOrg,
  type TestServer,
} from '../../helpers/server.js';
import { startScript as start, finishedScript as finished, runScript as run } from '../../helpers/browser-tasks.js';
import { breachAttempts, MUST_FAIL, WORKED } from '../../helpers/breach.js';
import {
  CHROMIUM,
  chromiumProcesses,
  environOf,
  hostFoldersInView,
  requireChromium,
  scriptRunners,
  usersOf,
} from '../../helpers/chromium.js';

const PG_SOCKET = '/var/run/postgresql/.s.PGSQL.5432';
const root = process.getuid?.() === 0;

describe('browser scripts against a real service: assume breach, across organisations, Chromium contained', function () {
  this.timeout(180_000);
  let namespaces = false;
  let why = '';

  before(async function () {
    requireChromium(this);
    const isolation = await probeIsolation({ mode: process.env.CODE_ISOLATION === 'strict' ? 'strict' : 'auto' });
    namespaces = isolation.report.level === 'namespaces';
    why = isolation.report.missing.join('; ');
  });

  describe('with the language layer assumed broken (assumeBreach.runnerProcess) and every other layer', () => {
    let server: TestServer;
    let a: TestOrg;
    let b: TestOrg;
    let listener: net.Server;
    let listenerHits = 0;
    let sleeper: ChildProcess;
    let site: http.Server;
    let siteUrl = '';

    before(async function () {
      if (!namespaces) this.skip(); // the operating-system layer is not in force here: see `why`
      listener = net.createServer((s) => {
        listenerHits += 1;
        s.destroy();
      });
      await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
      site = http.createServer((_req, res) =>
        res.writeHead(200, { 'content-type': 'text/html' }).end('<title>Site</title><p>hello</p>'),
      );
      await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
      siteUrl = `http://127.0.0.1:${(site.address() as net.AddressInfo).port}`;
      sleeper = spawn('sleep', ['300'], { stdio: 'ignore' });
      server = await startBreachedServer(
        'sqlite',
        { runnerProcess: true },
        { CODE_ISOLATION: 'strict', BROWSER_TASK_TIMEOUT_MS: '60000' },
      );
      // The data folder holds what a first start writes there: the secret key and bootstrap.json (the first organisation's client secret).
      writeFileSync(
        path.join(server.app.services.config.dataDir, 'bootstrap.json'),
        JSON.stringify({ clientSecret: 'bootstrap-secret-canary' }),
      );
      a = await createTestOrg(server, 'Org A');
      b = await createTestOrg(server, 'Org B');
    });
    after(async () => {
      sleeper?.kill('SIGKILL');
      listener?.close();
      site?.close();
      await server?.close();
    });

    it('the script reaches no network, socket, process, secret or file of the host, cannot write, spawn or become root; from outside the runner is contained', async () => {
      const dataDir = server.app.services.config.dataDir;
      expect(existsSync(path.join(dataDir, 'secret.key')), 'the service has a secret key file').to.equal(true);
      const inputs = {
        servicePort: Number(new URL(server.baseUrl).port),
        listenerPort: (listener.address() as net.AddressInfo).port,
        pgSocket: PG_SOCKET,
        servicePid: process.pid,
        sleeperPid: sleeper.pid,
        dataDir,
      };
      const done = await run(server, a, breachAttempts(JSON.stringify(inputs)));
      expect(done.status, done.result).to.equal('completed');
      const r = JSON.parse(done.result) as Record<string, unknown>;
      if (process.env.SHOW_BREACH) process.stderr.write(`${done.result}\n`);
      for (const what of MUST_FAIL) expect(WORKED, `${what}: ${done.result}`).to.not.include(r[what]);
      expect(listenerHits, 'connections the test listener received').to.equal(0);
      // The signals failed for want of the processes (PID namespace), not by chance.
      expect(r.killService).to.equal('ESRCH');
      expect(r.killSleeper).to.equal('ESRCH');
      expect(sleeper.exitCode, 'the sleeper is alive').to.equal(null);
      expect(r.uid).to.be.a('number').and.not.equal(0);
      expect(r.pid, "the runner is the only process of its PID namespace but bubblewrap's").to.be.at.most(3);
      expect(r.env).to.deep.equal([]);
      expect(existsSync(path.join(dataDir, 'escaped'))).to.equal(false);
      expect(done.logContent).to.not.include('bootstrap-secret-canary');

      // From outside: the runner's own root, user and environment.
      const [runner] = await scriptRunners();
      expect(runner, 'a script runner process').to.be.a('number');
      const view = `/proc/${runner}/root`;
      expect(existsSync(`${view}${dataDir}`), "the data folder in the runner's view").to.equal(false);
      expect(existsSync(`${view}/var/run/postgresql`), "PostgreSQL's socket folder in the runner's view").to.equal(
        false,
      );
      expect(existsSync(`${view}${process.cwd()}/package.json`), "the service's files in the runner's view").to.equal(
        false,
      );
      expect(existsSync(`${view}/etc/passwd`)).to.equal(false);
      expect(readdirSync(`${view}/run/relay`), "the organisation's relay socket").to.deep.equal(['relay.sock']);
      if (root) expect(await uidOf(runner!)).to.be.at.least(1_900_000_000);
      expect(environOf(runner!).filter((k) => !k.startsWith('NODE_CHANNEL_'))).to.deep.equal([]);
      // The service answered every poll (it is alive) and still does.
      expect((await call(server.baseUrl, 'GET', '/healthz')).status).to.equal(200);
    });

    it("memory past the runner's limit fails the task with a memory reason; another organisation's task and the next task are unharmed", async () => {
      const slow = await start(
        server,
        b,
        `await page.goto(${JSON.stringify(siteUrl)}); await page.waitForTimeout(2000); return await page.title();`,
      );
      const rssBefore = process.memoryUsage().rss;
      const bomb = await run(
        server,
        a,
        'const keep = []; for (let i = 0; i < 96; i++) keep.push(new Uint8Array(64 * 1024 * 1024).fill(1)); return "survived " + keep.length;',
      );
      expect(bomb.status).to.equal('failed');
      expect(bomb.result).to.match(
        /^The script was stopped: its process used more than 1024 MiB of memory \(\d+ MiB resident\)\.$/,
      );
      expect(process.memoryUsage().rss - rssBefore, "the service's own memory").to.be.below(256 * 1024 * 1024);
      expect(sleeper.exitCode).to.equal(null);
      expect(await finished(server, b, slow)).to.include({ status: 'completed', result: 'Site' });
      expect(await run(server, a, 'return "still here"')).to.include({ status: 'completed', result: 'still here' });
    });

    it("organisation B's leftovers in its runner's process and realm, and in its browser, are invisible to organisation A", async () => {
      // B hooks its runner's process to capture what comes next, leaves markers, and keeps a page open for a while.
      const plant = `process.leftover = 'B'; globalThis.leftover = 'B'; Object.prototype.leftoverB = 'B';
        const seen = process.__seen || (process.__seen = []);
        const send = process.send; process.send = function (m, ...rest) { try { seen.push(JSON.stringify(m)); } catch {} return send.call(this, m, ...rest); };
        await page.goto(${JSON.stringify(`${siteUrl}/?org=B`)});
        await page.evaluate(() => localStorage.setItem('who', 'B'));
        await page.context().addCookies([{ name: 'who', value: 'B', url: ${JSON.stringify(siteUrl)} }]);
        await page.waitForTimeout(3000);
        return process.getuid();`;
      const planted = await start(server, b, plant);
      await new Promise((r) => setTimeout(r, 1500)); // B's page is open
      const look = `const cdp = await page.context().browser().newBrowserCDPSession();
        const { targetInfos } = await cdp.send('Target.getTargets');
        await page.goto(${JSON.stringify(siteUrl)});
        return {
          leftover: process.leftover ?? null, global: typeof leftover, proto: ({}).leftoverB ?? null, hooked: process.__seen !== undefined,
          targets: targetInfos.map((t) => t.url).filter((u) => u.includes('org=B')),
          contexts: page.context().browser().contexts().length,
          cookies: (await page.context().cookies()).length, storage: await page.evaluate(() => localStorage.getItem('who')),
          uid: process.getuid(),
        };`;
      const seenByA = await run(server, a, look);
      expect(seenByA.status, seenByA.result).to.equal('completed');
      const r = JSON.parse(seenByA.result);
      expect(r).to.include({
        leftover: null,
        global: 'undefined',
        proto: null,
        hooked: false,
        cookies: 0,
        storage: null,
      });
      expect(r.targets, "B's page seen from A's browser").to.deep.equal([]);
      const doneB = await finished(server, b, planted);
      expect(doneB.status, doneB.result).to.equal('completed');
      expect(Number(doneB.result), 'A and B ran under different users (different runners)').to.not.equal(r.uid);
      // B's next task runs on its own runner again, which still holds what B left there.
      const again = await run(server, b, 'return [process.leftover, process.getuid()].join(",")');
      expect(again.result).to.equal(`B,${doneB.result}`);

      // Each organisation has its own Chromium, under a user of its own, in its own PID namespace.
      const pool = server.app.services.browser.pool;
      const [pa, pb] = [await pool.pidOf(a.orgId), await pool.pidOf(b.orgId)];
      expect(pa).to.be.a('number');
      expect(pb).to.be.a('number');
      const [ua, ub] = [await usersOf(await chromiumProcesses(pa!)), await usersOf(await chromiumProcesses(pb!))];
      expect(ua).to.have.length(1);
      expect(ub).to.have.length(1);
      expect(ua[0]).to.not.equal(ub[0]);
      if (root) expect(Math.min(ua[0]!, ub[0]!)).to.be.at.least(1_900_000_000);
    });

    it("two organisations' tasks at once never share a download folder: each browser keeps its downloads on a private disk of its own", async () => {
      // Each task downloads a file of its own and keeps its context (and so the download) while the test looks.
      const hold = (
        who: string,
      ) => `await page.setContent('<a download="${who}.txt" href="data:text/plain,from-${who}">get</a>');
        const [d] = await Promise.all([page.waitForEvent('download'), page.click('a')]);
        if (await d.failure()) throw new Error('download failed');
        await page.waitForTimeout(4000);
        return 'held';`;
      const [ta, tb] = [await start(server, a, hold('A')), await start(server, b, hold('B'))];
      const pool = server.app.services.browser.pool;
      const downloadsOf = async (orgId: string) => {
        for (let i = 0; i < 100; i++) {
          const pid = await pool.pidOf(orgId);
          const inside = pid === undefined ? undefined : (await processTree(pid))[2];
          const dir = inside === undefined ? '' : `/proc/${inside}/root/tmp/downloads`;
          const files = dir && existsSync(dir) ? readdirSync(dir) : [];
          if (files.length > 0)
            return { dir, dev: statSync(dir).dev, contents: files.map((f) => readFileSync(path.join(dir, f), 'utf8')) };
          await new Promise((r) => setTimeout(r, 50));
        }
        throw new Error(`no download in the browser of ${orgId}`);
      };
      const [da, db] = [await downloadsOf(a.orgId), await downloadsOf(b.orgId)];
      expect(da.dev, 'the two download folders are on different file systems').to.not.equal(db.dev);
      expect(da.contents).to.deep.equal(['from-A']);
      expect(db.contents).to.deep.equal(['from-B']);
      expect((await finished(server, a, ta)).status).to.equal('completed');
      expect((await finished(server, b, tb)).status).to.equal('completed');
    });

    it("Chromium's view holds no data folder, service files or home folders; its managed policy blocks file: and chrome: pages", async () => {
      const dataDir = server.app.services.config.dataDir;
      await run(server, a, 'return 1'); // the organisation's browser is up
      const pid = await server.app.services.browser.pool.pidOf(a.orgId);
      const [browser] = await chromiumProcesses(pid!);
      expect(browser, 'a Chromium process').to.be.a('number');
      const view = `/proc/${browser}/root`;
      expect(existsSync(`${view}${dataDir}`)).to.equal(false);
      expect(existsSync(`${view}${process.cwd()}/package.json`), "the service's files").to.equal(false);
      expect(hostFoldersInView(view)).to.deep.equal([]);
      expect(existsSync(`${view}/usr/share/fonts`) || existsSync(`${view}/etc/fonts`)).to.equal(true);
      const policy = JSON.parse(readFileSync(`${view}/etc/chromium/policies/managed/switchyard.json`, 'utf8')) as {
        URLBlocklist: string[];
      };
      expect(policy.URLBlocklist).to.include.members(['file://*', 'chrome://*', 'devtools://*', 'view-source:*']);
      // Its own PID namespace: it sees only its own processes.
      const seen = readdirSync(`${view}/proc`)
        .filter((d) => /^\d+$/.test(d))
        .map(Number);
      expect(Math.max(...seen)).to.be.below(1000);
      if (root) expect(await uidOf(browser!)).to.be.at.least(1_900_000_000);
    });
  });

  it("Chromium's managed policy takes effect: a file: page inside its own view is blocked by it, and opens without it", async function () {
    if (!namespaces) this.skip(); // the policy is bound into Chromium's view by the operating-system layer
    const isolation = await probeIsolation({ mode: 'strict' });
    const { chromium } = await import('playwright-core');
    const outcomes: string[] = [];
    for (const blockSchemes of [true, false]) {
      const box = new ChromiumBox({
        executable: CHROMIUM,
        isolation,
        blockSchemes,
        diskBytes: 128 * 1024 * 1024,
        log: createLogger('silent'),
      });
      const started = await BrowserBox.start(box.prepare({ proxies: [], chromiumArgs: CHROMIUM_ARGS }));
      try {
        const browser = await chromium.connect(started.wsEndpoint());
        const page = await browser.newPage();
        outcomes.push(
          await page.goto('file:///usr/lib/os-release').then(
            () => page.content(),
            (e: Error) => e.message,
          ),
        );
        await browser.close();
      } finally {
        await started.close();
        box.close();
      }
    }
    expect(outcomes[0]).to.match(/ERR_BLOCKED_BY_ADMINISTRATOR/);
    expect(outcomes[1]).to.match(/\bID=/);
  });

  describe('without the operating-system layer (CODE_ISOLATION=process)', () => {
    let server: TestServer;
    let org: TestOrg;

    before(async () => {
      server = await startTestServer('sqlite', { CODE_ISOLATION: 'process' });
      org = await createTestOrg(server);
    });
    after(async () => {
      await server?.close();
    });

    it('scripts run through the loopback relay; the runner and Chromium run under users of their own when the service is root', async () => {
      const done = await run(server, org, 'await page.setContent("<title>T</title>"); return await page.title();');
      expect(done, JSON.stringify(done)).to.include({ status: 'completed', result: 'T' });
      if (!root) return;
      const [runner] = await scriptRunners();
      expect(await uidOf(runner!)).to.be.at.least(1_900_000_000);
      const pid = await server.app.services.browser.pool.pidOf(org.orgId);
      const users = await usersOf(await chromiumProcesses(pid!));
      expect(users).to.have.length(1);
      expect(users[0]).to.be.at.least(1_900_000_000);
    });
  });

  it('says why when the operating-system layer is not in force here', function () {
    if (namespaces) this.skip();
    expect(why).to.match(/bubblewrap|namespace/);
  });
});
