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
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { expect } from 'chai';
import { decodeProtectedHeader } from 'jose';
import { chromium, type Browser, type Page } from 'playwright-core';
import { CHROMIUM_ARGS } from '../../../src/browser/index.js';
import { createApiKey, createCredential, createOrganization } from '../../../src/auth/index.js';
import { call, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { createTestStore, type TestStore } from '../../helpers/store.js';
import { CHROMIUM, requireChromium } from '../../helpers/chromium.js';
import { ROOT } from '../../helpers/process.js';
import { deploy, code } from '../../helpers/runs.js';
import { finishedScript, startScript } from '../../helpers/browser-tasks.js';
import { createConnection, registerServer } from '../gateway/helpers.js';

const SHOTS = path.join(ROOT, '.tmp', 'console-screenshots');
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

describe('web console: run detail, browser tasks, upstream health, key rotation (Chromium)', function () {
  this.timeout(60_000);
  let store: TestStore;
  let server: TestServer;
  let org: TestOrg;
  let browser: Browser;
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
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.addInitScript(`
      window.cspViolations = [];
      document.addEventListener('securitypolicyviolation', (e) => window.cspViolations.push(e.violatedDirective + ' ' + e.blockedURI));
    `);
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    mkdirSync(SHOTS, { recursive: true });
    await page.goto(`${server.baseUrl}/console/`);
    await page.getByLabel('Client id').fill(org.clientId);
    await page.getByLabel('Client secret').fill(org.clientSecret);
    await page.getByLabel('Organisation id').fill(org.orgId);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  });

  after(async () => {
    await browser?.close();
    server?.assertResponsesValid();
    for (const release of held) release();
    await server?.close();
    await store?.close();
    for (const s of [gate, site]) {
      s?.closeAllConnections();
      s?.close();
    }
  });

  async function audit(name: string): Promise<void> {
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
    await page.evaluate(AXE);
    const violations = (await page.evaluate('axe.run().then((r) => r.violations)')) as AxeViolation[];
    const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    // TEST_FIGURES=1 prints axe-core's findings per page by impact.
    if (process.env.TEST_FIGURES) {
      const byImpact = violations.map((v) => `${v.impact}:${v.id}`).join(' ') || 'none';
      process.stderr.write(`axe ${name}: ${violations.length} violation(s): ${byImpact}\n`);
    }
    expect(
      bad.map((v) => `${v.id}: ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
      `axe on ${name}`,
    ).to.deep.equal([]);
    const csp = (await page.evaluate('window.cspViolations')) as string[];
    expect(csp, `CSP violations on ${name}`).to.deep.equal([]);
  }

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
