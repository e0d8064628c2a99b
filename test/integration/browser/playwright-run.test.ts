/**
 * browser-automation_playwright_run and _continue against real Chromium (/usr/bin/chromium,
 * installed by scripts/ensure-services.sh) and pages served on loopback: the start response,
 * polling to completed or failed, the script's own file and captured downloads saved in the
 * collection with signed URLs that really download, the log, the time limit, isolation of the
 * script from the service, stale tasks, organisation scoping, and a server without Chromium.
 * Every tool response is checked against its output schema.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { ValidateFunction } from 'ajv';
import * as validators from '../../../generated/validators/schemas.js';
import { pruneFinished } from '../../../src/browser/tasks.js';
import { call, createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { callTool } from '../gateway/helpers.js';
import { requireChromium } from '../../helpers/chromium.js';
import { inspector } from '../../helpers/inspector.js';

const startOutput = validators.BrowserAutomationPlaywrightRunOutput as unknown as ValidateFunction;
const pollOutput = validators.BrowserAutomationPlaywrightRunContinueOutput as unknown as ValidateFunction;

const PAGE = `<!doctype html><html><head><title>Pricing of Acme</title></head><body>
<h1>Plans</h1><ul><li class="plan">Basic 9 EUR</li><li class="plan">Pro 29 EUR</li></ul>
<a id="export" href="/export.csv" download>Export</a></body></html>`;
const CSV = 'plan,price\nBasic,9\nPro,29\n';

function site(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.url === '/whoami') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`cookie: ${req.headers.cookie ?? 'none'}`);
      return;
    }
    if (req.url === '/export.csv') {
      res
        .writeHead(200, { 'content-type': 'text/csv', 'content-disposition': 'attachment; filename="export.csv"' })
        .end(CSV);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
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

async function start(server: TestServer, org: TestOrg, args: Record<string, unknown>): Promise<any> {
  const res = await callTool(server, org.token, 'browser-automation', 'browser-automation_playwright_run', args);
  if (res.isError || res.code) throw new Error(`playwright_run: ${JSON.stringify(res)}`);
  expect(startOutput(res.structuredContent), JSON.stringify(startOutput.errors)).to.equal(true);
  return res.structuredContent;
}

async function poll(server: TestServer, org: TestOrg, args: Record<string, unknown>): Promise<any> {
  return callTool(server, org.token, 'browser-automation', 'browser-automation_playwright_run_continue', args);
}

/** Polls until the task leaves RUNNING; every answer must match the output schema. */
async function finished(
  server: TestServer,
  org: TestOrg,
  started: { sessionId: string },
  limitMs = 60_000,
): Promise<any> {
  const until = Date.now() + limitMs;
  for (;;) {
    const res = await poll(server, org, { sessionId: started.sessionId });
    expect(res.isError, JSON.stringify(res)).to.not.equal(true);
    const body = res.structuredContent;
    expect(pollOutput(body), JSON.stringify(pollOutput.errors)).to.equal(true);
    if (body.status !== 'RUNNING') return body;
    if (Date.now() > until) throw new Error(`task ${started.sessionId} still RUNNING after ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('browser-automation: playwright_run in real Chromium', function () {
  this.timeout(120_000);
  let server: TestServer;
  let org: TestOrg;
  let other: TestOrg;
  let pages: Awaited<ReturnType<typeof site>>;

  before(async function () {
    requireChromium(this);
    pages = await site();
    server = await startTestServer('sqlite', { BROWSER_TASK_TIMEOUT_MS: '20000' });
    org = await createTestOrg(server);
    other = await createTestOrg(server, 'Other org');
  });
  after(async () => {
    await server?.close();
    await pages?.close();
  });

  it('runs a script with a ready page, saves its returned file in a new collection, and polls to completed with a working signed URL and the log', async () => {
    const started = await start(server, org, {
      code: `await page.goto(${JSON.stringify(pages.url)});\nconsole.log('plans', await page.locator('.plan').count());\nreturn { writeToCollection: true, fileName: 'title.txt', fileContent: await page.title() };`,
      buildId: 'bld_pricing',
    });
    expect(started).to.include({ status: 'RUNNING', buildId: 'bld_pricing' });
    expect(started.sessionId).to.match(/^ses_[0-9a-f]{32}$/);
    expect(started.logFileName).to.equal(`task-${started.sessionId}.log`);
    expect(started.message).to.match(/playwright_run_continue/);

    const done = await finished(server, org, started);
    expect(done.status, done.result).to.equal('completed');
    expect(done.result).to.equal('Saved title.txt (15 bytes) to the collection.');
    expect(done.files).to.have.length(1);
    const [file] = done.files;
    expect(file).to.include({ fileName: 'title.txt', mimeType: 'text/plain', size: 15, source: 'script' });
    const expires = Number(new URL(file.url).searchParams.get('expires'));
    expect(expires - Date.now() / 1000).to.be.within(3500, 3601);
    const download = await fetch(file.url);
    expect(download.status).to.equal(200);
    expect(await download.text()).to.equal('Pricing of Acme');
    expect(done.logContent).to.match(/\[\d\d:\d\d\.\d{3}\] plans 2/);
    expect(done.logContent).to.match(/task completed$/);

    // The files and the log are items of the task's own filestore.
    const items = await call(server.baseUrl, 'GET', `/v1/collections/${started.collectionId}`, { token: org.token });
    expect(items.status).to.equal(200);
    expect(items.body).to.include({ type: 'filestore', itemCount: 2 });
    server.assertResponsesValid();
  });

  it('captures a download the page makes (source download) in a collection the caller names, and gives the viewport asked for', async () => {
    const col = await call(server.baseUrl, 'POST', '/v1/collections', {
      token: org.token,
      body: { name: 'exports', type: 'filestore' },
    });
    expect(col.status).to.equal(201);
    const started = await start(server, org, {
      code: `await page.goto(${JSON.stringify(pages.url)});\nawait page.click('#export');\nreturn page.viewportSize();`,
      buildId: 'bld_export',
      collectionId: col.body.collectionId,
      viewportWidth: 800,
      viewportHeight: 600,
    });
    expect(started.collectionId).to.equal(col.body.collectionId);
    const done = await finished(server, org, started);
    expect(done.status, done.result).to.equal('completed');
    expect(JSON.parse(done.result)).to.deep.equal({ width: 800, height: 600 });
    expect(done.files).to.have.length(1);
    expect(done.files[0]).to.include({
      fileName: 'export.csv',
      mimeType: 'text/csv',
      size: CSV.length,
      source: 'download',
    });
    expect(await (await fetch(done.files[0].url)).text()).to.equal(CSV);
    expect(done.logContent).to.match(/download saved: export\.csv/);
  });

  it('saves bytes such as a screenshot returned as fileContent', async () => {
    const started = await start(server, org, {
      code: `await page.goto(${JSON.stringify(pages.url)});\nreturn { writeToCollection: true, fileName: 'shot.png', fileContent: await page.screenshot() };`,
      buildId: 'bld_shot',
    });
    const done = await finished(server, org, started);
    expect(done.status, done.result).to.equal('completed');
    expect(done.files[0]).to.include({ fileName: 'shot.png', mimeType: 'image/png', source: 'script' });
    const bytes = Buffer.from(await (await fetch(done.files[0].url)).arrayBuffer());
    expect(bytes.subarray(1, 4).toString('latin1')).to.equal('PNG');
    expect(bytes.length).to.equal(done.files[0].size);
  });

  it('a script that throws, or does not compile, ends failed with the reason in result', async () => {
    const thrown = await finished(
      server,
      org,
      await start(server, org, {
        code: `await page.goto(${JSON.stringify(pages.url)});\nthrow new Error('no plans found');`,
        buildId: 'b',
      }),
    );
    expect(thrown.status).to.equal('failed');
    expect(thrown.result).to.equal('no plans found');
    expect(thrown.logContent).to.match(/failed: no plans found/);
    const syntax = await finished(server, org, await start(server, org, { code: 'return {', buildId: 'b' }));
    expect(syntax.status).to.equal('failed');
    expect(syntax.result).to.match(/Unexpected|SyntaxError/);
  });

  it('the script cannot reach the service: no process, require or environment, and no string compilation in the runner realm', async () => {
    const probe = await finished(
      server,
      org,
      await start(server, org, {
        code: 'return [typeof process, typeof require, typeof globalThis.fetch, typeof module].join(",")',
        buildId: 'b',
      }),
    );
    expect(probe.status, probe.result).to.equal('completed');
    expect(probe.result).to.equal('undefined,undefined,undefined,undefined');
    const escape = await finished(
      server,
      org,
      await start(server, org, {
        code: 'const p = page.constructor.constructor("return process")(); return Object.keys(p.env).join(",");',
        buildId: 'b',
      }),
    );
    expect(escape.status).to.equal('failed');
    expect(escape.result).to.match(/Code generation from strings disallowed/);
  });

  it('a value that is not JSON comes back as text, and a script with no return value completes with an empty result', async () => {
    const big = await finished(server, org, await start(server, org, { code: 'return { n: 10n };', buildId: 'b' }));
    expect(big.status, big.result).to.equal('completed');
    expect(big.result).to.equal('[object Object]');
    const circular = await finished(
      server,
      org,
      await start(server, org, { code: 'const a = {}; a.self = a; return a;', buildId: 'b' }),
    );
    expect(circular.status).to.equal('completed');
    const nothing = await finished(
      server,
      org,
      await start(server, org, { code: `await page.goto(${JSON.stringify(pages.url)});`, buildId: 'b' }),
    );
    expect(nothing).to.include({ status: 'completed', result: '' });
    expect(nothing.files).to.deep.equal([]);
  });

  it('the task log is bounded: 2,000 lines or 256 KiB, then one truncation line', async () => {
    const many = await finished(
      server,
      org,
      await start(server, org, {
        code: 'for (let i = 0; i < 3000; i++) console.log("line " + i); return "done";',
        buildId: 'b',
      }),
    );
    expect(many.status).to.equal('completed');
    const lines = many.logContent.split('\n');
    expect(lines.filter((l: string) => /\] line \d+$/.test(l)).length).to.be.below(2000);
    expect(lines.filter((l: string) => l === '[log truncated: further lines dropped]')).to.have.length(1);
    const wide = await finished(
      server,
      org,
      await start(server, org, {
        code: 'for (let i = 0; i < 100; i++) console.log("x".repeat(6000)); return "done";',
        buildId: 'b',
      }),
    );
    expect(wide.logContent.length).to.be.below(256 * 1024 + 2048);
    expect(wide.logContent).to.include('[log truncated: further lines dropped]');
  });

  it('the MCP Inspector CLI starts a script that extracts a heading and downloads a file, and polls it to completed with both files downloadable', async () => {
    const url = `${server.baseUrl}/mcp/browser-automation`;
    const code = `await page.goto(${JSON.stringify(pages.url)});\nawait page.click('#export');\nreturn { writeToCollection: true, fileName: 'heading.txt', fileContent: await page.textContent('h1') };`;
    const started = await inspector(url, org.token, [
      '--method',
      'tools/call',
      '--tool-name',
      'browser-automation_playwright_run',
      '--tool-arg',
      `code=${code}`,
      '--tool-arg',
      'buildId=bld_inspector',
    ]);
    expect(started.code, started.stderr).to.equal(0);
    const { sessionId } = (JSON.parse(started.stdout) as { structuredContent: { sessionId: string } })
      .structuredContent;
    let body: any;
    for (let i = 0; i < 60; i++) {
      const polled = await inspector(url, org.token, [
        '--method',
        'tools/call',
        '--tool-name',
        'browser-automation_playwright_run_continue',
        '--tool-arg',
        `sessionId=${sessionId}`,
      ]);
      expect(polled.code, polled.stderr).to.equal(0);
      body = (JSON.parse(polled.stdout) as { structuredContent: unknown }).structuredContent;
      if (body.status !== 'RUNNING') break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(body.status, body.result).to.equal('completed');
    const byName = new Map<string, { url: string; source: string }>(
      body.files.map((f: { fileName: string; url: string; source: string }) => [f.fileName, f]),
    );
    expect(byName.get('heading.txt')?.source).to.equal('script');
    expect(byName.get('export.csv')?.source).to.equal('download');
    expect(await (await fetch(byName.get('heading.txt')!.url)).text()).to.equal('Plans');
    expect(await (await fetch(byName.get('export.csv')!.url)).text()).to.equal(CSV);
  });

  it('each task gets a fresh context; a script process is reused only within its organisation', async () => {
    const setCookie = await finished(
      server,
      org,
      await start(server, org, {
        code: `await page.goto(${JSON.stringify(pages.url)});\nawait page.context().addCookies([{ name: 'sid', value: 'secret', url: ${JSON.stringify(pages.url)} }]);\nawait page.evaluate(() => localStorage.setItem('k', 'v'));\nglobalThis.leftover = 1;\npage.constructor.marker = 'org-a';\nreturn (await page.context().cookies()).length;`,
        buildId: 'b',
      }),
    );
    expect(setCookie.result).to.equal('1');
    const fresh = await finished(
      server,
      org,
      await start(server, org, {
        code: `await page.goto(${JSON.stringify(pages.url)});\nreturn [(await page.context().cookies()).length, await page.evaluate(() => localStorage.getItem('k')), typeof globalThis.leftover].join(',');`,
        buildId: 'b',
      }),
    );
    expect(fresh.result).to.equal('0,,undefined');
    // The runner's own realm is shared by the tasks of one organisation (documented residual
    // risk), never with another organisation's tasks.
    const sameOrg = await finished(
      server,
      org,
      await start(server, org, { code: 'return String(page.constructor.marker)', buildId: 'b' }),
    );
    expect(sameOrg.result).to.equal('org-a');
    const otherOrg = await finished(
      server,
      other,
      await start(server, other, { code: 'return String(page.constructor.marker)', buildId: 'b' }),
    );
    expect(otherOrg.result).to.equal('undefined');
  });

  it("a browser that crashes fails only the tasks it was running; another organisation's task completes and the next task starts a new browser", async () => {
    const slowCode = `await page.goto(${JSON.stringify(pages.url)});\nawait page.waitForTimeout(3000);\nreturn 'survived';`;
    const victim = await start(server, org, { code: slowCode, buildId: 'b' });
    const bystander = await start(server, other, { code: slowCode, buildId: 'b' });
    const pool = server.app.services.browser.pool;
    let pid: number | undefined;
    for (let i = 0; i < 100 && !pid; i++) {
      pid = await pool.pidOf(org.orgId);
      if (!pid) await new Promise((r) => setTimeout(r, 50));
    }
    expect(pid, 'the organisation has a browser').to.be.a('number');
    expect(pid).to.not.equal(await pool.pidOf(other.orgId));
    await new Promise((r) => setTimeout(r, 1000)); // both scripts are in their wait
    process.kill(pid!, 'SIGKILL');
    const failed = await finished(server, org, victim);
    expect(failed.status).to.equal('failed');
    expect(failed.result).to.match(/closed|crash|disconnected/i);
    const survived = await finished(server, other, bystander);
    expect(survived).to.include({ status: 'completed', result: 'survived' });
    const again = await finished(server, org, await start(server, org, { code: 'return "new browser"', buildId: 'b' }));
    expect(again).to.include({ status: 'completed', result: 'new browser' });
    expect(await pool.pidOf(org.orgId)).to.not.equal(pid);
  });

  it('a script that never ends is stopped at the task time limit and fails saying so', async () => {
    // 8 s: short for the script that never ends, and long enough for the next task to start a
    // script process and finish on a loaded machine (with 2.5 s and with 5 s it failed there on
    // time while the whole suite ran).
    const slow = await startTestServer('sqlite', { BROWSER_TASK_TIMEOUT_MS: '8000' });
    try {
      const o = await createTestOrg(slow);
      const t0 = Date.now();
      const done = await finished(
        slow,
        o,
        await start(slow, o, { code: 'await new Promise(() => {});', buildId: 'b' }),
        25_000,
      );
      expect(done.status).to.equal('failed');
      expect(done.result).to.contain("did not finish within the task's time limit (8 s)");
      expect(Date.now() - t0).to.be.within(7_900, 18_000);
      // The stopped process is not reused: the organisation's next task runs.
      const next = await finished(slow, o, await start(slow, o, { code: 'return "again"', buildId: 'b' }), 25_000);
      expect(next, JSON.stringify(next)).to.include({ status: 'completed', result: 'again' });
    } finally {
      await slow.close();
    }
  });

  it('polls are scoped to the organisation; unknown sessions and mismatched collection or log names are tool errors', async () => {
    const started = await start(server, org, { code: 'return 1', buildId: 'b' });
    const foreign = await poll(server, other, { sessionId: started.sessionId });
    expect(foreign.isError).to.equal(true);
    expect(foreign.structuredContent.error).to.equal(
      `No browser session ${started.sessionId} exists in this organisation.`,
    );
    const unknown = await poll(server, org, { sessionId: 'ses_nope' });
    expect(unknown.isError).to.equal(true);
    const wrongCollection = await poll(server, org, { sessionId: started.sessionId, collectionId: 'col_other' });
    expect(wrongCollection.isError).to.equal(true);
    const wrongLog = await poll(server, org, { sessionId: started.sessionId, logFileName: 'x.log' });
    expect(wrongLog.isError).to.equal(true);
    const done = await finished(server, org, started);
    expect(done.result).to.equal('1');
    const full = await poll(server, org, {
      sessionId: started.sessionId,
      collectionId: started.collectionId,
      logFileName: started.logFileName,
    });
    expect(full.structuredContent.status).to.equal('completed');
  });

  it('refuses a collection of another organisation or one that holds no files, and validates arguments', async () => {
    const store = await call(server.baseUrl, 'POST', '/v1/collections', {
      token: org.token,
      body: { name: 'rows', type: 'structured_datastore' },
    });
    const wrongType = await callTool(server, org.token, 'browser-automation', 'browser-automation_playwright_run', {
      code: 'return 1',
      buildId: 'b',
      collectionId: store.body.collectionId,
    });
    expect(wrongType.isError).to.equal(true);
    expect(wrongType.structuredContent.error).to.match(/structured datastore/);
    const foreign = await callTool(server, other.token, 'browser-automation', 'browser-automation_playwright_run', {
      code: 'return 1',
      buildId: 'b',
      collectionId: store.body.collectionId,
    });
    expect(foreign.isError).to.equal(true);
    expect(foreign.structuredContent.error).to.match(/^No collection/);
    const invalid = await callTool(server, org.token, 'browser-automation', 'browser-automation_playwright_run', {
      code: '',
      buildId: 'b',
      viewportWidth: 5,
    });
    expect(invalid.code).to.equal(-32000);
    expect(invalid.data.errors.map((e: { field: string }) => e.field)).to.include.members(['code', 'viewportWidth']);
  });

  it('a RUNNING task whose process stopped renewing it is failed by the next poll, never left RUNNING', async () => {
    const { db } = server.app.services;
    const old = new Date(Date.now() - 120_000).toISOString();
    await db('browser_tasks').insert({
      id: 'ses_00000000000000000000000000000dead',
      org_id: org.orgId,
      kind: 'script',
      status: 'RUNNING',
      build_id: 'b',
      collection_id: 'col_x',
      log_file_name: 'task-x.log',
      message: 'Script running.',
      result: null,
      files: '[]',
      log: '',
      heartbeat_at: old,
      deadline_at: new Date(Date.now() + 60_000).toISOString(),
      created_at: old,
      finished_at: null,
    });
    const res = await poll(server, org, { sessionId: 'ses_00000000000000000000000000000dead' });
    expect(res.structuredContent.status).to.equal('failed');
    expect(res.structuredContent.result).to.match(/stopped without finishing/);
    expect(pollOutput(res.structuredContent)).to.equal(true);
  });

  describe('saved logins', () => {
    const state = (value: string, expires = -1) => ({
      cookies: [
        { name: 'sid', value, domain: '127.0.0.1', path: '/', expires, httpOnly: true, secure: false, sameSite: 'Lax' },
      ],
      origins: [],
    });
    const create = (as: TestOrg, body: Record<string, unknown>) =>
      call(server.baseUrl, 'POST', '/v1/browser-logins', { token: as.token, body });
    const loginsList = validators.BrowserAutomationLoginsListOutput as unknown as ValidateFunction;

    it('op:createBrowserLogin op:getBrowserLogin op:listBrowserLogins op:deleteBrowserLogin — saved encrypted, never returned, scoped to the organisation', async () => {
      const made = await create(org, {
        label: 'Acme admin',
        service: 'acme.example',
        loginUrl: 'https://acme.example/login',
        storageState: state('first-secret-cookie'),
      });
      expect(made.status, made.text).to.equal(201);
      expect(Object.keys(made.body).sort()).to.deep.equal([
        'createdAt',
        'id',
        'label',
        'loginUrl',
        'service',
        'status',
      ]);
      expect(made.body).to.include({ label: 'Acme admin', service: 'acme.example', status: 'active' });
      expect(made.body.id).to.match(/^ctx_[0-9a-f]{32}$/);
      const row = await server.app.services.db('browser_logins').where({ id: made.body.id }).first();
      expect(JSON.stringify(row)).to.not.include('first-secret-cookie');
      const second = await create(org, {
        label: 'Old',
        service: 's',
        loginUrl: 'http://127.0.0.1/login',
        storageState: state('x', 1_000_000),
      });
      expect(second.body.status).to.equal('expired');

      const got = await call(server.baseUrl, 'GET', `/v1/browser-logins/${made.body.id}`, { token: org.token });
      expect(got.status).to.equal(200);
      expect(got.body).to.deep.equal(made.body);
      const page1 = await call(server.baseUrl, 'GET', '/v1/browser-logins?limit=1', { token: org.token });
      expect(page1.body.items.map((l: { id: string }) => l.id)).to.deep.equal([made.body.id]);
      const page2 = await call(server.baseUrl, 'GET', `/v1/browser-logins?limit=1&cursor=${page1.body.nextCursor}`, {
        token: org.token,
      });
      expect(page2.body.items.map((l: { id: string }) => l.id)).to.deep.equal([second.body.id]);
      expect(page2.body.nextCursor).to.equal(null);

      expect(
        (await call(server.baseUrl, 'GET', `/v1/browser-logins/${made.body.id}`, { token: other.token })).status,
      ).to.equal(404);
      expect(
        (await call(server.baseUrl, 'DELETE', `/v1/browser-logins/${made.body.id}`, { token: other.token })).status,
      ).to.equal(404);
      expect(
        (await call(server.baseUrl, 'GET', '/v1/browser-logins', { token: other.token })).body.items,
      ).to.deep.equal([]);

      const tool = await callTool(server, org.token, 'browser-automation', 'browser-automation_logins_list', {});
      expect(loginsList(tool.structuredContent), JSON.stringify(loginsList.errors)).to.equal(true);
      expect(tool.structuredContent.count).to.equal(2);
      expect(tool.structuredContent.contexts.map((c: { id: string }) => c.id)).to.deep.equal([
        made.body.id,
        second.body.id,
      ]);
      expect(JSON.stringify(tool)).to.not.include('first-secret-cookie');
      const otherTool = await callTool(server, other.token, 'browser-automation', 'browser-automation_logins_list', {});
      expect(otherTool.structuredContent).to.deep.equal({ count: 0, contexts: [] });

      expect(
        (await call(server.baseUrl, 'DELETE', `/v1/browser-logins/${second.body.id}`, { token: org.token })).status,
      ).to.equal(204);
      expect(
        (await call(server.baseUrl, 'GET', `/v1/browser-logins/${second.body.id}`, { token: org.token })).status,
      ).to.equal(404);
      expect(
        (await call(server.baseUrl, 'DELETE', '/v1/browser-logins/not-an-id', { token: org.token })).status,
      ).to.equal(404);
      server.assertResponsesValid();
    });

    it('refuses a login without a state, with a non-http login URL, unknown fields or a state over 1 MiB, storing nothing', async () => {
      const before = await server.app.services.db('browser_logins').count({ n: '*' }).first();
      const bad = [
        { label: 'x', service: 's', loginUrl: 'https://a.example/' },
        { label: 'x', service: 's', loginUrl: 'ftp://a.example/', storageState: state('v') },
        { label: 'x', service: 's', loginUrl: 'https://a.example/', storageState: state('v'), extra: 1 },
        { label: '', service: 's', loginUrl: 'https://a.example/', storageState: state('v') },
        { label: 'x', service: 's', loginUrl: 'https://a.example/', storageState: state('v'.repeat(1024 * 1024 + 1)) },
      ];
      for (const body of bad) {
        const res = await create(org, body);
        expect(res.status, JSON.stringify(body).slice(0, 120)).to.equal(400);
        expect(res.body.error).to.be.a('string');
      }
      const after = await server.app.services.db('browser_logins').count({ n: '*' }).first();
      expect(Number(after!.n)).to.equal(Number(before!.n));
    });

    it('useContextService starts the script signed in; an unknown or foreign login is a tool error', async () => {
      const made = await create(org, {
        label: 'Local',
        service: '127.0.0.1',
        loginUrl: `${pages.url}/login`,
        storageState: state('signed-in-42'),
      });
      const code = `await page.goto(${JSON.stringify(`${pages.url}/whoami`)});\nreturn await page.textContent('body');`;
      const done = await finished(
        server,
        org,
        await start(server, org, { code, buildId: 'b', useContextService: made.body.id }),
      );
      expect(done.status, done.result).to.equal('completed');
      expect(done.result).to.equal('cookie: sid=signed-in-42');
      expect(done.logContent).to.include(`starting from saved login ${made.body.id} (1 cookies)`);
      const plain = await finished(server, org, await start(server, org, { code, buildId: 'b' }));
      expect(plain.result).to.equal('cookie: none');
      const foreign = await callTool(server, other.token, 'browser-automation', 'browser-automation_playwright_run', {
        code,
        buildId: 'b',
        useContextService: made.body.id,
      });
      expect(foreign.isError).to.equal(true);
      expect(foreign.structuredContent.error).to.match(/^No saved login/);
      const unknown = await callTool(server, org.token, 'browser-automation', 'browser-automation_playwright_run', {
        code,
        buildId: 'b',
        useContextService: 'ctx_nope',
      });
      expect(unknown.isError).to.equal(true);
    });
  });

  it('pages and their API requests reach the network only through the outbound policy: loopback and link-local refused unless allow-listed, the service itself always reachable', async () => {
    const guarded = await startTestServer('sqlite', { OUTBOUND_ALLOWLIST: '' });
    try {
      const o = await createTestOrg(guarded);
      const code = `const out = [];
const blocked = await page.goto(${JSON.stringify(pages.url)});
out.push(blocked.status(), (await page.textContent('body')).trim());
const other = await page.context().newPage();
try { await other.goto('https://169.254.169.254/latest/meta-data/', { timeout: 10000 }); out.push('metadata reached'); } catch (e) { out.push(e.message.split('\\n')[0]); }
const own = await (await page.context().newPage()).goto(${JSON.stringify(`${guarded.baseUrl}/healthz`)});
out.push(own.status());
const api = await page.request.get(${JSON.stringify(pages.url)});
out.push(api.status());
const own2 = await page.context().browser().newContext({ proxy: { server: 'http://127.0.0.1:9', bypass: '*' } });
out.push((await (await own2.newPage()).goto(${JSON.stringify(pages.url)})).status());
return out;`;
      const done = await finished(guarded, o, await start(guarded, o, { code, buildId: 'b' }));
      expect(done.status, done.result).to.equal('completed');
      const [status, body, metadata, own, api, selfProxied] = JSON.parse(done.result) as [
        number,
        string,
        string,
        number,
        number,
        number,
      ];
      expect(status).to.equal(403);
      expect(body).to.match(/refused: loopback address \(RFC 1122\) \(allow it with OUTBOUND_ALLOWLIST\)/);
      expect(metadata).to.match(/ERR_TUNNEL_CONNECTION_FAILED/);
      expect(own).to.equal(200);
      // API requests of the context (made by playwright-core's server side, not by Chromium) too.
      expect(api).to.equal(403);
      // A context the script makes with a proxy of its own is put back on the guarded proxy (relay).
      expect(selfProxied).to.equal(403);
    } finally {
      await guarded.close();
    }
  });

  it('finished task records are pruned after RUN_RETENTION_DAYS; RUNNING ones never', async () => {
    const { db } = server.app.services;
    const old = new Date(Date.now() - 40 * 86_400_000).toISOString();
    const row = (id: string, status: string, finishedAt: string | null) => ({
      id,
      org_id: org.orgId,
      kind: 'script',
      status,
      build_id: 'b',
      collection_id: 'col_x',
      log_file_name: 'x.log',
      message: 'm',
      result: null,
      files: '[]',
      log: '',
      heartbeat_at: new Date().toISOString(),
      deadline_at: new Date(Date.now() + 60_000).toISOString(),
      created_at: old,
      finished_at: finishedAt,
    });
    await db('browser_tasks').insert([
      row('ses_0000000000000000000000000000old1', 'completed', old),
      row('ses_0000000000000000000000000000new1', 'failed', new Date().toISOString()),
      row('ses_0000000000000000000000000000run1', 'RUNNING', null),
    ]);
    expect(await pruneFinished(db, new Date(Date.now() - 30 * 86_400_000).toISOString())).to.equal(1);
    const left = (await db('browser_tasks')
      .whereIn('id', [
        'ses_0000000000000000000000000000old1',
        'ses_0000000000000000000000000000new1',
        'ses_0000000000000000000000000000run1',
      ])
      .pluck('id')) as string[];
    expect(left.sort()).to.deep.equal(['ses_0000000000000000000000000000new1', 'ses_0000000000000000000000000000run1']);
    await db('browser_tasks').whereIn('id', left).delete();
  });

  it('without Chromium the tools answer browser_unavailable with how to install it', async () => {
    const bare = await startTestServer('sqlite', { BROWSER_EXECUTABLE: '/nonexistent/chromium' });
    try {
      const o = await createTestOrg(bare);
      const res = await callTool(bare, o.token, 'browser-automation', 'browser-automation_playwright_run', {
        code: 'return 1',
        buildId: 'b',
      });
      expect(res.code).to.equal(-32603);
      expect(res.data.error).to.equal('browser_unavailable');
      expect(res.message).to.match(/apt-get install -y chromium/);
    } finally {
      await bare.close();
    }
  });
});
