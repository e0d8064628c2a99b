/**
 * The web console (console/README.md) end to end: the built console served by a live service on
 * loopback, driven in real Chromium against the real API (nothing mocked). One service and one
 * browser for the whole file. Every page is checked with axe-core (no serious or critical
 * violation) and photographed into .tmp/console-screenshots/ (git-ignored).
 */
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { createCredential } from '../../../src/auth/index.js';
import { call, createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { requireChromium } from '../../helpers/chromium.js';
import { openConsoleBrowser, type ConsoleBrowser } from '../../helpers/console.js';
import { waitTerminal } from '../../helpers/runs.js';

describe('web console (/console) in Chromium', function () {
  this.timeout(60_000);
  let server: TestServer;
  let org: TestOrg;
  let ui: ConsoleBrowser;
  let page: Page;
  let automationId: string;
  let failingId: string;
  let apiTrigger: string;
  let breaksTrigger: string;
  let webhookTrigger: string;
  let completeRun: string;
  let failedRun: string;

  before(async function () {
    requireChromium(this);
    server = await startTestServer('sqlite', { REVOCATION_CACHE_MS: '0' });
    org = await createTestOrg(server, 'Console org');
    const wf = await call(server.baseUrl, 'POST', '/v1/workflows', {
      token: org.token,
      body: {
        name: 'Greeter',
        description: 'Says hello',
        inputSchema: {
          type: 'object',
          properties: {
            name: { type: 'string', description: 'Who to greet' },
            times: { type: 'integer' },
            loud: { type: 'boolean' },
          },
          required: ['name'],
        },
        steps: [{ type: 'code', name: 'Greet', code: 'return "hello " + ctx.inputs.name;' }],
      },
    });
    expect(wf.status, wf.text).to.equal(201);
    automationId = wf.body.automationId;
    const failing = await call(server.baseUrl, 'POST', '/v1/workflows', {
      token: org.token,
      body: { name: 'Breaks', steps: [{ type: 'code', name: 'Throw', code: 'throw new Error("boom in step");' }] },
    });
    failingId = failing.body.automationId;
    const t1 = await call(server.baseUrl, 'POST', '/v1/triggers', {
      token: org.token,
      body: { automationId, kind: 'api', name: 'Greeter API' },
    });
    apiTrigger = t1.body.triggerId;
    const t2 = await call(server.baseUrl, 'POST', '/v1/triggers', {
      token: org.token,
      body: { automationId, kind: 'webhook', name: 'Greeter hook' },
    });
    webhookTrigger = t2.body.triggerId;
    const t3 = await call(server.baseUrl, 'POST', '/v1/triggers', {
      token: org.token,
      body: { automationId: failingId, kind: 'api', name: 'Breaks API' },
    });
    const start = async (triggerId: string, body: unknown) => {
      const res = await call(server.baseUrl, 'POST', `/ext/triggers/${triggerId}`, {
        headers: { 'x-api-key': org.apiKey },
        body,
      });
      expect(res.status, res.text).to.equal(200);
      return { automationId: res.headers.get('x-pf-automation-id')!, runId: res.headers.get('x-pf-run-id')! };
    };
    const ok = await start(apiTrigger, { name: 'Ada' });
    breaksTrigger = t3.body.triggerId;
    const bad = await start(t3.body.triggerId, {});
    completeRun = ok.runId;
    failedRun = bad.runId;
    await waitTerminal(server, org.apiKey, ok.automationId, ok.runId);
    await waitTerminal(server, org.apiKey, bad.automationId, bad.runId);
    ui = await openConsoleBrowser();
    page = ui.page;
  });

  after(async () => {
    await ui?.close();
    server?.assertResponsesValid();
    await server?.close();
  });

  const audit = (name: string) => ui.audit(name);

  it('serves the app, its hashed assets and the security headers at /console', async () => {
    const index = await fetch(`${server.baseUrl}/console/runs/some/route`);
    expect(index.status).to.equal(200);
    expect(index.headers.get('content-type')).to.match(/^text\/html/);
    expect(index.headers.get('cache-control')).to.equal('no-cache');
    const csp = index.headers.get('content-security-policy')!;
    expect(csp).to.include("default-src 'self'").and.include("frame-ancestors 'none'").and.include("script-src 'self'");
    expect(csp).not.to.include('unsafe-inline');
    expect(index.headers.get('x-frame-options')).to.equal('DENY');
    const html = await index.text();
    const assets = [...html.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).to.be.greaterThan(1);
    expect(html).not.to.match(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.to.include('style=');
    for (const a of assets) {
      const res = await fetch(`${server.baseUrl}${a}`, { headers: { 'accept-encoding': 'gzip' } });
      expect(res.status, a).to.equal(200);
      expect(res.headers.get('cache-control')).to.equal('public, max-age=31536000, immutable');
      expect(res.headers.get('x-frame-options')).to.equal('DENY');
    }
    const missing = await call(server.baseUrl, 'GET', '/console/assets/nope.js');
    expect(missing.status).to.equal(404);
    expect(missing.body).to.include({ error: 'not_found' });
    const post = await call(server.baseUrl, 'POST', '/console', { body: {} });
    expect(post.status).to.equal(405);
    expect(post.body.error).to.equal('method_not_allowed');
    expect(post.headers.get('allow')).to.equal('GET, HEAD');
  });

  it('signs in with the keyboard; a wrong secret shows the error message and code', async () => {
    await page.goto(`${server.baseUrl}/console/`);
    await page.getByRole('heading', { name: 'Sign in to Switchyard' }).waitFor();
    await audit('sign-in');
    await page.getByLabel('Client id').fill(org.clientId);
    await page.getByLabel('Client secret').fill('not-the-secret');
    await page.getByLabel('Organisation id').fill(org.orgId);
    await page.keyboard.press('Enter');
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).to.include('invalid_client');
    await page.getByLabel('Client secret').fill(org.clientSecret);
    await page.getByLabel('Client secret').press('Enter');
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    const stored = await page.evaluate(() => JSON.stringify(sessionStorage) + JSON.stringify(localStorage));
    expect(stored, 'the secret is never stored').not.to.include(org.clientSecret);
  });

  it('overview: runs per minute, the failures of the hour with their first error', async () => {
    await page.locator('.chart canvas').first().waitFor();
    const failures = page.locator('section[aria-labelledby="ov-failures"]');
    await failures.getByText('boom in step').waitFor();
    await page.getByText('No queues yet.').waitFor();
    await page.getByText('No failed or dropped event deliveries.').waitFor();
    await audit('overview');
  });

  it('runs: lists, filters by status and opens a run with its step timeline', async () => {
    // Keyboard: the navigation link is reached and followed with the keyboard.
    await page.getByRole('link', { name: 'Runs', exact: true }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
    await page.getByRole('link', { name: completeRun }).waitFor();
    await page.getByRole('link', { name: failedRun }).waitFor();
    await audit('runs');
    await page.getByLabel('Status').selectOption('FAILED');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/status=FAILED/);
    await page.getByRole('link', { name: failedRun }).waitFor();
    await page.getByRole('link', { name: completeRun }).waitFor({ state: 'detached' });
    await page.getByRole('link', { name: failedRun }).click();
    await page.getByRole('heading', { name: `Run ${failedRun}` }).waitFor();
    await page.locator('.timeline li').first().waitFor();
    expect(await page.locator('.timeline').textContent())
      .to.include('Throw')
      .and.include('FAILED');
    await audit('run-detail');
  });

  it('runs: pages forward and back by cursor, and a new filter starts again at the first page', async () => {
    // 26 more runs: the two earlier ones move to the second page of 25.
    for (let i = 0; i < 26; i++) {
      const res = await call(server.baseUrl, 'POST', `/ext/triggers/${apiTrigger}`, {
        headers: { 'x-api-key': org.apiKey },
        body: { name: `Page ${i}` },
      });
      expect(res.status, res.text).to.equal(200);
    }
    await page.goto(`${server.baseUrl}/console/runs`);
    await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
    const pager = page.getByRole('navigation', { name: 'Pages of runs' });
    const previous = pager.getByRole('button', { name: 'Previous page' });
    const next = pager.getByRole('button', { name: 'Next page' });
    const rows = page.locator('tbody tr');
    await rows.nth(24).waitFor();
    expect(await rows.count()).to.equal(25);
    expect(await previous.isDisabled()).to.equal(true);
    expect(await page.getByRole('link', { name: completeRun }).count()).to.equal(0);
    await next.click();
    await page.getByRole('link', { name: completeRun }).waitFor();
    await page.getByRole('link', { name: failedRun }).waitFor();
    expect(await rows.count()).to.equal(3);
    expect(await next.isDisabled()).to.equal(true);
    await previous.click();
    await page.getByRole('link', { name: completeRun }).waitFor({ state: 'detached' });
    expect(await rows.count()).to.equal(25);
    expect(await previous.isDisabled()).to.equal(true);
    // On the second page, a filter lists its own first page.
    await next.click();
    await page.getByRole('link', { name: completeRun }).waitFor();
    await page.getByLabel('Status').selectOption('FAILED');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/status=FAILED/);
    await page.getByRole('link', { name: completeRun }).waitFor({ state: 'detached' });
    await page.getByRole('link', { name: failedRun }).waitFor();
    expect(await previous.isDisabled()).to.equal(true);
  });

  it('a run page follows a RUNNING run live until it ends', async () => {
    const slow = await call(server.baseUrl, 'POST', '/v1/workflows', {
      token: org.token,
      body: {
        name: 'Slow',
        steps: [
          { type: 'code', name: 'Wait', code: 'const end = Date.now() + 2500; while (Date.now() < end) {} return 1;' },
          { type: 'code', name: 'After', code: 'return 2;' },
        ],
      },
    });
    const trg = await call(server.baseUrl, 'POST', '/v1/triggers', {
      token: org.token,
      body: { automationId: slow.body.automationId, kind: 'api' },
    });
    const res = await fetch(`${server.baseUrl}/ext/triggers/${trg.body.triggerId}`, {
      method: 'POST',
      headers: { 'x-api-key': org.apiKey, 'content-type': 'application/json' },
      body: '{}',
    });
    const runId = res.headers.get('x-pf-run-id')!;
    await page.goto(`${server.baseUrl}/console/runs/${slow.body.automationId}/${runId}`);
    await page.getByText(/updating every 2 s/).waitFor();
    await page.locator('.timeline li', { hasText: 'After' }).getByText('COMPLETE').waitFor({ timeout: 20_000 });
    expect(await page.getByText(/updating every/).count()).to.equal(0);
  });

  it('workflows: triggers with their URLs (the webhook one hidden until asked) and a try-it form', async () => {
    const current = await call(server.baseUrl, 'GET', `/v1/workflows/${automationId}`, { token: org.token });
    const v2 = await call(server.baseUrl, 'PUT', `/v1/workflows/${automationId}`, {
      token: org.token,
      headers: { 'if-match': `"${current.body.version}"` },
      body: { ...current.body.definition, description: 'Says hello, version two' },
    });
    expect(v2.status, v2.text).to.equal(200);
    await page.getByRole('link', { name: 'Workflows & triggers' }).click();
    await page.getByRole('heading', { name: 'Workflows & triggers', level: 1 }).waitFor();
    await audit('workflows');
    await page.getByRole('link', { name: 'Greeter' }).click();
    await page.getByRole('heading', { name: 'Workflow Greeter' }).waitFor();
    const hookRow = page.locator('tr', { hasText: webhookTrigger });
    expect(await hookRow.locator('code').textContent()).to.include('••••••');
    await hookRow.getByRole('button', { name: /Show the webhook URL/ }).click();
    expect(await hookRow.locator('code').textContent()).to.include(`/triggers/${webhookTrigger}`);
    await page
      .locator('tr', { hasText: apiTrigger })
      .getByRole('button', { name: /Copy the URL/ })
      .waitFor();
    await audit('workflow-detail');

    await page.getByLabel('API key').fill(org.apiKey);
    await page.getByLabel('name (required)').fill('Grace');
    await page.getByLabel('times').fill('3');
    await page.getByLabel(/Synchronous/).check();
    await page.getByRole('button', { name: 'Call the trigger' }).click();
    const outcome = page.locator('.outcome');
    await outcome.waitFor();
    expect(await outcome.textContent()).to.include('hello Grace');
    // An error answer of the API is shown with its message and code.
    await page.getByLabel('API key').fill('wrong-key');
    await page.getByLabel(/Asynchronous/).check();
    await page.getByRole('button', { name: 'Call the trigger' }).click();
    await page.locator('.tryit [role="alert"]').getByText('invalid_api_key').waitFor();
    await audit('workflow-try-it');
    await page.getByRole('button', { name: 'Compare' }).click();
    const diff = page.locator('table.diff');
    await diff.waitFor();
    expect(await diff.locator('td.del').textContent()).to.include('"Says hello"');
    expect(await diff.locator('td.ins').textContent()).to.include('"Says hello, version two"');
    await audit('workflow-compare');
  });

  it('queues: a CSV upload with its progress, the batch followed live, skipped rows by reason, a batch cancelled', async () => {
    const queue = await call(server.baseUrl, 'POST', '/v1/queues', {
      token: org.token,
      body: { name: 'Greetings', triggerId: apiTrigger },
    });
    expect(queue.status, queue.text).to.equal(201);
    await page.getByRole('link', { name: 'Queues' }).click();
    await page.getByRole('heading', { name: 'Queues', level: 1 }).waitFor();
    await audit('queues');
    await page.getByRole('link', { name: 'Greetings' }).click();
    await page.getByRole('heading', { name: 'Queue Greetings' }).waitFor();
    await page.getByText('No batches yet.').waitFor();
    await page.getByLabel('CSV file (a header row, then one row per run)').setInputFiles({
      name: 'people.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from('name,times\nAda,1\nBob,2\nCarl\n'),
    });
    await page.getByRole('button', { name: 'Upload and start a batch' }).click();
    await page.getByText(/Batch batch_\S+ created from people.csv/).waitFor();
    const batch = page.locator('li.batch', { hasText: 'people.csv' });
    await batch.getByText('completed').waitFor({ timeout: 20_000 });
    expect(await batch.textContent())
      .to.include('2 of 2 rows finished')
      .and.include('1 rows skipped');
    await batch.getByRole('button', { name: 'Skipped rows' }).click();
    await batch.locator('table').getByText('column_count').waitFor();
    await audit('queue-detail');

    // A batch still under way is cancelled after a confirmation.
    const slow = await call(server.baseUrl, 'POST', '/v1/workflows', {
      token: org.token,
      body: {
        name: 'Slow rows',
        steps: [
          { type: 'code', name: 'Wait', code: 'const end = Date.now() + 1000; while (Date.now() < end) {} return 1;' },
        ],
      },
    });
    const slowTrigger = await call(server.baseUrl, 'POST', '/v1/triggers', {
      token: org.token,
      body: { automationId: slow.body.automationId, kind: 'api' },
    });
    const slowQueue = await call(server.baseUrl, 'POST', '/v1/queues', {
      token: org.token,
      body: { name: 'Slow lane', triggerId: slowTrigger.body.triggerId, concurrencyLimit: 1 },
    });
    await page.goto(`${server.baseUrl}/console/queues/${slowQueue.body.queueId}`);
    await page.getByLabel('CSV file (a header row, then one row per run)').setInputFiles({
      name: 'many.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from(`n\n${Array.from({ length: 20 }, (_, i) => i).join('\n')}\n`),
    });
    await page.getByRole('button', { name: 'Upload and start a batch' }).click();
    const many = page.locator('li.batch', { hasText: 'many.csv' });
    await many.getByRole('button', { name: 'Cancel batch' }).click();
    const confirm = page.getByRole('dialog', { name: /Cancel the batch/ });
    await confirm.getByRole('button', { name: 'Cancel the batch' }).click();
    await many.getByText('cancelled', { exact: true }).waitFor();
  });

  it('collections: trigger URLs, items and the delivery log with its filters', async () => {
    const col = await call(server.baseUrl, 'POST', '/v1/collections', {
      token: org.token,
      body: {
        name: 'Contacts',
        type: 'structured_datastore',
        triggerUrls: [
          { event: 'onCreate', url: `${server.baseUrl}/ext/triggers/${breaksTrigger}`, apiKey: org.apiKey },
          { event: 'onCreate', url: `${server.baseUrl}/ext/triggers/trg_missing`, apiKey: org.apiKey },
        ],
      },
    });
    expect(col.status, col.text).to.equal(201);
    const collectionId = col.body.collectionId;
    const item = await call(server.baseUrl, 'POST', `/memory/items?collectionId=${collectionId}`, {
      token: org.token,
      body: { key: 'ada', content: { name: 'Ada' } },
    });
    expect(item.status, item.text).to.be.oneOf([200, 201]);
    await page.getByRole('link', { name: 'Collections' }).click();
    await page.getByRole('heading', { name: 'Collections', level: 1 }).waitFor();
    await audit('collections');
    await page.getByRole('link', { name: 'Contacts' }).click();
    await page.getByRole('heading', { name: 'Collection Contacts' }).waitFor();
    await page.getByRole('cell', { name: /^ada/ }).waitFor();
    expect(await page.locator('table').first().textContent()).to.include(`…${org.apiKey.slice(-4)}`);
    // The two calls are delivered in the background (the delivery thread): once both have ended,
    // the log is read again.
    const deadline = Date.now() + 40_000;
    for (;;) {
      const log = await call(server.baseUrl, 'GET', `/v1/collections/${collectionId}/deliveries`, { token: org.token });
      if (log.body.items.length === 2 && log.body.items.every((d: { status: string }) => d.status !== 'pending')) {
        expect(log.body.items.map((d: { status: string }) => d.status).sort(), log.text).to.deep.equal([
          'failed',
          'sent',
        ]);
        break;
      }
      if (Date.now() > deadline) throw new Error(`deliveries: ${log.text}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const deliveries = page.locator('h2:has-text("Delivery log") ~ table tbody tr');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await deliveries.getByText('sent', { exact: true }).waitFor();
    await page.getByLabel('Status').selectOption('failed');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await deliveries.getByText('sent', { exact: true }).waitFor({ state: 'detached' });
    expect(await deliveries.count()).to.equal(1);
    expect(await deliveries.textContent()).to.include('failed');
    await audit('collection-detail');
  });

  it('gateway: tool servers, their tools with input schemas, and discovery ranked with confidence', async () => {
    await page.getByRole('link', { name: 'Gateway' }).click();
    await page.getByRole('heading', { name: 'Gateway', level: 1 }).waitFor();
    const servers = page.locator('section[aria-labelledby="gw-servers"]');
    await servers.getByText('/mcp/svc-sidekick').waitFor();
    await servers.locator('tr', { hasText: '/mcp/svc-sidekick' }).getByRole('button').click();
    await servers.getByText('capabilities_discover').first().waitFor();
    await audit('gateway');
    await page.getByLabel('What should a tool do?').fill('list the tool servers');
    await page.getByLabel('What should a tool do?').press('Enter');
    const ranked = page.locator('section[aria-labelledby="gw-discovery"] table');
    await ranked.waitFor({ timeout: 20_000 });
    expect(await ranked.locator('tbody tr').count()).to.be.greaterThan(0);
    expect(await ranked.locator('meter').count()).to.be.greaterThan(0);
    await audit('gateway-discovery');
  });

  it('an expired session asks to sign in again over the page and sends the refused call again', async () => {
    const second = await createCredential(server.app.services.db, org.orgId, { label: 'console' });
    await page.goto(`${server.baseUrl}/console/workflows`);
    await page.getByRole('heading', { name: 'Workflows & triggers', level: 1 }).waitFor();
    // The credential of the current token is revoked: its token stops being accepted.
    const creds = await call(server.baseUrl, 'GET', '/v1/credentials', { token: org.token });
    const first = creds.body.items.find((c: { clientId: string }) => c.clientId === org.clientId);
    const revoked = await call(server.baseUrl, 'DELETE', `/v1/credentials/${first.id}`, { token: org.token });
    expect(revoked.status, revoked.text).to.be.oneOf([200, 204]);
    await page.getByRole('link', { name: 'Greeter' }).click();
    const dialog = page.getByRole('dialog', { name: 'Your session has expired' });
    await dialog.waitFor();
    await audit('session-expired');
    await dialog.getByLabel('Client id').fill(second.credential.clientId);
    await dialog.getByLabel('Client secret').fill(second.clientSecret);
    await dialog.getByLabel('Client secret').press('Enter');
    await page.getByRole('heading', { name: 'Workflow Greeter' }).waitFor();
    expect(await dialog.isVisible()).to.equal(false);
    expect(page.url()).to.include(`/console/workflows/${automationId}`);
  });

  it('settings: a new API key is shown once; revoking asks first, and the last credential is refused with its code', async () => {
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
    await audit('settings');
    const keys = page.locator('section[aria-labelledby="api-keys-title"]');
    await keys.getByLabel('Label of a new API key').fill('from the console');
    await keys.getByLabel('Label of a new API key').press('Enter');
    const once = keys.locator('.shown-once');
    await once.waitFor();
    const secret = (await once.locator('code').first().textContent())!;
    const works = await call(server.baseUrl, 'POST', `/ext/triggers/${apiTrigger}`, {
      headers: { 'x-api-key': secret },
      body: { name: 'from settings' },
    });
    expect(works.status, works.text).to.equal(200);
    await audit('settings-secret-shown');
    await once.getByRole('button', { name: 'Done, hide it' }).click();
    expect(await page.getByText(secret).count()).to.equal(0);
    // Escape cancels a revocation; the key still works.
    await keys.getByRole('button', { name: 'Revoke API key from the console' }).click();
    const confirm = page.getByRole('dialog', { name: /Revoke the API key/ });
    await confirm.waitFor();
    await page.keyboard.press('Escape');
    await confirm.waitFor({ state: 'detached' });
    await keys.getByRole('button', { name: 'Revoke API key from the console' }).click();
    await confirm.getByRole('button', { name: 'Revoke API key' }).click();
    await keys.locator('tr', { hasText: 'from the console' }).getByText('revoked').waitFor();
    const refused = await call(server.baseUrl, 'POST', `/ext/triggers/${apiTrigger}`, {
      headers: { 'x-api-key': secret },
      body: {},
    });
    expect(refused.status).to.equal(401);
    // The only active credential left is the one this session signed in with: refused (409).
    const creds = page.locator('section[aria-labelledby="credentials-title"]');
    await creds.getByRole('button', { name: 'Revoke credential console' }).click();
    await page
      .getByRole('dialog', { name: /Revoke the credential/ })
      .getByRole('button', { name: 'Revoke credential' })
      .click();
    await creds.getByRole('alert').getByText('last_active_credential').waitFor();
    await audit('settings-error');
  });
});
