/**
 * browser-automation_operator_run and _continue against real Chromium and pages served on
 * loopback (a form with a file input, frames, shadow DOM, a download, a login that sets a
 * cookie, an ad script), driven by the scripted OpenAI-compatible model server
 * (test/helpers/model-server.ts): the model is the only stand-in. The scripted "model" reads the
 * snapshot it is sent and answers tool calls naming refs from it, as a real model would.
 * Covers the action cache (MISS, then HIT with zero model calls, HEALED after the page changed,
 * expiry with an injected clock, no caching for screenshot tasks), files (extract, download,
 * the session trace), saved logins, blockAds, the arguments reported as not applied, and bad input.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import type { Duplex } from 'node:stream';
import path from 'node:path';
import { expect } from 'chai';
import type { ValidateFunction } from 'ajv';
import * as validators from '../../../generated/validators/schemas.js';
import { call, createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import {
  startModelServer,
  reply,
  type ModelServer,
  type Reply,
  type ScriptRequest,
} from '../../helpers/model-server.js';
import { callTool } from '../gateway/helpers.js';
import { requireChromium } from '../../helpers/chromium.js';

const startOutput = validators.BrowserAutomationOperatorRunOutput as unknown as ValidateFunction;
const pollOutput = validators.BrowserAutomationOperatorRunContinueOutput as unknown as ValidateFunction;

interface Site {
  url: string;
  /** Paths requested, in order. */
  hits: string[];
  /** Renames the form's submit button (a changed page, for heals). */
  submitLabel: string;
  /** The basket's total (a page whose text changes between runs). */
  total: string;
  orders: number;
  close(): Promise<void>;
}

function formPage(label: string): string {
  return `<!doctype html><html><head><title>Order</title></head><body><h1>New order</h1>
<form id="f"><label for="name">Name</label><input id="name">
<label for="size">Size</label><select id="size"><option>S</option><option>M</option><option>L</option></select>
<label><input type="checkbox" id="terms"> I accept the terms</label>
<label for="doc">Attachment</label><input type="file" id="doc">
<button type="button" id="go">${label}</button></form>
<p role="status" id="out"></p>
<script>
document.getElementById('go').onclick = async () => {
  // The request starts in the click itself (the operator waits for the requests an action starts).
  const f = document.getElementById('doc').files[0];
  const body = JSON.stringify({ name: document.getElementById('name').value, size: document.getElementById('size').value,
    terms: document.getElementById('terms').checked, file: f ? f.name + ' (' + f.size + ' bytes, ' + f.type + ')' : null });
  const r = await fetch('/orders', { method: 'POST', body });
  document.getElementById('out').textContent = await r.text();
};
</script></body></html>`;
}

const FRAMES = `<!doctype html><html><head><title>Widgets</title></head><body><h1>Widgets</h1>
<div id="host"></div>
<script>
const root = document.getElementById('host').attachShadow({ mode: 'open' });
root.innerHTML = '<button id="sb">Shadow switch</button><span id="ss">shadow off</span>';
root.getElementById('sb').onclick = () => { root.getElementById('ss').textContent = 'shadow on'; };
</script>
<iframe src="/inner" title="Inner widget"></iframe>
<a href="/report.csv" download>Download report</a></body></html>`;
const INNER = `<!doctype html><html><body><button onclick="document.getElementById('fs').textContent='frame on'">Frame switch</button><span id="fs">frame off</span></body></html>`;
const LOGIN = `<!doctype html><html><head><title>Sign in</title></head><body><h1>Sign in</h1>
<form method="post" action="/login"><label for="u">User</label><input id="u" name="user"><label for="p">Password</label><input id="p" name="password" type="password"><button>Sign in</button></form></body></html>`;
const PAD = `<!doctype html><html><head><title>Pad</title><style>body{margin:0} #add{position:absolute;left:100px;top:100px;width:200px;height:80px} #text{position:absolute;left:100px;top:300px;width:300px;height:40px}</style></head>
<body><button id="add">Add one</button><input id="text" aria-label="Text"><p id="out" style="position:absolute;top:400px">count 0</p>
<script>let count = 0;
document.getElementById('add').onclick = () => { count++; document.getElementById('out').textContent = 'count ' + count; };
document.getElementById('text').onkeydown = (e) => { if (e.key === 'Enter') fetch('/pad?value=' + encodeURIComponent(e.target.value) + '&count=' + count); };
</script></body></html>`;
const ADS = `<!doctype html><html><head><title>News</title><script src="/ads/banner.js"></script></head><body><h1>News of the day</h1></body></html>`;

function site(): Promise<Site> {
  const s: Site = {
    url: '',
    hits: [],
    submitLabel: 'Submit order',
    total: '99.50',
    orders: 0,
    close: async () => undefined,
  };
  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    s.hits.push(url);
    const html = (body: string) => res.writeHead(200, { 'content-type': 'text/html' }).end(body);
    if (url === '/form') return html(formPage(s.submitLabel));
    if (url === '/frames') return html(FRAMES);
    if (url === '/basket')
      return html(
        `<!doctype html><html><head><title>Basket</title></head><body><h1>Basket</h1><p>2 items</p><p role="status">Total: ${s.total} EUR</p></body></html>`,
      );
    if (url === '/inner') return html(INNER);
    if (url === '/ads') return html(ADS);
    if (url === '/pad') return html(PAD);
    if (url.startsWith('/pad?')) return res.writeHead(204).end();
    if (url === '/ads/banner.js')
      return res.writeHead(200, { 'content-type': 'text/javascript' }).end('document.title += " (ad)";');
    if (url === '/report.csv')
      return res
        .writeHead(200, { 'content-type': 'text/csv', 'content-disposition': 'attachment; filename="report.csv"' })
        .end('a,b\n1,2\n');
    if (url === '/login' && req.method === 'POST') {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const user = new URLSearchParams(body).get('user') ?? '';
        res
          .writeHead(303, {
            location: '/account',
            'set-cookie': `session=${encodeURIComponent(user)}; Path=/; HttpOnly`,
          })
          .end();
      });
      return undefined;
    }
    if (url === '/login') return html(LOGIN);
    if (url === '/account') {
      const who = /session=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
      return html(
        `<!doctype html><html><head><title>Account</title></head><body><h1>${who ? `Signed in as ${decodeURIComponent(who)}` : 'Not signed in'}</h1></body></html>`,
      );
    }
    if (url === '/orders' && req.method === 'POST') {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const o = JSON.parse(body) as { name: string; size: string; terms: boolean; file: string | null };
        s.orders++;
        res
          .writeHead(200, { 'content-type': 'text/plain' })
          .end(
            `Order ${1000 + s.orders} for ${o.name}, size ${o.size}, terms ${o.terms ? 'accepted' : 'refused'}, file ${o.file ?? 'none'}`,
          );
      });
      return undefined;
    }
    res.writeHead(404).end();
    return undefined;
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      s.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      s.close = () =>
        new Promise<void>((r) => {
          server.closeAllConnections();
          server.close(() => r());
        });
      resolve(s);
    }),
  );
}

/** An upstream HTTP proxy standing in for a residential proxy provider (BROWSER_PROXY_URL): it records what it is asked for. */
function upstreamProxy(): Promise<{
  url: string;
  seen: Array<{ method: string; target: string; auth: string | undefined }>;
  close(): Promise<void>;
}> {
  const seen: Array<{ method: string; target: string; auth: string | undefined }> = [];
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method ?? '', target: req.url ?? '', auth: req.headers['proxy-authorization'] });
    const url = new URL(req.url ?? '');
    const { 'proxy-authorization': _auth, ...headers } = req.headers;
    const out = http.request(url, { method: req.method, headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    out.on('error', () => res.writeHead(502).end());
    req.pipe(out);
  });
  server.on('connect', (req: http.IncomingMessage, socket: Duplex) => {
    seen.push({ method: 'CONNECT', target: req.url ?? '', auth: req.headers['proxy-authorization'] });
    socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://scout:s3cret-pw@127.0.0.1:${(server.address() as AddressInfo).port}`,
        seen,
        close: () =>
          new Promise<void>((r) => {
            server.closeAllConnections();
            server.close(() => r());
          }),
      }),
    ),
  );
}

/** All the text the model was sent in the last user message (the page view). */
function pageView(req: ScriptRequest): string {
  const users = req.messages.filter((m: { role: string }) => m.role === 'user');
  const last = users[users.length - 1];
  if (!last) return '';
  return typeof last.content === 'string'
    ? last.content
    : last.content
        .filter((p: { type: string }) => p.type === 'text')
        .map((p: { text: string }) => p.text)
        .join('\n');
}

/** The ref of the element with this role and name in the snapshot, e.g. refOf(view, 'button', 'Submit order'). */
function refOf(view: string, role: string, name: string): string {
  const line = view.split('\n').find((l) => l.includes(`${role} "${name}"`) && /\[ref=/.test(l));
  const ref = line ? /\[ref=([a-z0-9]+)\]/.exec(line)?.[1] : undefined;
  if (!ref) throw new Error(`scripted model: no ${role} "${name}" in the snapshot:\n${view.slice(0, 3000)}`);
  return ref;
}

/** The ref of the first element with this role. */
function firstRef(view: string, role: string): string {
  const ref = new RegExp(`- ${role}\\b[^\\n]*\\[ref=([a-z0-9]+)\\]`).exec(view)?.[1];
  if (!ref) throw new Error(`scripted model: no ${role} in the snapshot:\n${view.slice(0, 3000)}`);
  return ref;
}

/** The text of the last `read …: "…"` line in the steps so far. */
function lastRead(view: string): string {
  const reads = [...view.matchAll(/: read [^\n]*?: ("(?:[^"\\]|\\.)*")/g)];
  return reads.length ? (JSON.parse(reads[reads.length - 1]![1]!) as string) : '';
}

/** A scripted model that takes one decision per request, in order, each from the page it is shown. */
function steps(...decide: Array<(view: string, req: ScriptRequest) => Reply>) {
  let i = 0;
  return (req: ScriptRequest): Reply => {
    const d = decide[i++];
    if (!d) return reply.error(500, `scripted model: no decision ${i} scripted`);
    return d(pageView(req), req);
  };
}

const ORDER_STEPS = [
  (v: string) => reply.toolCall('fill', { ref: refOf(v, 'textbox', 'Name'), text: 'Ada Lovelace' }),
  (v: string) => reply.toolCall('select', { ref: refOf(v, 'combobox', 'Size'), values: ['M'] }),
  (v: string) => reply.toolCall('check', { ref: refOf(v, 'checkbox', 'I accept the terms'), checked: true }),
  (v: string) => reply.toolCall('upload', { ref: refOf(v, 'button', 'Attachment'), fileNames: ['id.txt'] }),
  (v: string) => reply.toolCall('click', { ref: refOf(v, 'button', 'Submit order') }),
  (v: string) => reply.toolCall('extract', { ref: firstRef(v, 'status') }),
  (v: string) => reply.toolCall('done', { result: `Confirmation: ${lastRead(v)}` }),
];

describe('browser-automation: operator_run in real Chromium with a scripted model', function () {
  this.timeout(120_000);
  let server: TestServer;
  let org: TestOrg;
  let other: TestOrg;
  let pages: Site;
  let model: ModelServer;
  let dir: string;
  let residential: Awaited<ReturnType<typeof upstreamProxy>>;

  before(async function () {
    requireChromium(this);
    pages = await site();
    model = await startModelServer();
    residential = await upstreamProxy();
    dir = mkdtempSync(path.join(os.tmpdir(), 'sy-operator-'));
    writeFileSync(path.join(dir, 'ads.txt'), '! test list\n/ads/banner.js\n');
    server = await startTestServer('sqlite', {
      BROWSER_TASK_TIMEOUT_MS: '30000',
      OPENAI_COMPATIBLE_BASE_URL: model.baseUrl,
      DEFAULT_MODEL: 'openai-compatible/scripted',
      BROWSER_ADBLOCK_LISTS: path.join(dir, 'ads.txt'),
      BROWSER_PROXY_URL: residential.url,
      // The same scripted server answers Anthropic's Messages API, for cua (Anthropic's computer tool).
      ANTHROPIC_API_KEY: 'scripted-key',
      ANTHROPIC_BASE_URL: model.baseUrl,
    });
    org = await createTestOrg(server);
    other = await createTestOrg(server, 'Other org');
  });
  after(async () => {
    await server?.close();
    await pages?.close();
    await model?.close();
    await residential?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    model.requests.length = 0;
    pages.submitLabel = 'Submit order';
    pages.total = '99.50';
    server.app.services.browser.clock = Date.now;
  });

  async function start(as: TestOrg, args: Record<string, unknown>): Promise<any> {
    const res = await callTool(server, as.token, 'browser-automation', 'browser-automation_operator_run', args);
    if (res.isError || res.code) throw new Error(`operator_run: ${JSON.stringify(res)}`);
    expect(startOutput(res.structuredContent), JSON.stringify(startOutput.errors)).to.equal(true);
    return res.structuredContent;
  }

  async function finished(
    as: TestOrg,
    started: { sessionId: string; collectionId: string; logFileName: string },
    limitMs = 60_000,
  ): Promise<any> {
    const until = Date.now() + limitMs;
    for (;;) {
      const res = await callTool(server, as.token, 'browser-automation', 'browser-automation_operator_run_continue', {
        sessionId: started.sessionId,
        collectionId: started.collectionId,
        logFileName: started.logFileName,
      });
      expect(res.isError, JSON.stringify(res)).to.not.equal(true);
      const body = res.structuredContent;
      expect(pollOutput(body), `${JSON.stringify(pollOutput.errors)} ${JSON.stringify(res)}`).to.equal(true);
      if (body.status !== 'RUNNING') return body;
      if (Date.now() > until) throw new Error(`task ${started.sessionId} still RUNNING after ${limitMs} ms`);
      await new Promise((r) => setTimeout(r, 150));
    }
  }

  it('fills a form (text, select, checkbox, file input) with a live model, then the same task is a cache HIT with no model call and a fresh result', async () => {
    const task = `Open ${pages.url}/form and place an order for Ada Lovelace, size M, accepting the terms and attaching id.txt; report the confirmation`;
    const args = {
      task,
      cacheKey: 'Order001',
      agentMode: 'dom',
      recordSession: false,
      filesToUpload: [{ url: `${pages.url}/report.csv`, fileName: 'id.txt' }],
    };
    model.setScript(steps(...ORDER_STEPS));
    const first = await start(org, args);
    expect(first).to.include({ status: 'RUNNING' });
    expect(first.buildId).to.match(/^bld_[0-9a-f]{24}$/);
    expect(first.message).to.match(/operator_run_continue/);
    const done = await finished(org, first);
    expect(done.status, `${done.result}\n${done.logContent}`).to.equal('completed');
    expect(done.result).to.equal(
      'Confirmation: Order 1001 for Ada Lovelace, size M, terms accepted, file id.txt (8 bytes, text/csv)',
    );
    expect(done.message).to.match(/Cache MISS/);
    expect(done.logContent).to.match(/Cache MISS/);
    expect(model.requests).to.have.length(ORDER_STEPS.length);
    // The model saw the task, the file it may upload, and element refs; dom mode sends no screenshot.
    const firstRequest = JSON.stringify(model.requests[0]!.body.messages);
    expect(firstRequest).to.include('id.txt').and.include('[ref=e');
    expect(firstRequest).to.not.include('image_url');
    expect(model.requests[0]!.body.tool_choice).to.equal('required');

    model.requests.length = 0;
    const again = await start(org, args);
    expect(again.buildId).to.equal(first.buildId);
    const hit = await finished(org, again);
    expect(hit.status, `${hit.result}\n${hit.logContent}`).to.equal('completed');
    expect(hit.message).to.match(/Cache HIT/);
    expect(hit.logContent)
      .to.match(/Cache HIT/)
      .and.match(/replay finished with no model call/);
    expect(model.requests, 'a cache hit makes no model call').to.have.length(0);
    // Each completed cached run lists its build's replay script; uploads are not part of it.
    const replay = hit.files.find((f: { fileName: string }) => f.fileName === `replay-${first.buildId}.js`);
    expect(replay).to.include({ source: 'extract', mimeType: 'text/javascript' });
    const code = await (await fetch(replay.url)).text();
    expect(code)
      .to.include(`await page.goto(${JSON.stringify(`${pages.url}/form`)});`)
      .and.include('.fill("Ada Lovelace")')
      .and.include('.setChecked(true)')
      .and.include('Step 4 uploads id.txt');
    // The replay read the confirmation again: the result quotes the new order, not the recorded one.
    expect(hit.result).to.equal(
      'Confirmation: Order 1002 for Ada Lovelace, size M, terms accepted, file id.txt (8 bytes, text/csv)',
    );
    expect(pages.orders).to.equal(2);
  });

  const ORDER_TASK = () =>
    `Open ${pages.url}/form and place an order for Ada Lovelace, size M, accepting the terms and attaching id.txt; report the confirmation`;
  const orderArgs = (cacheKey: string, extra: Record<string, unknown> = {}) => ({
    task: ORDER_TASK(),
    cacheKey,
    agentMode: 'dom',
    recordSession: false,
    filesToUpload: [{ url: `${pages.url}/report.csv`, fileName: 'id.txt' }],
    ...extra,
  });

  it("the action cache is each organisation's own: another organisation's same task and cacheKey runs live (MISS, the model called), then hits its own entry", async () => {
    model.setScript(steps(...ORDER_STEPS));
    const mine = await finished(org, await start(org, orderArgs('Share001')));
    expect(mine.message, mine.logContent).to.match(/Cache MISS/);
    model.requests.length = 0;
    model.setScript(steps(...ORDER_STEPS));
    const theirs = await finished(other, await start(other, orderArgs('Share001')));
    expect(theirs.status, `${theirs.result}\n${theirs.logContent}`).to.equal('completed');
    expect(theirs.message, "another organisation's entry is not used").to.match(/Cache MISS/);
    expect(model.requests, 'the other organisation ran live').to.have.length(ORDER_STEPS.length);
    model.requests.length = 0;
    const theirsAgain = await finished(other, await start(other, orderArgs('Share001')));
    expect(theirsAgain.message).to.match(/Cache HIT/);
    expect(model.requests).to.have.length(0);
  });

  it('a replay whose element is gone re-infers that step with one model call (HEALED), rewrites the entry, and the next run is a HIT again', async () => {
    model.setScript(steps(...ORDER_STEPS));
    const first = await finished(org, await start(org, orderArgs('Heal0001')));
    expect(first.message).to.match(/Cache MISS/);
    pages.submitLabel = 'Place order';
    model.requests.length = 0;
    model.setScript(steps((v) => reply.toolCall('click', { ref: refOf(v, 'button', 'Place order') })));
    const healed = await finished(org, await start(org, orderArgs('Heal0001')));
    expect(healed.status, `${healed.result}\n${healed.logContent}`).to.equal('completed');
    expect(healed.message).to.match(/Cache HEALED/);
    expect(healed.logContent).to.match(
      /step 5 \(replayed\): click getByRole\('button', \{ name: 'Submit order' \}\) failed: .*re-inferring this step/,
    );
    expect(model.requests).to.have.length(1);
    // The heal request shows the recorded plan and which step failed.
    expect(pageView({ messages: model.requests[0]!.body.messages } as ScriptRequest)).to.match(
      /Step 5 cannot be repeated as recorded/,
    );
    expect(healed.result).to.match(
      /^Confirmation: Order \d+ for Ada Lovelace, size M, terms accepted, file id\.txt \(8 bytes, text\/csv\)$/,
    );

    model.requests.length = 0;
    const hit = await finished(org, await start(org, orderArgs('Heal0001')));
    expect(hit.message, hit.logContent).to.match(/Cache HIT/);
    expect(model.requests).to.have.length(0);
  });

  /** The scripted model's answer from the last read: "The total is <amount> EUR". */
  const totalFrom = (v: string) => {
    const amount = /Total: (\d+\.\d+) EUR/.exec(lastRead(v))?.[1];
    if (!amount) throw new Error(`scripted model: no total read in:\n${v.slice(0, 3000)}`);
    return reply.toolCall('done', { result: `The total is ${amount} EUR` });
  };
  const basketArgs = (cacheKey: string) => ({
    task: `Open ${pages.url}/basket and report the total`,
    cacheKey,
    agentMode: 'dom',
    recordSession: false,
  });

  it('a replay whose reads changed does not answer the recorded result: the model makes the result again (HEALED, one call); unchanged pages are a HIT with no model call', async () => {
    model.setScript(steps(() => reply.toolCall('extract', {}), totalFrom));
    const first = await finished(org, await start(org, basketArgs('Total001')));
    expect(first.status, `${first.result}\n${first.logContent}`).to.equal('completed');
    expect([first.result, model.requests.length]).to.deep.equal(['The total is 99.50 EUR', 2]);
    expect(first.message).to.match(/Cache MISS/);

    model.requests.length = 0;
    const same = await finished(org, await start(org, basketArgs('Total001')));
    expect(same.message, same.logContent).to.match(/Cache HIT/);
    expect([same.result, model.requests.length]).to.deep.equal(['The total is 99.50 EUR', 0]);

    pages.total = '12.00';
    model.setScript(steps(totalFrom));
    model.requests.length = 0;
    const changed = await finished(org, await start(org, basketArgs('Total001')));
    expect(changed.status, `${changed.result}\n${changed.logContent}`).to.equal('completed');
    expect(changed.result).to.equal('The total is 12.00 EUR');
    expect(changed.message).to.match(/Cache HEALED: the result was made again from the changed page \(1 model call\)/);
    expect(changed.logContent).to.match(/the page reads differently from the recording/);
    expect(model.requests, 'one model call, for the finish').to.have.length(1);
    // The finishing request shows the fresh read, and says the recorded result may be out of date.
    const asked = pageView({ messages: model.requests[0]!.body.messages } as ScriptRequest);
    expect(asked)
      .to.include('Total: 12.00 EUR')
      .and.match(/may be out of date/);

    // The entry was rewritten: the changed page, unchanged since, is a HIT with the new result.
    model.requests.length = 0;
    const again = await finished(org, await start(org, basketArgs('Total001')));
    expect(again.message, again.logContent).to.match(/Cache HIT/);
    expect([again.result, model.requests.length]).to.deep.equal(['The total is 12.00 EUR', 0]);
  });

  it('a result the model took from the page it saw (no extract) is answered again only on the same page: changed page HEALED with one call, unchanged HIT', async () => {
    const fromView = (v: string) => {
      const amount = /Total: (\d+\.\d+) EUR/.exec(v)?.[1];
      if (!amount) throw new Error(`scripted model: no total on the page:\n${v.slice(0, 3000)}`);
      return reply.toolCall('done', { result: `The total is ${amount} EUR` });
    };
    model.setScript(steps(fromView));
    const first = await finished(org, await start(org, basketArgs('Total003')));
    expect([first.result, model.requests.length]).to.deep.equal(['The total is 99.50 EUR', 1]);

    model.requests.length = 0;
    const same = await finished(org, await start(org, basketArgs('Total003')));
    expect(same.message, same.logContent).to.match(/Cache HIT/);
    expect([same.result, model.requests.length]).to.deep.equal(['The total is 99.50 EUR', 0]);

    pages.total = '12.00';
    model.setScript(steps(fromView));
    model.requests.length = 0;
    const changed = await finished(org, await start(org, basketArgs('Total003')));
    expect(changed.message, changed.logContent).to.match(/Cache HEALED/);
    expect(changed.logContent).to.match(/the page differs from the recording/);
    expect([changed.result, model.requests.length]).to.deep.equal(['The total is 12.00 EUR', 1]);
  });

  it('a result that is exactly a read is brought up to date from the fresh read with no model call', async () => {
    model.setScript(
      steps(
        (v) => reply.toolCall('extract', { ref: firstRef(v, 'status') }),
        (v) => reply.toolCall('done', { result: lastRead(v) }),
      ),
    );
    const first = await finished(org, await start(org, basketArgs('Total002')));
    expect([first.result, model.requests.length]).to.deep.equal(['Total: 99.50 EUR', 2]);

    pages.total = '12.00';
    model.requests.length = 0;
    const hit = await finished(org, await start(org, basketArgs('Total002')));
    expect(hit.status, `${hit.result}\n${hit.logContent}`).to.equal('completed');
    expect(hit.message, hit.logContent).to.match(/Cache HIT/);
    expect([hit.result, model.requests.length]).to.deep.equal(['Total: 12.00 EUR', 0]);
  });

  it('entries expire after cacheDurationDays by the service clock (injected), and an expired entry runs live and is rewritten', async () => {
    model.setScript(steps(...ORDER_STEPS));
    const first = await finished(org, await start(org, orderArgs('Expire01', { cacheDurationDays: 1 })));
    expect(first.message).to.match(/cached for 1 days/);
    const row = await server.app.services
      .db('browser_action_cache')
      .where({ org_id: org.orgId, cache_key: 'Expire01' })
      .first();
    expect(Date.parse(row.expires_at) - Date.parse(row.created_at)).to.equal(86_400_000);
    // Half a day later: still a hit.
    server.app.services.browser.clock = () => Date.now() + 43_200_000;
    model.requests.length = 0;
    expect((await finished(org, await start(org, orderArgs('Expire01', { cacheDurationDays: 1 })))).message).to.match(
      /Cache HIT/,
    );
    expect(model.requests).to.have.length(0);
    // Two days later: expired, so the task runs live again and the entry is written anew.
    server.app.services.browser.clock = () => Date.now() + 2 * 86_400_000;
    model.setScript(steps(...ORDER_STEPS));
    const expired = await finished(org, await start(org, orderArgs('Expire01', { cacheDurationDays: 1 })));
    expect(expired.message).to.match(/Cache MISS/);
    expect(model.requests).to.have.length(ORDER_STEPS.length);
    const rows = await server.app.services
      .db('browser_action_cache')
      .where({ org_id: org.orgId, cache_key: 'Expire01' });
    expect(rows).to.have.length(1);
    expect(Date.parse(rows[0].expires_at)).to.be.greaterThan(Date.now() + 2 * 86_400_000);
    // disableCache bypasses a live entry: the model is asked again.
    server.app.services.browser.clock = Date.now;
    model.requests.length = 0;
    model.setScript(steps(...ORDER_STEPS));
    const bypass = await finished(org, await start(org, orderArgs('Heal0001', { disableCache: true })));
    expect(bypass.message).to.match(/Cache off: disableCache is true/);
    expect(model.requests).to.have.length(ORDER_STEPS.length);
  });

  it('a task that mentions a screenshot is never cached, and the screenshot is a PNG file of the task (source extract)', async () => {
    const args = {
      task: `Take a screenshot of ${pages.url}/frames`,
      cacheKey: 'Shot0001',
      agentMode: 'dom',
      recordSession: false,
    };
    for (let run = 1; run <= 2; run++) {
      model.requests.length = 0;
      model.setScript(
        steps(
          () => reply.toolCall('screenshot', { fileName: 'widgets.png' }),
          () => reply.toolCall('done', { result: 'Saved widgets.png' }),
        ),
      );
      const done = await finished(org, await start(org, args));
      expect(done.status, done.logContent).to.equal('completed');
      expect(done.message).to.match(/Cache off: the task mentions a screenshot/);
      expect(model.requests, `run ${run} asks the model`).to.have.length(2);
      const shot = done.files.find((f: { fileName: string }) => f.fileName === 'widgets.png');
      expect(shot).to.include({ mimeType: 'image/png', source: 'extract' });
      const png = Buffer.from(await (await fetch(shot.url)).arrayBuffer());
      expect(png.subarray(1, 4).toString()).to.equal('PNG');
    }
    expect(await server.app.services.db('browser_action_cache').where({ cache_key: 'Shot0001' })).to.have.length(0);
  });

  it('hybrid mode: the snapshot reaches into an iframe and an open shadow root, a screenshot comes with each step, click_at and refs inside frames work, and a download and the session trace are files of the task', async () => {
    const boxOf = (v: string, name: string) => {
      const m = new RegExp(`button "${name}"[^\\n]*\\[box=(\\d+),(\\d+),(\\d+),(\\d+)\\]`).exec(v);
      if (!m) throw new Error(`no box for ${name} in\n${v}`);
      return { x: Number(m[1]) + Number(m[3]) / 2, y: Number(m[2]) + Number(m[4]) / 2 };
    };
    model.setScript(
      steps(
        (v) => reply.toolCall('click_at', boxOf(v, 'Shadow switch')),
        (v) => reply.toolCall('click', { ref: refOf(v, 'button', 'Frame switch') }),
        (v) => reply.toolCall('click', { ref: refOf(v, 'link', 'Download report') }),
        (v) =>
          reply.toolCall('done', {
            result: `${/shadow on/.test(v) ? 'shadow on' : 'shadow off'}, ${/frame on/.test(v) ? 'frame on' : 'frame off'}`,
          }),
      ),
    );
    const started = await start(org, {
      task: `On ${pages.url}/frames switch on both widgets and download the report`,
      cacheKey: 'Frames01',
      viewportWidth: 1024,
      viewportHeight: 700,
    });
    const done = await finished(org, started);
    expect(done.status, `${done.result}\n${done.logContent}`).to.equal('completed');
    expect(done.result).to.equal('shadow on, frame on');
    const first = JSON.stringify(model.requests[0]!.body.messages);
    expect(first).to.include('image_url').and.include('[box=');
    expect(first).to.match(/button \\"Frame switch\\" \[ref=f\d+e\d+\]/);
    expect(first).to.match(/button \\"Shadow switch\\" \[ref=e\d+\]/);
    const tools = (model.requests[0]!.body.tools as Array<{ function: { name: string } }>).map((t) => t.function.name);
    expect(tools).to.include.members(['click', 'click_at', 'type_text', 'extract', 'done']);
    const byName = Object.fromEntries(done.files.map((f: { fileName: string }) => [f.fileName, f]));
    expect(byName['report.csv']).to.include({ source: 'download', size: 8 });
    expect(await (await fetch(byName['report.csv'].url)).text()).to.equal('a,b\n1,2\n');
    const trace = byName[`session-${started.sessionId}.zip`];
    expect(trace).to.include({ mimeType: 'application/zip', source: 'extract' });
    expect(
      Buffer.from(await (await fetch(trace.url)).arrayBuffer())
        .subarray(0, 2)
        .toString(),
    ).to.equal('PK');
    expect(done.logContent).to.match(/recordSession: saved the session trace/);
    expect(byName[`replay-${started.buildId}.js`]).to.include({ source: 'extract' });
    // The download, the trace, the replay script and the log are items of the collection.
    const items = await call(server.baseUrl, 'GET', `/v1/collections/${started.collectionId}`, { token: org.token });
    expect(items.body.itemCount).to.equal(4);
  });

  it('signs in through a login page that sets a cookie (the password is in no log and not in clear in the cache), and a saved login starts the task signed in', async () => {
    model.setScript(
      steps(
        (v) => reply.toolCall('fill', { ref: refOf(v, 'textbox', 'User'), text: 'ada' }),
        (v) => reply.toolCall('fill', { ref: refOf(v, 'textbox', 'Password'), text: 'pw-secret-9', submit: true }),
        (v) => reply.toolCall('extract', { ref: firstRef(v, 'heading') }),
        (v) => reply.toolCall('done', { result: lastRead(v) }),
      ),
    );
    const done = await finished(
      org,
      await start(org, {
        task: `Sign in at ${pages.url}/login as ada and tell who is signed in`,
        cacheKey: 'Login001',
        agentMode: 'dom',
        recordSession: false,
      }),
    );
    expect(done.status, `${done.result}\n${done.logContent}`).to.equal('completed');
    expect(done.result).to.equal('Signed in as ada');
    expect(done.logContent).to.not.include('pw-secret-9');
    const row = await server.app.services
      .db('browser_action_cache')
      .where({ org_id: org.orgId, cache_key: 'Login001' })
      .first();
    expect(row.entry_enc).to.be.a('string').and.not.include('pw-secret-9');
    const script = done.files.find((f: { fileName: string }) => f.fileName.startsWith('replay-'));
    const text = await (await fetch(script.url)).text();
    expect(text).to.not.include('pw-secret-9');
    expect(text).to.include('.fill("ada")').and.include('.fill(SECRET_1)').and.include("const SECRET_1 = '';");

    const host = new URL(pages.url).hostname;
    const saved = await call(server.baseUrl, 'POST', '/v1/browser-logins', {
      token: org.token,
      body: {
        label: 'Grace',
        service: 'test site',
        loginUrl: `${pages.url}/login`,
        storageState: {
          cookies: [
            {
              name: 'session',
              value: 'grace',
              domain: host,
              path: '/',
              expires: Math.floor(Date.now() / 1000) + 3600,
              httpOnly: true,
              secure: false,
              sameSite: 'Lax',
            },
          ],
          origins: [],
        },
      },
    });
    expect(saved.status, saved.text).to.equal(201);
    model.setScript(
      steps(
        (v) => reply.toolCall('extract', { ref: firstRef(v, 'heading') }),
        (v) => reply.toolCall('done', { result: lastRead(v) }),
      ),
    );
    const store = await call(server.baseUrl, 'POST', '/v1/collections', {
      token: org.token,
      body: { name: 'operator files', type: 'filestore' },
    });
    const inStore = await start(org, {
      task: `Open ${pages.url}/account and tell who is signed in`,
      cacheKey: 'Login002',
      agentMode: 'dom',
      recordSession: false,
      useContextService: saved.body.id,
      collectionId: store.body.collectionId,
    });
    expect(inStore.collectionId, 'the collection named is the one written to').to.equal(store.body.collectionId);
    const signedIn = await finished(org, inStore);
    expect(signedIn.result, signedIn.logContent).to.equal('Signed in as grace');
    expect(signedIn.logContent).to.match(/starting from saved login ctx_/);
    // Another organisation cannot use it.
    const foreign = await callTool(server, other.token, 'browser-automation', 'browser-automation_operator_run', {
      task: 'Open the account',
      cacheKey: 'Login003',
      useContextService: saved.body.id,
    });
    expect(foreign.isError).to.equal(true);
    expect(foreign.structuredContent.error).to.match(/No saved login/);
  });

  it('blockAds blocks requests the filter lists name (and only when on); proxies: true goes through BROWSER_PROXY_URL; region, advancedStealth and solveCaptchas are reported in the log as not applied; systemPrompt reaches the model', async () => {
    const titleOf = (v: string) => /Title: (.*)/.exec(v)?.[1] ?? '';
    model.setScript(steps((v) => reply.toolCall('done', { result: titleOf(v) })));
    pages.hits.length = 0;
    const blocked = await finished(
      org,
      await start(org, {
        task: `Open ${pages.url}/ads and give its title`,
        cacheKey: 'Ads00001',
        agentMode: 'dom',
        recordSession: false,
        region: 'eu-central-1',
        proxies: true,
        advancedStealth: true,
        systemPrompt: 'You are a careful news reader.',
      }),
    );
    // systemPrompt follows the operator's own instructions in the system message.
    const system = model.requests[0]!.body.messages.find((m: { role: string }) => m.role === 'system');
    expect(system.content)
      .to.match(/^You operate a web browser/)
      .and.match(/You are a careful news reader\.$/);
    expect(blocked.status, blocked.logContent).to.equal('completed');
    expect(blocked.result).to.equal('News');
    expect(pages.hits).to.include('/ads').and.not.include('/ads/banner.js');
    expect(blocked.logContent)
      .to.match(/blockAds: on/)
      .and.match(/region eu-central-1: not applied/)
      .and.match(/proxies: through BROWSER_PROXY_URL \(127\.0\.0\.1:\d+\), after the outbound guard/)
      .and.match(/advancedStealth: not applied/)
      .and.match(/solveCaptchas: not applied/);

    model.setScript(steps((v) => reply.toolCall('done', { result: titleOf(v) })));
    pages.hits.length = 0;
    const open = await finished(
      org,
      await start(org, {
        task: `Open ${pages.url}/ads and give its title`,
        cacheKey: 'Ads00002',
        agentMode: 'dom',
        recordSession: false,
        blockAds: false,
        solveCaptchas: false,
      }),
    );
    expect(open.result).to.equal('News (ad)');
    expect(pages.hits).to.include('/ads/banner.js');
    expect(open.logContent).to.not.match(/blockAds|solveCaptchas|region|proxies/);
    // proxies: true went through the upstream proxy with its credentials (which no log shows); without it, nothing did.
    const asked = residential.seen.filter((r) => r.target.startsWith(`${pages.url}/ads`));
    expect(asked.map((r) => r.target)).to.deep.equal([`${pages.url}/ads`]);
    expect(asked[0]!.auth).to.equal(`Basic ${Buffer.from('scout:s3cret-pw').toString('base64')}`);
    expect(blocked.logContent).to.not.include('s3cret-pw');
  });

  it('a failed action is told to the model, which goes on; maxSteps bounds the model calls; a model error fails the task with the reason', async () => {
    model.setScript(
      steps(
        () => reply.toolCall('click', { ref: 'e999' }),
        () => reply.toolCall('click', { ref: 42 }),
        () => reply.toolCall('fly', { to: 'the moon' }),
        (v) =>
          reply.toolCall('done', {
            result: [
              /FAILED: no element e999/,
              /FAILED: click was called with arguments that do not fit its schema/,
              /FAILED: there is no tool fly/,
            ]
              .map((r) => (r.test(v) ? 'seen' : 'missed'))
              .join(' '),
          }),
      ),
    );
    const recovered = await finished(
      org,
      await start(org, {
        task: `Open ${pages.url}/frames and click something`,
        cacheKey: 'Fail0001',
        agentMode: 'dom',
        recordSession: false,
      }),
    );
    expect(recovered.status, recovered.logContent).to.equal('completed');
    expect(recovered.result, recovered.logContent).to.equal('seen seen seen');

    model.setScript(() => reply.toolCall('scroll', { direction: 'down' }));
    model.requests.length = 0;
    const spent = await finished(
      org,
      await start(org, {
        task: `Open ${pages.url}/frames and scroll forever`,
        cacheKey: 'Fail0002',
        agentMode: 'dom',
        recordSession: false,
        maxSteps: 3,
      }),
    );
    expect(spent.status).to.equal('failed');
    expect(spent.result).to.equal('The operator used all 3 steps (maxSteps) without finishing the task.');
    expect(model.requests).to.have.length(3);

    model.setScript(() => reply.error(500, 'model exploded'));
    const broken = await finished(
      org,
      await start(org, {
        task: `Open ${pages.url}/frames`,
        cacheKey: 'Fail0003',
        agentMode: 'dom',
        recordSession: false,
      }),
    );
    expect(broken.status).to.equal('failed');
    expect(broken.result).to.match(/model exploded/);
    expect(
      await server.app.services.db('browser_action_cache').whereIn('cache_key', ['Fail0002', 'Fail0003']),
    ).to.have.length(0);

    // done with success false fails the task with the model's reason, and caches nothing.
    model.setScript(steps(() => reply.toolCall('done', { result: 'The page has no order form.', success: false })));
    const gaveUp = await finished(
      org,
      await start(org, {
        task: `Open ${pages.url}/frames and order`,
        cacheKey: 'Fail0004',
        agentMode: 'dom',
        recordSession: false,
      }),
    );
    expect(gaveUp).to.include({ status: 'failed', result: 'The page has no order form.' });
  });

  it('validates arguments (maxSteps 0 or 101, a bad cacheKey, a multi-line task) and refuses cua, unreachable files to upload, unknown or foreign sessions', async () => {
    const tool = (as: TestOrg, name: string, args: Record<string, unknown>) =>
      callTool(server, as.token, 'browser-automation', `browser-automation_${name}`, args);
    for (const [args, field] of [
      [{ task: 'x', cacheKey: 'Abcd1234', maxSteps: 0 }, 'maxSteps'],
      [{ task: 'x', cacheKey: 'Abcd1234', maxSteps: 101 }, 'maxSteps'],
      [{ task: 'x', cacheKey: 'Abc123' }, 'cacheKey'],
      [{ task: 'x', cacheKey: 'Abcd123!' }, 'cacheKey'],
      [{ task: 'line one\nline two', cacheKey: 'Abcd1234' }, 'task'],
      [{ task: 'x', cacheKey: 'Abcd1234', cacheDurationDays: 31 }, 'cacheDurationDays'],
      [{ task: 'x', cacheKey: 'Abcd1234', agentMode: 'vision' }, 'agentMode'],
      [{ task: 'x' }, 'cacheKey'],
    ] as Array<[Record<string, unknown>, string]>) {
      const res = await tool(org, 'operator_run', args);
      expect(res.code, JSON.stringify(args)).to.equal(-32000);
      expect(
        res.data.errors.map((e: { field: string }) => e.field),
        JSON.stringify(args),
      ).to.include(field);
    }
    const cua = await tool(org, 'operator_run', { task: 'x', cacheKey: 'Abcd1234', agentMode: 'cua' });
    expect(cua.isError).to.equal(true);
    expect(cua.structuredContent.error).to.match(/computer-use/);
    const unreachable = await tool(org, 'operator_run', {
      task: 'x',
      cacheKey: 'Abcd1234',
      filesToUpload: [{ url: 'http://127.0.0.1:9/nothing', fileName: 'a.pdf' }],
    });
    expect(unreachable.isError).to.equal(true);
    expect(unreachable.structuredContent.error).to.match(/filesToUpload: "a.pdf" could not be fetched/);
    const missing = await tool(org, 'operator_run', {
      task: 'x',
      cacheKey: 'Abcd1234',
      filesToUpload: [{ url: `${pages.url}/nope`, fileName: 'a.pdf' }],
    });
    expect(missing.structuredContent.error).to.match(/HTTP 404/);

    const unknown = await tool(org, 'operator_run_continue', {
      sessionId: 'ses_00000000000000000000000000000000',
      collectionId: 'col_x',
      logFileName: 'x.log',
    });
    expect(unknown.isError).to.equal(true);
    model.setScript(steps(() => reply.toolCall('done', { result: 'ok' })));
    const started = await start(org, {
      task: `Open ${pages.url}/frames`,
      cacheKey: 'Scope001',
      agentMode: 'dom',
      recordSession: false,
    });
    const foreign = await tool(other, 'operator_run_continue', {
      sessionId: started.sessionId,
      collectionId: started.collectionId,
      logFileName: started.logFileName,
    });
    expect(foreign.isError).to.equal(true);
    const wrongKind = await tool(org, 'playwright_run_continue', { sessionId: started.sessionId });
    expect(wrongKind.isError).to.equal(true);
    expect(wrongKind.structuredContent.error).to.match(/operator_run_continue/);
    expect((await finished(org, started)).status).to.equal('completed');
    server.assertResponsesValid();
  });

  it('with no model configured at all, operator_run answers a tool error saying what to set, before anything is recorded', async () => {
    const bare = await startTestServer('sqlite');
    try {
      const someone = await createTestOrg(bare);
      const res = await callTool(bare, someone.token, 'browser-automation', 'browser-automation_operator_run', {
        task: 'Open a page',
        cacheKey: 'Abcd1234',
      });
      expect(res.isError).to.equal(true);
      expect(res.structuredContent.error)
        .to.match(/GOOGLE_GENERATIVE_AI_API_KEY/)
        .and.match(/DEFAULT_MODEL/);
      expect(await bare.app.services.db('browser_tasks')).to.have.length(0);
    } finally {
      await bare.close();
    }
  });

  it("cua: a computer-use model (Anthropic's computer tool, scripted) clicks, types and presses keys by screenshots; the run is cached and replays with no model call", async () => {
    const computer = (input: Record<string, unknown>) => reply.toolCall('computer', input);
    const script = () =>
      steps(
        () => computer({ action: 'screenshot' }),
        () => computer({ action: 'left_click', coordinate: [200, 140] }),
        () => computer({ action: 'left_click', coordinate: [250, 320] }),
        () => computer({ action: 'type', text: 'hello' }),
        () => computer({ action: 'key', text: 'Return' }),
        () => reply.toolCall('done', { result: 'Sent hello after one click' }),
      );
    model.setScript(script());
    pages.hits.length = 0;
    const args = {
      task: `Open ${pages.url}/pad, press Add one, then type hello in the text box and press Enter`,
      cacheKey: 'Cua00001',
      agentMode: 'cua',
      model: 'anthropic/claude-sonnet-4',
      recordSession: false,
      viewportWidth: 800,
      viewportHeight: 600,
    };
    const cuaStart = await start(org, args);
    const done = await finished(org, cuaStart);
    expect(done.status, `${done.result}\n${done.logContent}`).to.equal('completed');
    expect(done.result).to.equal('Sent hello after one click');
    expect(done.message).to.match(/Cache MISS/);
    expect(done.logContent)
      .to.match(/model: anthropic\/claude-sonnet-4 \(computer use\)/)
      .and.match(/pressed Enter/);
    expect(pages.hits).to.include('/pad?value=hello&count=1');
    // Anthropic's wire format: the computer tool at the viewport's size, and a screenshot in every tool result.
    expect(model.requests).to.have.length(6);
    const firstBody = model.requests[0]!.body;
    expect(firstBody.model, "the spec's claude-sonnet-4 is sent as Anthropic's API id").to.equal('claude-sonnet-4-0');
    expect(firstBody.tools).to.deep.include({
      type: 'computer_20250124',
      name: 'computer',
      display_width_px: 800,
      display_height_px: 600,
    });
    const results = JSON.stringify(model.requests[2]!.body.messages);
    expect(results).to.include('tool_result').and.include('"type":"image"');

    model.requests.length = 0;
    pages.hits.length = 0;
    const hit = await finished(org, await start(org, args));
    expect(hit.status, hit.logContent).to.equal('completed');
    expect(hit.message).to.match(/Cache HIT/);
    expect(model.requests).to.have.length(0);
    expect(pages.hits).to.include('/pad?value=hello&count=1');

    // The build's replay script runs as a playwright_run script (code = the file, buildId = the build) and does the same.
    const replay = hit.files.find((f: { fileName: string }) => f.fileName === `replay-${cuaStart.buildId}.js`);
    const code = await (await fetch(replay.url)).text();
    pages.hits.length = 0;
    const scripted = await callTool(server, org.token, 'browser-automation', 'browser-automation_playwright_run', {
      code,
      buildId: cuaStart.buildId,
      viewportWidth: 800,
      viewportHeight: 600,
    });
    expect(scripted.structuredContent.buildId).to.equal(cuaStart.buildId);
    let ran: any;
    for (let i = 0; i < 300; i++) {
      ran = (
        await callTool(server, org.token, 'browser-automation', 'browser-automation_playwright_run_continue', {
          sessionId: scripted.structuredContent.sessionId,
        })
      ).structuredContent;
      if (ran.status !== 'RUNNING') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(ran.status, `${ran.result}\n${code}`).to.equal('completed');
    expect(ran.result).to.equal('Sent hello after one click');
    expect(pages.hits).to.include('/pad?value=hello&count=1');

    // cua with a model that has no computer use, and no such DEFAULT_MODEL: a clear refusal.
    const refused = await callTool(server, org.token, 'browser-automation', 'browser-automation_operator_run', {
      ...args,
      model: 'openai/gpt-4o',
    });
    expect(refused.isError).to.equal(true);
    expect(refused.structuredContent.error).to.match(/agentMode cua needs a computer-use model/);
  });
});
