/**
 * The relay (src/browser/relay.ts): its rewrite of runner → browser messages (whatever makes a
 * context, a request context or a CDP browser context ends up on the guarded proxy), what it
 * refuses (calls that act on the service's machine, file paths for uploads, CDP commands that get
 * around it, URLs that are not http(s) or about:blank), and its per-organisation Unix sockets: a
 * browser path is only reachable on its own organisation's socket.
 */
import path from 'node:path';
import { expect } from 'chai';
import WebSocket, { WebSocketServer } from 'ws';
import type { AddressInfo } from 'node:net';
import { BrowserRelay, guardMessage, refusal, RELAY_DIR_IN_SANDBOX } from '../../../src/browser/relay.js';
import { navigationRefusal } from '../../../src/browser/urls.js';
import { parentDirs } from '../../../src/browser/contain.js';
import { createLogger } from '../../../src/config/logger.js';

const PROXY = 'http://127.0.0.1:3128';
const ON = { schemes: true };

describe('browser relay: guardMessage', () => {
  it('forces the guarded proxy on contexts and request contexts, with or without a proxy of their own', () => {
    for (const method of ['newContext', 'newPersistentContext', 'newContextForReuse', 'newRequest']) {
      const plain = guardMessage(
        { id: 1, guid: 'browser@1', method, params: { viewport: { width: 1, height: 1 } } },
        PROXY,
      );
      expect(plain.params, method).to.deep.equal({ viewport: { width: 1, height: 1 }, proxy: { server: PROXY } });
      const own = guardMessage(
        { id: 2, guid: 'browser@1', method, params: { proxy: { server: 'http://evil:1', bypass: '*' } } },
        PROXY,
      );
      expect(own.params, method).to.deep.equal({ proxy: { server: PROXY } });
    }
    const any = guardMessage(
      { id: 3, guid: 'x@1', method: 'somethingNew', params: { proxy: { server: 'direct://' } } },
      PROXY,
    );
    expect(any.params).to.deep.equal({ proxy: { server: PROXY } });
  });

  it('puts CDP-made browser contexts on the guarded proxy', () => {
    const msg = guardMessage(
      {
        id: 4,
        guid: 'cdp-session@1',
        method: 'send',
        params: { method: 'Target.createBrowserContext', params: { proxyServer: 'direct://', proxyBypassList: '*' } },
      },
      PROXY,
    );
    expect(msg.params).to.deep.equal({
      method: 'Target.createBrowserContext',
      params: { proxyServer: PROXY, proxyBypassList: '<-loopback>' },
    });
    const bare = guardMessage(
      { id: 5, guid: 'cdp-session@1', method: 'send', params: { method: 'Target.createBrowserContext' } },
      PROXY,
    );
    expect(bare.params).to.deep.equal({
      method: 'Target.createBrowserContext',
      params: { proxyServer: PROXY, proxyBypassList: '<-loopback>' },
    });
  });

  it('leaves every other message as it is', () => {
    const goto = { id: 6, guid: 'frame@1', method: 'goto', params: { url: 'https://example.com' } };
    expect(guardMessage(goto, PROXY)).to.equal(goto);
    const cdp = {
      id: 7,
      guid: 'cdp-session@1',
      method: 'send',
      params: { method: 'Page.navigate', params: { url: 'x' } },
    };
    expect(guardMessage(cdp, PROXY)).to.equal(cdp);
    const noParams = { id: 8, guid: 'x@1', method: 'close' };
    expect(guardMessage(noParams, PROXY)).to.equal(noParams);
  });
});

describe('browser relay: refusal', () => {
  it("refuses the calls that act on the service's machine, whatever the scheme switch says", () => {
    for (const method of [
      'saveAs',
      'createTempFiles',
      'startServer',
      'showRecorder',
      'launch',
      'launchPersistentContext',
      'connectOverCDP',
    ]) {
      expect(refusal({ id: 1, guid: 'x@1', method, params: {} }, { schemes: false }), method).to.match(
        /not available to browser scripts/,
      );
    }
    expect(
      refusal(
        { id: 1, guid: 'frame@1', method: 'setInputFiles', params: { selector: 'input', localPaths: ['/etc/passwd'] } },
        ON,
      ),
    ).to.match(/by their contents/);
    expect(
      refusal({ id: 1, guid: 'handle@1', method: 'setInputFiles', params: { localDirectory: '/etc' } }, ON),
    ).to.match(/by their contents/);
    expect(
      refusal(
        { id: 1, guid: 'handle@1', method: 'setInputFiles', params: { payloads: [{ name: 'a.txt', buffer: 'YQ==' }] } },
        ON,
      ),
    ).to.equal(undefined);
    // playwright-core writes <traces folder>/<name>.trace on the service's machine.
    for (const name of ['../../../etc/cron.d/x', '/etc/x', 'a/b', '..', '.hidden']) {
      expect(refusal({ id: 1, guid: 'tracing@1', method: 'tracingStart', params: { name } }, ON), name).to.match(
        /plain file name/,
      );
      expect(refusal({ id: 1, guid: 'tracing@1', method: 'tracingStartChunk', params: { name } }, ON), name).to.match(
        /plain file name/,
      );
    }
    expect(
      refusal(
        { id: 1, guid: 'tracing@1', method: 'tracingStart', params: { name: 'trace-1.run', screenshots: true } },
        ON,
      ),
    ).to.equal(undefined);
    expect(refusal({ id: 1, guid: 'tracing@1', method: 'tracingStart', params: { screenshots: true } }, ON)).to.equal(
      undefined,
    );
  });

  it('refuses CDP commands that would get around the relay', () => {
    const cdp = (method: string, params: Record<string, unknown> = {}) =>
      refusal({ id: 1, guid: 'cdp@1', method: 'send', params: { method, params } }, ON);
    for (const m of [
      'Target.exposeDevToolsProtocol',
      'Target.sendMessageToTarget',
      'DOM.setFileInputFiles',
      'Page.setDownloadBehavior',
      'Browser.setDownloadBehavior',
    ])
      expect(cdp(m), m).to.match(/is refused/);
    expect(cdp('Input.dispatchDragEvent', { type: 'drop', data: { items: [], files: ['/etc/passwd'] } })).to.match(
      /is refused/,
    );
    expect(cdp('Input.dispatchDragEvent', { type: 'drop', data: { items: [] } })).to.equal(undefined);
    expect(cdp('Runtime.evaluate', { expression: '1' })).to.equal(undefined);
  });

  it('refuses every url parameter that is not http(s) or about:blank, at any depth, unless the test-only switch is on', () => {
    const goto = (url: string) => ({ id: 1, guid: 'frame@1', method: 'goto', params: { url } });
    for (const url of [
      'file:///etc/passwd',
      'view-source:https://a.example/',
      'chrome://version',
      'devtools://devtools/x',
      'about:version',
      'data:text/html,x',
      'blob:https://a.example/x',
      'javascript:alert(1)',
      'FILE:///etc/passwd',
    ]) {
      expect(refusal(goto(url), ON), url).to.match(
        /is refused: browser tasks may open http\(s\) pages and about:blank only/,
      );
      expect(refusal(goto(url), { schemes: false }), url).to.equal(undefined);
    }
    for (const url of ['https://a.example/', 'http://127.0.0.1:8080/x', 'about:blank', '/relative'])
      expect(refusal(goto(url), ON), url).to.equal(undefined);
    expect(
      refusal(
        { id: 1, guid: 'cdp@1', method: 'send', params: { method: 'Page.navigate', params: { url: 'file:///' } } },
        ON,
      ),
    ).to.match(/file: URLs are not allowed/);
    expect(
      refusal(
        {
          id: 1,
          guid: 'cdp@1',
          method: 'send',
          params: { method: 'Target.createTarget', params: { url: 'chrome://settings' } },
        },
        ON,
      ),
    ).to.match(/chrome: URLs/);
    expect(
      refusal(
        { id: 1, guid: 'route@1', method: 'continue', params: { url: 'file:///etc/passwd', isFallback: false } },
        ON,
      ),
    ).to.match(/file: URLs/);
    expect(
      refusal(
        {
          id: 1,
          guid: 'context@1',
          method: 'addCookies',
          params: { cookies: [{ name: 'a', value: 'b', url: 'file:///x' }] },
        },
        ON,
      ),
    ).to.match(/file: URLs/);
  });

  it('says what was refused without more than the start of a long URL', () => {
    const long = `file:///${'a'.repeat(5000)}`;
    expect(navigationRefusal(long)!.length).to.be.below(400);
  });
});

describe('browser relay: one Unix socket per organisation', () => {
  let upstream: WebSocketServer;
  let target = '';
  let relay: BrowserRelay;

  before(async () => {
    upstream = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((r) => upstream.once('listening', () => r()));
    upstream.on('connection', (ws) => ws.on('message', (data) => ws.send(data.toString())));
    target = `ws://127.0.0.1:${(upstream.address() as AddressInfo).port}/browser`;
    relay = new BrowserRelay({
      proxyUrl: async () => PROXY,
      transport: 'unix',
      refuseSchemes: true,
      log: createLogger('silent'),
    });
  });
  after(async () => {
    await relay.close();
    await new Promise<void>((r) => upstream.close(() => r()));
  });

  /** Connects as a runner would, with the socket at its host path instead of RELAY_DIR_IN_SANDBOX. */
  function connect(url: string, socketDir: string): Promise<{ ws: WebSocket; closed: Promise<number> }> {
    const host = url.replace(`ws+unix://${RELAY_DIR_IN_SANDBOX}/`, `ws+unix://${socketDir}/`);
    const ws = new WebSocket(host);
    const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve({ ws, closed }));
      ws.once('error', reject);
    });
  }

  it("forwards on the organisation's own socket, answers refused calls itself, and closes a path of another organisation", async () => {
    const a = await relay.endpointFor('org_a', target);
    const b = await relay.endpointFor('org_b', `${target}?b`);
    expect(a.url).to.match(new RegExp(`^ws\\+unix://${RELAY_DIR_IN_SANDBOX}/relay\\.sock:/[0-9a-f]{48}$`));
    expect(a.socketDir).to.be.a('string');
    expect(a.socketDir).to.not.equal(b.socketDir);
    expect(path.dirname(a.socketDir!)).to.equal(path.dirname(b.socketDir!));

    const own = await connect(a.url, a.socketDir!);
    const echoed = new Promise<string>((r) => own.ws.once('message', (d) => r(d.toString())));
    own.ws.send(JSON.stringify({ id: 1, guid: 'frame@1', method: 'goto', params: { url: 'https://a.example/' } }));
    expect(JSON.parse(await echoed)).to.deep.include({ id: 1, method: 'goto' });
    const refused = new Promise<string>((r) => own.ws.once('message', (d) => r(d.toString())));
    own.ws.send(JSON.stringify({ id: 2, guid: 'frame@1', method: 'goto', params: { url: 'file:///etc/passwd' } }));
    expect(JSON.parse(await refused)).to.deep.equal({
      id: 2,
      error: { error: { name: 'Error', message: navigationRefusal('file:///etc/passwd'), stack: '' } },
    });
    own.ws.close();

    // B's browser path on A's socket leads nowhere.
    const crossed = await connect(b.url, a.socketDir!);
    expect(await crossed.closed).to.equal(4004);
  });

  it('stops listening for an organisation whose last browser is gone, and listens again in the same folder for its next one', async () => {
    const first = await relay.endpointFor('org_c', `${target}?c1`);
    relay.forget(`${target}?c1`);
    await new Promise((r) => setTimeout(r, 50));
    await connect(first.url, first.socketDir!).then(
      () => expect.fail('connected to a closed socket'),
      (err: NodeJS.ErrnoException) => expect(err.code).to.match(/ENOENT|ECONNREFUSED/),
    );
    const second = await relay.endpointFor('org_c', `${target}?c2`);
    expect(second.socketDir).to.equal(first.socketDir);
    const ok = await connect(second.url, second.socketDir!);
    ok.ws.close();
  });
});

describe('browser containment: parentDirs', () => {
  it('lists the folders above each path, parents first, except those the view already has', () => {
    expect(
      parentDirs(['/opt/node/bin/node', '/work/app/x.cjs', '/usr/lib/x', '/tmp/a/b', '/dev/shm/s/b', '/etc/fonts']),
    ).to.deep.equal([
      '/opt',
      '/work',
      '/etc',
      '/opt/node',
      '/work/app',
      '/tmp/a',
      '/dev/shm',
      '/opt/node/bin',
      '/dev/shm/s',
    ]);
  });
});
