/**
 * The console pages that read the run, browser-task, server-health and signing-key operations
 * (console/README.md), end to end: one live service on loopback (its organisation named in
 * ADMIN_ORG_IDS) and one Chromium for the file, nothing mocked. A run is followed from RUNNING
 * to COMPLETE on its page (its first step held open by a loopback server); a real
 * playwright_run task through the tool gateway is shown with its log and a screenshot preview;
 * a failing upstream appears on the Gateway and Overview pages; the signing key is rotated from
 * Settings after a confirmation. axe-core finds no serious or critical violation on these pages.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { expect } from 'chai';
import { decodeProtectedHeader } from 'jose';
import type { Page } from 'playwright-core';
import { createApiKey, createCredential, createOrganization } from '../../../src/auth/index.js';
import { call, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { createTestStore, type TestStore } from '../../helpers/store.js';
import { requireChromium } from '../../helpers/chromium.js';
import { openConsoleBrowser, signIn, type ConsoleBrowser } from '../../helpers/console.js';
import { deploy, code } from '../../helpers/runs.js';
import { finishedScript, startScript } from '../../helpers/browser-tasks.js';
import { createConnection, registerServer } from '../gateway/helpers.js';

describe('web console: run detail, browser tasks, upstream health, key rotation (Chromium)', function () {
  this.timeout(60_000);
  let store: TestStore;
  let server: TestServer;
  let org: TestOrg;
  let ui: ConsoleBrowser;
  let page: Page;
  let gate: http.Server;
  let site: http.Server;
  /** Answers the held step's request when called. */
  const held: (() => void)[] = [];

  const listen = async (s: http.Server) => {
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(s.address() as AddressInfo).port}/`;
  };

  before(async function () {
    requireChromium(this);
    // The organisation exists before the service starts, so ADMIN_ORG_IDS can name it.
    store = await createTestStore('sqlite');
    const made = await createOrganization(store.db, { name: 'Console admin org' });
    const { credential, clientSecret } = await createCredential(store.db, made.id, { label: 'console' });
    const { secret } = await createApiKey(store.db, made.id, { label: 'console' });
    server = await startTestServer('sqlite', { ADMIN_ORG_IDS: made.id }, store);
    const token = await fetch(`${server.baseUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: credential.clientId,
        client_secret: clientSecret,
        scope: `org:${made.id}`,
      }),
    });
    expect(token.status).to.equal(200);
    org = {
      orgId: made.id,
      clientId: credential.clientId,
      clientSecret,
      apiKey: secret,
      token: ((await token.json()) as { access_token: string }).access_token,
    };
    gate = http.createServer((_req, res) => held.push(() => res.end('released')));
    site = http.createServer((_req, res) =>
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end('<!doctype html><title>Shot</title><h1 style="color:#036">Screenshot target</h1>'),
    );
    ui = await openConsoleBrowser();
    page = ui.page;
    await signIn(page, server.baseUrl, org);
  });

  after(async () => {
    await ui?.close();
    server?.assertResponsesValid();
    for (const release of held) release();
    await server?.close();
    await store?.close();
    for (const s of [gate, site]) {
      s?.closeAllConnections();
      s?.close();
    }
  });

  const audit = (name: string) => ui.audit(name);

  it('follows a run from RUNNING to COMPLETE on its page, with results, files and the designated output', async () => {
    const gateUrl = await listen(gate);
    const wf = await deploy(
      server,
      org,
      {
        name: 'Held report',
        steps: [
          { type: 'http', name: 'Wait', request: { method: 'GET', url: gateUrl } },
          code('Write', 'ctx.files.write("report.md", "# Done", "text/markdown"); return "# Done";', {
            resultType: 'markdown',
          }),
        ],
      },
      { stepIndex: 1, fileName: 'report.md' },
    );
    const res = await call(server.baseUrl, 'POST', `/ext/triggers/${wf.apiTriggerId}`, {
      headers: { 'x-api-key': org.apiKey },
      body: { ticket: 'T-7' },
    });
    const runId = res.headers.get('x-pf-run-id')!;
    await page.goto(`${server.baseUrl}/console/runs/${wf.automationId}/${runId}`);
    await page.getByRole('heading', { name: `Run ${runId}` }).waitFor();
    await page.getByText(/updating every 2 s/).waitFor();
    expect(await page.locator('.facts').textContent()).to.include('RUNNING');
    await page.locator('.timeline li', { hasText: 'Write' }).getByText('PENDING').waitFor();
    expect(await page.getByText('Trigger API key').count(), 'no key prompt').to.equal(0);
    await audit('run-detail-running');
    while (held.length === 0) await new Promise((r) => setTimeout(r, 20));
    held.shift()!();
    await page.locator('.timeline li', { hasText: 'Write' }).getByText('COMPLETE').waitFor();
    await page.getByText(/updating every/).waitFor({ state: 'detached' });
    expect(await page.locator('.facts').textContent()).to.include('COMPLETE');
    await page.getByRole('link', { name: 'report.md' }).first().waitFor();
    await page.getByRole('heading', { name: 'Designated output' }).waitFor();
    expect(await page.locator('pre', { hasText: 'T-7' }).count()).to.equal(1);
    await audit('run-detail-complete');
  });

  it('shows a playwright_run task with its log and a screenshot preview', async () => {
    const siteUrl = await listen(site);
    const sessionId = await startScript(
      server,
      org,
      `console.log('hello from the script');\nawait page.goto(${JSON.stringify(siteUrl)});\nreturn { writeToCollection: true, fileName: 'shot.png', fileContent: await page.screenshot() };`,
    );
    const done = await finishedScript(server, org, sessionId, 30_000);
    expect(done.status, JSON.stringify(done)).to.equal('completed');
    await page.getByRole('link', { name: 'Browser tasks' }).click();
    await page.getByRole('heading', { name: 'Browser tasks', level: 1 }).waitFor();
    await page.getByRole('link', { name: sessionId }).waitFor();
    await audit('browser-tasks');
    await page.getByRole('link', { name: sessionId }).click();
    await page.getByRole('heading', { name: `Browser task ${sessionId}` }).waitFor();
    const preview = page.getByRole('img', { name: 'Preview of shot.png' });
    await preview.waitFor();
    // The image loaded. Polled from the test: a predicate evaluated in the page (waitForFunction)
    // is compiled from a string there, which the console's Content-Security-Policy refuses.
    const loadedBy = Date.now() + 10_000;
    while ((await preview.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)) <= 100) {
      if (Date.now() > loadedBy) throw new Error('the screenshot preview did not load');
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await page.locator('pre.log').textContent()).to.include('hello from the script');
    await audit('browser-task-detail');
  });

  it('shows a failing upstream on the Gateway and Overview pages', async () => {
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((r) => probe.close(() => r()));
    await registerServer(server, org, {
      path: 'offline',
      name: 'Offline CRM',
      service_key: 'offline',
      upstream: { type: 'mcp', url: `http://127.0.0.1:${port}/mcp`, transport: 'streamable-http' },
      auth: { scheme: 'none' },
    });
    await createConnection(server, org, { name: 'Offline conn', service_key: 'offline' });
    await page.getByRole('link', { name: 'Gateway' }).click();
    await page.getByRole('heading', { name: 'Gateway', level: 1 }).waitFor();
    const row = page.locator('tr', { hasText: 'Offline CRM' });
    await row.getByText('failing').waitFor();
    await audit('gateway-health');
    await page.getByRole('link', { name: 'Overview' }).click();
    const upstreams = page.locator('section[aria-labelledby="ov-upstreams"]');
    await upstreams.locator('tr', { hasText: 'Offline CRM' }).getByText('failing').waitFor();
    await audit('overview-upstreams');
  });

  it('rotates the signing key from Settings after a confirmation; the session keeps working', async () => {
    const before = decodeProtectedHeader(org.token).kid;
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Rotate the signing key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Rotate the token signing key?' });
    await dialog.waitFor();
    await audit('settings-rotate-confirm');
    await dialog.getByRole('button', { name: 'Rotate' }).click();
    const status = page.getByRole('status');
    await status.getByText(/Rotated: the new key is/).waitFor();
    const kid = (await status.locator('code').textContent())!;
    expect(kid).to.not.equal(before);
    const jwks = await call(server.baseUrl, 'GET', '/.well-known/jwks.json');
    expect(jwks.body.keys.map((k: { kid: string }) => k.kid)).to.include.members([before, kid]);
    await audit('settings-rotated');
    // The console's token (signed by the retired key) still reads the API.
    await page.getByRole('link', { name: 'Browser tasks' }).click();
    await page.getByRole('heading', { name: 'Browser tasks', level: 1 }).waitFor();
    await page.locator('tbody tr').first().waitFor();
  });
});
