/**
 * An organisation's browser box (src/browser/contain.ts, box.ts, box-server.cjs) reached as if
 * the relay did not exist: the test connects to the box's Playwright server directly and sends
 * what a hostile script would send if every filter had failed. What holds then is the box alone:
 * - Chromium and the Playwright server have no network of their own: a CDP
 *   `Target.setRemoteLocations`, a context without the proxy, pages to loopback, Redis,
 *   PostgreSQL, a listener of the test and the metadata address reach nothing on the host;
 *   through the guarded proxy the outbound policy still refuses them;
 * - what the Playwright server writes for a client (a video folder, a saved artifact) lands in
 *   the box's private disk, never on the host;
 * - from outside: every process of the box runs as the box's user, in a network namespace that
 *   is not the host's, with a view that holds none of the service's files.
 * And a box whose browser cannot start fails its start with the reason the box sends (its
 * `failed` message, through src/containment's supervisor), its own folder removed.
 * The operating-system layer must be in force (CI runs with CODE_ISOLATION=strict); elsewhere
 * the suite is skipped and says why.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { BrowserBox } from '../../../src/browser/box.js';
import { ChromiumBox } from '../../../src/browser/contain.js';
import { CHROMIUM_ARGS } from '../../../src/browser/pool.js';
import { GuardedProxy } from '../../../src/browser/proxy.js';
import { createLogger } from '../../../src/config/logger.js';
import { probeIsolation, processTree, uidOf, type Isolation } from '../../../src/containment/index.js';
import { OutboundPolicy, parseOutboundAllowlist } from '../../../src/kernel/outbound.js';
import { CHROMIUM, hostFoldersInView, requireChromium } from '../../helpers/chromium.js';

const root = process.getuid?.() === 0;

/** A TCP listener on the host's loopback that counts the connections it gets. */
async function countingListener(): Promise<{ port: number; hits: () => number; close: () => void }> {
  let hits = 0;
  const server = net.createServer((s) => {
    hits += 1;
    s.end('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n[]');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as net.AddressInfo).port, hits: () => hits, close: () => server.close() };
}

/** What opening `url` in `page` ends with: the HTTP status, or the first line of the error. */
async function opened(page: Page, url: string): Promise<string> {
  try {
    const res = await page.goto(url, { timeout: 10_000 });
    return `status ${res?.status()}`;
  } catch (err) {
    return (err as Error).message.split('\n')[0]!;
  }
}

describe('browser box: Chromium and its Playwright server reached directly, as if the relay had failed', function () {
  this.timeout(120_000);
  let isolation: Isolation;
  let chromiumBox: ChromiumBox;
  let proxy: GuardedProxy;
  let socketDir: string;
  let box: BrowserBox;
  let browser: Browser;
  let listener: Awaited<ReturnType<typeof countingListener>>;

  before(async function () {
    requireChromium(this);
    isolation = await probeIsolation({ mode: process.env.CODE_ISOLATION === 'strict' ? 'strict' : 'auto' });
    if (isolation.report.level !== 'namespaces') {
      process.stderr.write(
        `\nNOTE: the operating-system layer is not in force here: ${isolation.report.missing.join('; ')}\n`,
      );
      this.skip();
    }
    listener = await countingListener();
    // Nothing is allow-listed: loopback, private and metadata addresses are refused by the proxy.
    proxy = new GuardedProxy(new OutboundPolicy(parseOutboundAllowlist('')));
    socketDir = mkdtempSync(path.join(os.tmpdir(), 'sy-proxy-test-'));
    chmodSync(socketDir, 0o755);
    const url = await proxy.start(socketDir);
    chromiumBox = new ChromiumBox({
      executable: CHROMIUM,
      isolation,
      blockSchemes: true,
      diskBytes: 256 * 1024 * 1024,
      log: createLogger('silent'),
    });
    const launch = chromiumBox.prepare({
      proxies: [{ port: Number(new URL(url).port), socket: proxy.socket! }],
      chromiumArgs: [...CHROMIUM_ARGS, `--proxy-server=${url}`, '--proxy-bypass-list=<-loopback>'],
    });
    box = await BrowserBox.start(launch);
    const { chromium } = await import('playwright-core');
    browser = await chromium.connect(box.wsEndpoint(), { timeout: 30_000 });
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await box?.close();
    chromiumBox?.close();
    await proxy?.close();
    listener?.close();
    if (socketDir) rmSync(socketDir, { recursive: true, force: true });
  });

  it('a CDP Target.setRemoteLocations makes Chromium connect to nothing of the host', async () => {
    const cdp = await browser.newBrowserCDPSession();
    await cdp.send('Target.setDiscoverTargets', { discover: true });
    const created: string[] = [];
    cdp.on('Target.targetCreated', (e: { targetInfo: { url: string; title: string } }) =>
      created.push(`${e.targetInfo.title} ${e.targetInfo.url}`),
    );
    await cdp.send('Target.setRemoteLocations', { locations: [{ host: '127.0.0.1', port: listener.port }] });
    // Chromium polls remote locations about once a second; give it several rounds.
    await new Promise((r) => setTimeout(r, 4000));
    expect(listener.hits(), 'connections the host listener received').to.equal(0);
    expect(created.filter((c) => c.includes(String(listener.port)))).to.deep.equal([]);
    await cdp.detach();
  });

  it('pages without the proxy reach no port of the host (a listener, Redis, PostgreSQL) nor the metadata address; through the proxy the policy refuses them', async () => {
    // A context of its own that bypasses the proxy for every host (as a script could ask for if the relay let it).
    const direct = await browser.newContext({ proxy: { server: 'http://127.0.0.1:9', bypass: '*' } });
    const page = await direct.newPage();
    const outcomes: Record<string, string> = {};
    for (const [name, url] of [
      ['listener', `http://127.0.0.1:${listener.port}/`],
      ['redis', 'http://127.0.0.1:6379/'],
      ['postgres', 'http://127.0.0.1:5432/'],
      ['metadata', 'http://169.254.169.254/latest/meta-data/'],
    ] as const) {
      outcomes[name] = await opened(page, url);
    }
    await direct.close();
    for (const [name, outcome] of Object.entries(outcomes))
      expect(outcome, `${name} without the proxy`).to.match(
        /ERR_CONNECTION_REFUSED|ERR_ADDRESS_UNREACHABLE|ERR_NETWORK_ACCESS_DENIED|ERR_INTERNET_DISCONNECTED|ERR_TIMED_OUT|ERR_NAME_NOT_RESOLVED/,
      );
    // Redis and PostgreSQL are there, seen from the host.
    for (const port of [6379, 5432]) {
      const reachable = await new Promise<boolean>((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => {
          s.destroy();
          resolve(true);
        });
        s.on('error', () => resolve(false));
      });
      expect(reachable, `port ${port} from the host`).to.equal(true);
    }
    // Through the guarded proxy (the box's default): refused by the outbound policy.
    const guarded = await browser.newContext();
    const viaProxy = await opened(await guarded.newPage(), `http://127.0.0.1:${listener.port}/`);
    await guarded.close();
    expect(viaProxy).to.equal('status 403');
    expect(listener.hits(), 'connections the host listener received').to.equal(0);
  });

  it("what the Playwright server writes for a client — a video folder, a saved artifact — stays on the box's private disk", async () => {
    const hostDir = mkdtempSync(path.join(os.tmpdir(), 'sy-box-writes-'));
    try {
      const videoDir = path.join(hostDir, 'video');
      // The raw protocol call a script would make if the relay passed it (the client drops recordVideo.dir for remote browsers).
      const channel = (browser as unknown as { _channel: { newContextForReuse(p: object): Promise<unknown> } })
        ._channel;
      await channel
        .newContextForReuse({ recordVideo: { dir: videoDir, size: { width: 320, height: 240 } } })
        .catch(() => undefined);
      const context = await browser.newContext({ acceptDownloads: true });
      const page = await context.newPage();
      await page.setContent('<a download="f.txt" href="data:text/plain,hello">get</a>');
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('a')]);
      const saved = path.join(hostDir, 'saved.txt');
      const artifact = (download as unknown as { _artifact: { _channel: { saveAs(p: object): Promise<unknown> } } })
        ._artifact;
      const outcome = await artifact._channel.saveAs({ path: saved }).then(
        () => 'saved',
        (e: Error) => e.message.split('\n')[0],
      );
      await context.close();
      expect(existsSync(videoDir), 'a video folder on the host').to.equal(false);
      expect(existsSync(saved), `a saved artifact on the host (${outcome})`).to.equal(false);
    } finally {
      rmSync(hostDir, { recursive: true, force: true });
    }
  });

  it('from outside: every process of the box runs as its user, in a network namespace that is not the host’s, with a view of none of the service’s files', async () => {
    const tree = await processTree(box.pid!);
    const inside = tree.slice(2);
    expect(inside.length, 'the box program and Chromium').to.be.at.least(2);
    const users = new Set<number | undefined>();
    for (const p of inside) {
      const uid = await uidOf(p);
      if (uid !== undefined) users.add(uid); // undefined: a renderer that has exited since
    }
    expect([...users]).to.have.length(1);
    const [uid] = [...users];
    expect(uid).to.not.equal(0);
    if (root) expect(uid).to.be.at.least(1_900_000_000);
    const hostNet = readlinkSync('/proc/self/ns/net');
    const netOf = (p: number) => {
      try {
        return readlinkSync(`/proc/${p}/ns/net`);
      } catch {
        return undefined; // a renderer that has exited since
      }
    };
    const namespaces = inside.map(netOf).filter((n) => n !== undefined);
    expect(namespaces.length).to.be.at.least(2);
    for (const n of namespaces) expect(n).to.not.equal(hostNet);
    const view = `/proc/${inside[0]}/root`;
    expect(existsSync(`${view}${process.cwd()}/package.json`), "the service's files").to.equal(false);
    expect(hostFoldersInView(view)).to.deep.equal([]);
    // The box program's environment is what it was given, nothing of the service's.
    const environ = readFileSync(`/proc/${inside[0]}/environ`, 'latin1').split('\0').filter(Boolean);
    expect(
      environ
        .map((e) => e.split('=')[0])
        .filter((k) => !k!.startsWith('NODE_CHANNEL_'))
        .sort(),
    ).to.deep.equal(['HOME', 'PATH', 'TMPDIR']);
  });
});

describe('browser box: a start that fails', function () {
  this.timeout(60_000);

  it('a box whose browser cannot start fails with the reason it sends, and its folder is removed', async () => {
    const isolation = await probeIsolation({ mode: process.env.CODE_ISOLATION === 'strict' ? 'strict' : 'auto' });
    const chromiumBox = new ChromiumBox({
      executable: '/usr/bin/no-such-chromium',
      isolation,
      blockSchemes: true,
      diskBytes: 64 * 1024 * 1024,
      log: createLogger('silent'),
    });
    try {
      const launch = chromiumBox.prepare({ proxies: [], chromiumArgs: CHROMIUM_ARGS });
      const folder = path.dirname(path.dirname(launch.socket));
      const failure = await BrowserBox.start(launch).then(
        () => 'started',
        (err: Error) => `${err.constructor.name}: ${err.message}`,
      );
      expect(failure).to.match(
        /^BoxStartError: Failed to launch chromium because executable doesn't exist at \/usr\/bin\/no-such-chromium/,
      );
      expect(existsSync(folder), 'the box’s own folder').to.equal(false);
    } finally {
      chromiumBox.close();
    }
  });
});
