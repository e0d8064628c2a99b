/**
 * The relay (src/browser/relay.ts, relay-filter.ts, relay-objects.ts): what it lets through by
 * the interface of the object a call is sent to (protocol-allowlist.ts), the parameters it
 * refuses, drops or rewrites (whatever makes a context ends up on the guarded proxy), the CDP
 * commands it allows (cdp-allowlist.ts), URLs other than http(s) and about:blank, calls to
 * objects it does not know; the objects it learns from the server's own messages without
 * parsing anything else, its count of pages and contexts per browser and the limit on them; the
 * test-only switch that forwards everything unchanged; and its per-organisation Unix sockets: a
 * browser path is only reachable on its own organisation's socket.
 */
import path from 'node:path';
import { expect } from 'chai';
import WebSocket, { WebSocketServer } from 'ws';
import type { AddressInfo } from 'node:net';
import { BrowserRelay, RELAY_DIR_IN_SANDBOX } from '../../../src/browser/relay.js';
import { screenCall, type Msg } from '../../../src/browser/relay-filter.js';
import { ObjectTable, UsageCounter } from '../../../src/browser/relay-objects.js';
import { navigationRefusal } from '../../../src/browser/urls.js';
import { createLogger } from '../../../src/config/logger.js';

const PROXY = 'http://127.0.0.1:3128';
const ON = { proxy: PROXY, schemes: true };
const NOT_LISTED = /is not available to browser scripts \(not on the relay's allow-list\)\.$/;

/** A call of `method` to an object of interface `type`, screened. */
function screen(type: string | undefined, method: string, params?: Msg, opts = ON) {
  return screenCall({ id: 1, guid: `${type ?? 'gone'}@1`, method, ...(params ? { params } : {}) }, type, opts);
}
const refusalOf = (r: ReturnType<typeof screen>) => (r.ok ? undefined : r.message);
const paramsOf = (r: ReturnType<typeof screen>) => (r.ok ? r.msg.params : `refused: ${r.message}`);
const cdp = (command: string, params: Msg = {}, opts = ON) =>
  refusalOf(screen('CDPSession', 'send', { method: command, params }, opts));

describe('browser relay: calls by interface', () => {
  it('lets through an allowed method of the interface the object has, and refuses it on another, naming the interface and method', () => {
    expect(screen('Frame', 'goto', { url: 'https://a.example/' })).to.include({ ok: true, changed: false });
    expect(screen('Page', 'screenshot', {})).to.include({ ok: true });
    expect(screen('Root', 'initialize', { sdkLanguage: 'javascript' })).to.include({ ok: true });
    expect(refusalOf(screen('Page', 'goto', { url: 'https://a.example/' })))
      .to.match(/^The call Page\.goto /)
      .and.match(NOT_LISTED);
    expect(refusalOf(screen('Page', 'somethingNew'))).to.equal(
      "The call Page.somethingNew is not available to browser scripts (not on the relay's allow-list).",
    );
    expect(refusalOf(screen('NoSuchInterface', 'goto')))
      .to.match(/^The call NoSuchInterface\.goto/)
      .and.match(NOT_LISTED);
    // Inherited object keys are no entries.
    expect(refusalOf(screen('Page', 'constructor'))).to.match(NOT_LISTED);
    expect(refusalOf(screen('toString', 'call'))).to.match(NOT_LISTED);
  });

  it("refuses the calls that act on the service's machine, with the reason", () => {
    for (const [type, method, why] of [
      ['Artifact', 'saveAs', /writes a file on the service's machine/],
      ['Artifact', 'pathAfterFinished', /names a file on the service's machine/],
      ['BrowserContext', 'createTempFiles', /writes files on the service's machine/],
      ['WritableStream', 'write', /writes a file/],
      ['Browser', 'startServer', /start a server/],
      ['BrowserContext', 'showRecorder', /inspector or recorder/],
      ['BrowserContext', 'pause', /inspector or recorder/],
      ['BrowserType', 'launch', /start programs/],
      ['BrowserType', 'launchPersistentContext', /start programs/],
      ['BrowserType', 'connectOverCDP', /start programs/],
      ['LocalUtils', 'harUnzip', /client's own side/],
      ['Page', 'screencastStart', /ffmpeg/],
      ['Page', 'pickLocator', /headless/],
      ['Playwright', 'newRequest', /page\.request/],
      ['Browser', 'close', /shared by the organisation's tasks/],
    ] as const) {
      expect(refusalOf(screen(type, method, {})), `${type}.${method}`)
        .to.match(new RegExp(`^The call ${type}\\.${method} is not available to browser scripts: `))
        .and.match(why);
    }
  });

  it('refuses newContextForReuse whatever its parameters (recordVideo.dir included): such a context outlives the connection', () => {
    for (const params of [{ recordVideo: { dir: '/tmp/x' } }, {}])
      expect(refusalOf(screen('Browser', 'newContextForReuse', params))).to.match(
        /^The call Browser\.newContextForReuse is not available to browser scripts: a context for reuse outlives the connection/,
      );
  });

  it('puts every context on the guarded proxy, with or without a proxy of its own, and refuses recordVideo', () => {
    expect(paramsOf(screen('Browser', 'newContext', { viewport: { width: 1, height: 1 } }))).to.deep.equal({
      viewport: { width: 1, height: 1 },
      proxy: { server: PROXY },
    });
    expect(paramsOf(screen('Browser', 'newContext'))).to.deep.equal({ proxy: { server: PROXY } });
    const own = { proxy: { server: 'http://evil:1', bypass: '*' } };
    expect(paramsOf(screen('Browser', 'newContext', own))).to.deep.equal({ proxy: { server: PROXY } });
    expect(own.proxy.server, "the script's message is not changed in place").to.equal('http://evil:1');
    for (const recordVideo of [{ dir: '/tmp/x' }, { size: { width: 10, height: 10 } }])
      expect(refusalOf(screen('Browser', 'newContext', { recordVideo }))).to.match(
        /^The parameter recordVideo of Browser\.newContext is not available to browser scripts: video is encoded by a program \(ffmpeg\)/,
      );
  });

  it('drops the HAR path and resources folder the client names, and keeps the rest of harStart', () => {
    const r = screen('Tracing', 'harStart', {
      page: { guid: 'page@1' },
      options: { content: 'embed', harPath: '/etc/cron.d/x.har', resourcesDir: '/etc', urlGlob: '**' },
    });
    expect(r).to.include({ ok: true, changed: true });
    expect(paramsOf(r)).to.deep.equal({ page: { guid: 'page@1' }, options: { content: 'embed', urlGlob: '**' } });
    expect(screen('Tracing', 'harStart', { options: { content: 'omit' } })).to.include({ ok: true, changed: false });
  });

  it('takes a trace name only as a plain file name (playwright-core writes <traces folder>/<name>.trace)', () => {
    for (const method of ['tracingStart', 'tracingStartChunk']) {
      for (const name of ['../../../etc/cron.d/x', '/etc/x', 'a/b', '..', '.hidden', 7])
        expect(refusalOf(screen('Tracing', method, { name })), `${method} ${String(name)}`).to.match(
          new RegExp(`^The parameter name of Tracing\\.${method} is refused: a trace name is a plain file name here`),
        );
      expect(screen('Tracing', method, { name: 'trace-1.run', screenshots: true })).to.include({ ok: true });
      expect(screen('Tracing', method, {})).to.include({ ok: true });
    }
  });

  it('takes files by their contents, never by paths or streams', () => {
    for (const [type, params] of [
      ['Frame', { selector: 'input', localPaths: ['/etc/passwd'] }],
      ['ElementHandle', { localDirectory: '/etc' }],
      ['ElementHandle', { streams: [{ guid: 'writableStream@1' }] }],
      ['Frame', { selector: 'x', directoryStream: { guid: 'writableStream@1' } }],
    ] as const)
      expect(refusalOf(screen(type, 'setInputFiles', params))).to.match(
        /^The parameter \w+ of \w+\.setInputFiles is not available to browser scripts: files are uploaded by their contents/,
      );
    expect(refusalOf(screen('Frame', 'drop', { selector: 'x', localPaths: ['/etc/passwd'] }))).to.match(
      /by their contents/,
    );
    expect(
      screen('ElementHandle', 'setInputFiles', { payloads: [{ name: 'a.txt', buffer: 'YQ==' }], localPaths: [] }),
    ).to.include({
      ok: true,
    });
  });

  it('refuses parameters that are not an object', () => {
    expect(refusalOf(screenCall({ id: 1, guid: 'frame@1', method: 'goto', params: ['x'] }, 'Frame', ON))).to.equal(
      'The call Frame.goto is refused: its parameters are not an object.',
    );
  });

  it('answers a call to an object it does not know as a closed target', () => {
    const r = screenCall({ id: 3, guid: 'page@gone', method: 'close', params: {} }, undefined, ON);
    expect(r).to.deep.equal({
      ok: false,
      name: 'TargetClosedError',
      message: 'The call close is refused: the relay knows no object page@gone (it was closed, or never made).',
    });
  });

  it('lets the calls every object takes (__waitInfo__, __abort__) through to known objects only', () => {
    expect(screen('Page', '__waitInfo__', { waitId: 'w', phase: 'before', event: 'download' })).to.include({
      ok: true,
    });
    expect(screen('Frame', '__abort__', { id: 3 })).to.include({ ok: true });
    expect(screen(undefined, '__abort__', { id: 3 })).to.include({ ok: false, name: 'TargetClosedError' });
  });
});

describe('browser relay: CDP commands', () => {
  it('allows the commands on the list', () => {
    for (const command of [
      'Runtime.evaluate',
      'Page.navigate',
      'DOM.getDocument',
      'Network.setExtraHTTPHeaders',
      'Target.getTargets',
    ])
      expect(cdp(command, command === 'Page.navigate' ? { url: 'https://a.example/' } : {}), command).to.equal(
        undefined,
      );
  });

  it('refuses Target.setRemoteLocations, naming it, and the other commands that get around the relay, with their reasons', () => {
    expect(cdp('Target.setRemoteLocations', { locations: [{ host: '127.0.0.1', port: 9 }] })).to.equal(
      'The CDP command Target.setRemoteLocations is not available to browser scripts: the browser process would connect to any host and port itself, around the guarded proxy.',
    );
    for (const [command, why] of [
      ['Target.exposeDevToolsProtocol', /hand the DevTools protocol to a page/],
      ['Target.sendMessageToTarget', /wraps messages/],
      ['Target.createTarget', /outside Playwright/],
      ['Target.createBrowserContext', /outside Playwright/],
      ['Target.setDiscoverTargets', /remote locations/],
      ['DOM.setFileInputFiles', /files of the browser's machine/],
      ['Page.setDownloadBehavior', /downloads are captured/],
      ['Browser.setDownloadBehavior', /downloads are captured/],
      ['Network.loadNetworkResource', /browser process would load a URL itself/],
      ['IO.read', /streams and blobs/],
      ['Storage.getCookies', /any origin in any browser context/],
      ['Tethering.bind', /opens a port/],
      ['SystemInfo.getInfo', /describes the browser's machine/],
    ] as const)
      expect(cdp(command), command)
        .to.match(new RegExp(`^The CDP command ${command.replace('.', '\\.')} is not available to browser scripts: `))
        .and.match(why);
  });

  it('refuses a command that is not on the list, naming it', () => {
    for (const command of [
      'Page.crash',
      'Browser.getHistograms',
      'Foo.bar',
      'Runtime',
      'Runtime.evaluate.x',
      'Runtime.constructor',
      '',
    ])
      expect(cdp(command), command).to.equal(
        `The CDP command ${command} is not available to browser scripts (not on the relay's allow-list).`,
      );
  });

  it('refuses drag events with files, not without', () => {
    expect(cdp('Input.dispatchDragEvent', { type: 'drop', data: { items: [], files: ['/etc/passwd'] } })).to.match(
      /^The parameter data\.files of Input\.dispatchDragEvent is not available to browser scripts: it puts files of the browser's machine into a page\.$/,
    );
    expect(cdp('Input.dispatchDragEvent', { type: 'drop', data: { items: [] } })).to.equal(undefined);
    expect(cdp('Input.dispatchDragEvent', { type: 'drop', data: { items: [], files: [] } })).to.equal(undefined);
  });
});

describe('browser relay: URLs', () => {
  it('refuses every url, baseURL or origin parameter that is not http(s) or about:blank, at any depth, unless the test-only switch is on', () => {
    const goto = (url: string, opts = ON) => refusalOf(screen('Frame', 'goto', { url }, opts));
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
      expect(goto(url), url).to.match(/is refused: browser tasks may open http\(s\) pages and about:blank only/);
      expect(goto(url, { proxy: PROXY, schemes: false }), url).to.equal(undefined);
    }
    for (const url of ['https://a.example/', 'http://127.0.0.1:8080/x', 'about:blank', '/relative'])
      expect(goto(url), url).to.equal(undefined);
    expect(cdp('Page.navigate', { url: 'file:///' })).to.match(/file: URLs are not allowed/);
    expect(cdp('Fetch.continueRequest', { requestId: '1', url: 'file:///etc/passwd' })).to.match(/file: URLs/);
    expect(cdp('Network.setCookies', { cookies: [{ name: 'a', value: 'b', url: 'file:///x' }] })).to.match(
      /file: URLs/,
    );
    expect(refusalOf(screen('Route', 'continue', { url: 'file:///etc/passwd', isFallback: false }))).to.match(
      /file: URLs/,
    );
    expect(
      refusalOf(screen('BrowserContext', 'addCookies', { cookies: [{ name: 'a', value: 'b', url: 'file:///x' }] })),
    ).to.match(/file: URLs/);
    // A base URL would turn a relative page.goto into a file: navigation; a stored origin is navigated to.
    expect(refusalOf(screen('Browser', 'newContext', { baseURL: 'file:///etc/' }))).to.match(/file: URLs/);
    expect(
      refusalOf(
        screen('Browser', 'newContext', { storageState: { origins: [{ origin: 'file://', localStorage: [] }] } }),
      ),
    ).to.match(/file: URLs/);
    expect(screen('Browser', 'newContext', { baseURL: 'https://a.example/' })).to.include({ ok: true });
  });

  it('says what was refused without more than the start of a long URL', () => {
    const long = `file:///${'a'.repeat(5000)}`;
    expect(navigationRefusal(long)!.length).to.be.below(400);
  });
});

/** The server's own wire shape of its object messages (playwright-core's DispatcherConnection). */
const create = (parent: string, type: string, guid: string) =>
  JSON.stringify({ guid: parent, method: '__create__', params: { type, initializer: {}, guid } });
const dispose = (guid: string) => JSON.stringify({ guid, method: '__dispose__', params: { reason: undefined } });
const adopt = (parent: string, guid: string) => JSON.stringify({ guid: parent, method: '__adopt__', params: { guid } });

describe('browser relay: the objects of a connection', () => {
  it("learns each object's type from the server's messages, takes children with their parent, and follows adoption", () => {
    const counted: string[] = [];
    const t = new ObjectTable((type, delta) => counted.push(`${type}${delta > 0 ? '+' : '-'}`));
    expect(t.typeOf('')).to.equal('Root');
    for (const m of [
      create('', 'Playwright', 'Playwright'),
      create('Playwright', 'Browser', 'browser@1'),
      create('browser@1', 'BrowserContext', 'context@1'),
      create('context@1', 'Frame', 'frame@1'),
      create('context@1', 'Page', 'page@1'),
      adopt('page@1', 'frame@1'),
      create('context@1', 'Page', 'page@2'),
    ])
      t.observe(Buffer.from(m));
    expect(t.typeOf('frame@1')).to.equal('Frame');
    expect(t.typeOf('page@2')).to.equal('Page');
    t.observe(Buffer.from(dispose('page@1')));
    expect(t.typeOf('page@1')).to.equal(undefined);
    expect(t.typeOf('frame@1'), 'adopted by the page, gone with it').to.equal(undefined);
    t.observe(Buffer.from(dispose('context@1')));
    expect(t.typeOf('page@2'), "a closed context's pages go with it").to.equal(undefined);
    expect(t.typeOf('browser@1')).to.equal('Browser');
    expect(counted).to.deep.equal(['BrowserContext+', 'Page+', 'Page+', 'Page-', 'Page-', 'BrowserContext-']);
    // The connection ends: whatever is left counts as gone, even an object whose parent was never announced.
    t.observe(Buffer.from(create('browser@1', 'BrowserContext', 'context@3')));
    t.observe(Buffer.from(create('nowhere@1', 'Page', 'page@3')));
    counted.length = 0;
    t.clear();
    expect(t.typeOf('browser@1')).to.equal(undefined);
    expect(counted.sort()).to.deep.equal(['BrowserContext-', 'Page-']);
  });

  it('parses no answer and no ordinary event, only object messages', () => {
    const t = new ObjectTable(() => undefined);
    const parse = JSON.parse;
    let parsed = 0;
    JSON.parse = ((text: string, reviver?: (k: string, v: unknown) => unknown) => {
      parsed += 1;
      return parse(text, reviver);
    }) as typeof JSON.parse;
    try {
      const big = 'A'.repeat(1024 * 1024);
      t.observe(Buffer.from(`{"id":7,"result":{"binary":"${big}"}}`));
      t.observe(Buffer.from(`{"guid":"page@1","method":"screencastFrame","params":{"data":"${big}"}}`));
      t.observe(Buffer.from(`{"guid":"stream@1","method":"__x","params":`)); // not JSON, never parsed to the end
      t.observe(Buffer.from('{"guid":"short"}'));
      t.observe(Buffer.from('{"guid":"'));
      expect(parsed).to.equal(1);
      t.observe(Buffer.from(create('', 'Page', 'page@9')));
      expect(parsed).to.equal(2);
    } finally {
      JSON.parse = parse;
    }
    expect(t.typeOf('page@9')).to.equal('Page');
  });
});

describe('browser relay: pages and contexts per browser, and their limit', () => {
  it('counts over every connection to a browser, calls onLimit once past a limit and ends its connections', async () => {
    const limits: Array<[string, string]> = [];
    const usage = new UsageCounter({ pages: 2, contexts: 1 }, (target, reason) => limits.push([target, reason]));
    let ended = 0;
    const a = usage.join('ws://b1', () => (ended += 1));
    const b = usage.join('ws://b1', () => (ended += 1));
    const other = usage.join('ws://b2', () => (ended += 10));
    a.count('BrowserContext', 1);
    a.count('Page', 1);
    b.count('Page', 1);
    other.count('Page', 1);
    expect(usage.counts('ws://b1')).to.deep.equal({ pages: 2, contexts: 1 });
    expect(usage.counts('ws://b2')).to.deep.equal({ pages: 1, contexts: 0 });
    b.count('Page', -1);
    a.count('Page', 1);
    expect(limits).to.deep.equal([]);
    b.count('Page', 1);
    expect(limits).to.deep.equal([['ws://b1', 'more than 2 pages open at once']]);
    expect(usage.limited('ws://b1')).to.equal(true);
    await Promise.resolve();
    expect(ended, 'both connections of the browser, not the other browser').to.equal(2);
    a.count('Page', 1);
    expect(limits, 'told once').to.have.length(1);
    usage.forget('ws://b1');
    expect(usage.limited('ws://b1')).to.equal(false);
    const c = usage.join('ws://b2', () => undefined);
    c.count('BrowserContext', 1);
    c.count('BrowserContext', 1);
    expect(limits[1]).to.deep.equal(['ws://b2', 'more than 1 browser contexts open at once']);
  });
});
/** A stand-in browser server: announces `objects` to each connection, records what reaches it, echoes it back. */
async function fakeBrowser(objects: string[]) {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((r) => server.once('listening', () => r()));
  const received: Msg[] = [];
  const sockets: WebSocket[] = [];
  server.on('connection', (ws) => {
    sockets.push(ws);
    for (const m of objects) ws.send(m);
    ws.on('message', (data) => {
      received.push(JSON.parse(data.toString()) as Msg);
      ws.send(data.toString());
    });
  });
  return {
    target: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/browser`,
    received,
    /** Sends to every connection, as the server would. */
    send: (m: string) => sockets.forEach((ws) => ws.send(m)),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A runner's connection: every message it gets, in order. */
function runner(url: string): Promise<{ ws: WebSocket; next: () => Promise<Msg>; closed: Promise<number> }> {
  const ws = new WebSocket(url);
  const inbox: Msg[] = [];
  const waiting: Array<(m: Msg) => void> = [];
  ws.on('message', (d) => {
    const m = JSON.parse(d.toString()) as Msg;
    const w = waiting.shift();
    if (w) w(m);
    else inbox.push(m);
  });
  const next = () => new Promise<Msg>((r) => (inbox.length ? r(inbox.shift()!) : waiting.push(r)));
  const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, next, closed }));
    ws.once('error', reject);
  });
}

const until = async (cond: () => boolean) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(cond()).to.equal(true);
};

describe('browser relay: live connections', () => {
  const OBJECTS = [
    create('', 'Playwright', 'Playwright'),
    create('Playwright', 'Browser', 'browser@1'),
    create('browser@1', 'BrowserContext', 'context@1'),
    create('context@1', 'Page', 'page@1'),
    create('context@1', 'Artifact', 'artifact@1'),
  ];
  const relays: BrowserRelay[] = [];
  const make = (opts: Partial<ConstructorParameters<typeof BrowserRelay>[0]> = {}) => {
    const relay = new BrowserRelay({
      proxyUrl: async () => PROXY,
      transport: 'tcp',
      refuseSchemes: true,
      filter: true,
      log: createLogger('silent'),
      ...opts,
    });
    relays.push(relay);
    return relay;
  };
  after(async () => {
    for (const r of relays) await r.close();
  });

  it('forwards allowed calls (rewritten where the list says), answers refused ones itself, and counts the pages and contexts of the browser', async () => {
    const browser = await fakeBrowser(OBJECTS);
    const relay = make();
    const { url } = await relay.endpointFor('org_a', browser.target);
    const r = await runner(url);
    for (let i = 0; i < OBJECTS.length; i++) await r.next();
    expect(relay.counts(browser.target)).to.deep.equal({ pages: 1, contexts: 1 });
    r.ws.send(
      JSON.stringify({ id: 1, guid: 'browser@1', method: 'newContext', params: { proxy: { server: 'direct://' } } }),
    );
    expect(await r.next()).to.deep.include({ id: 1, method: 'newContext', params: { proxy: { server: PROXY } } });
    r.ws.send(JSON.stringify({ id: 2, guid: 'artifact@1', method: 'saveAs', params: { path: '/etc/x' } }));
    expect(await r.next()).to.deep.equal({
      id: 2,
      error: {
        error: {
          name: 'Error',
          message:
            "The call Artifact.saveAs is not available to browser scripts: it writes a file on the service's machine (scripts read downloads as streams: download.createReadStream()).",
          stack: '',
        },
      },
    });
    // The client waits for no answer to __waitInfo__: a refused one is dropped without one.
    r.ws.send(
      JSON.stringify({ id: 4, guid: 'page@404', method: '__waitInfo__', params: { waitId: 'w', phase: 'log' } }),
    );
    r.ws.send(JSON.stringify({ id: 3, guid: 'page@404', method: 'close', params: {} }));
    expect(await r.next()).to.deep.nested.include({ id: 3, 'error.error.name': 'TargetClosedError' });
    expect(browser.received.map((m) => m.id)).to.deep.equal([1]);
    browser.send(create('context@1', 'Page', 'page@2'));
    await r.next();
    expect(relay.counts(browser.target)).to.deep.equal({ pages: 2, contexts: 1 });
    browser.send(dispose('context@1'));
    await r.next();
    expect(relay.counts(browser.target), "a context's pages go with it").to.deep.equal({ pages: 0, contexts: 0 });
    browser.send(create('browser@1', 'BrowserContext', 'context@2'));
    await r.next();
    r.ws.close();
    await until(() => relay.counts(browser.target).contexts === 0);
    await browser.close();
  });

  it("past a limit: tells onLimit once with the reason, ends the browser's runner connections and takes no new one", async () => {
    const browser = await fakeBrowser(OBJECTS);
    const told: Array<[string, string]> = [];
    const relay = make({ limits: { pages: 2, contexts: 3 }, onLimit: (t, why) => told.push([t, why]) });
    const { url } = await relay.endpointFor('org_a', browser.target);
    const first = await runner(url);
    const second = await runner(url);
    await until(() => relay.counts(browser.target).pages === 2);
    expect(told).to.deep.equal([]);
    browser.send(create('context@1', 'Page', 'page@3'));
    expect(await first.closed).to.be.a('number');
    expect(await second.closed).to.be.a('number');
    expect(told).to.deep.equal([[browser.target, 'more than 2 pages open at once']]);
    const late = await runner(url);
    expect(await late.closed).to.equal(4008);
    expect(told).to.have.length(1);
    await until(() => relay.counts(browser.target).pages === 0);
    relay.forget(browser.target);
    await browser.close();
  });

  it('with filtering off (the test-only switch) forwards every call unchanged, and still counts', async () => {
    const browser = await fakeBrowser(OBJECTS);
    const relay = make({ filter: false });
    const { url } = await relay.endpointFor('org_a', browser.target);
    const r = await runner(url);
    for (let i = 0; i < OBJECTS.length; i++) await r.next();
    const calls = [
      { id: 1, guid: 'artifact@1', method: 'saveAs', params: { path: '/etc/x' } },
      { id: 2, guid: 'browser@1', method: 'newContext', params: { proxy: { server: 'direct://' } } },
      { id: 3, guid: 'page@404', method: 'goto', params: { url: 'file:///etc/passwd' } },
    ];
    for (const c of calls) {
      r.ws.send(JSON.stringify(c));
      expect(await r.next()).to.deep.equal(c);
    }
    expect(browser.received).to.deep.equal(calls);
    expect(relay.counts(browser.target)).to.deep.equal({ pages: 1, contexts: 1 });
    r.ws.close();
    await browser.close();
  });
});

describe('browser relay: one Unix socket per organisation', () => {
  let browser: Awaited<ReturnType<typeof fakeBrowser>>;
  let relay: BrowserRelay;

  before(async () => {
    browser = await fakeBrowser([create('', 'Frame', 'frame@1')]);
    relay = new BrowserRelay({
      proxyUrl: async () => PROXY,
      transport: 'unix',
      refuseSchemes: true,
      filter: true,
      log: createLogger('silent'),
    });
  });
  after(async () => {
    await relay.close();
    await browser.close();
  });

  /** Connects as a runner would, with the socket at its host path instead of RELAY_DIR_IN_SANDBOX. */
  const connect = (url: string, socketDir: string) =>
    runner(url.replace(`ws+unix://${RELAY_DIR_IN_SANDBOX}/`, `ws+unix://${socketDir}/`));

  it("forwards on the organisation's own socket, answers refused calls itself, and closes a path of another organisation", async () => {
    const a = await relay.endpointFor('org_a', browser.target);
    const b = await relay.endpointFor('org_b', `${browser.target}?b`);
    expect(a.url).to.match(new RegExp(`^ws\\+unix://${RELAY_DIR_IN_SANDBOX}/relay\\.sock:/[0-9a-f]{48}$`));
    expect(a.socketDir).to.be.a('string');
    expect(a.socketDir).to.not.equal(b.socketDir);
    expect(path.dirname(a.socketDir!)).to.equal(path.dirname(b.socketDir!));

    const own = await connect(a.url, a.socketDir!);
    expect(await own.next()).to.include({ method: '__create__' });
    own.ws.send(JSON.stringify({ id: 1, guid: 'frame@1', method: 'goto', params: { url: 'https://a.example/' } }));
    expect(await own.next()).to.deep.include({ id: 1, method: 'goto' });
    own.ws.send(JSON.stringify({ id: 2, guid: 'frame@1', method: 'goto', params: { url: 'file:///etc/passwd' } }));
    expect(await own.next()).to.deep.equal({
      id: 2,
      error: { error: { name: 'Error', message: navigationRefusal('file:///etc/passwd'), stack: '' } },
    });
    own.ws.close();

    // B's browser path on A's socket leads nowhere.
    const crossed = await connect(b.url, a.socketDir!);
    expect(await crossed.closed).to.equal(4004);
  });

  it('stops listening for an organisation whose last browser is gone, and listens again in the same folder for its next one', async () => {
    const first = await relay.endpointFor('org_c', `${browser.target}?c1`);
    relay.forget(`${browser.target}?c1`);
    await new Promise((r) => setTimeout(r, 50));
    await connect(first.url, first.socketDir!).then(
      () => expect.fail('connected to a closed socket'),
      (err: NodeJS.ErrnoException) => expect(err.code).to.match(/ENOENT|ECONNREFUSED/),
    );
    const second = await relay.endpointFor('org_c', `${browser.target}?c2`);
    expect(second.socketDir).to.equal(first.socketDir);
    const ok = await connect(second.url, second.socketDir!);
    ok.ws.close();
  });
});
