/**
 * The web console against a service on PostgreSQL + Redis (the store and coordination a scaled
 * deployment uses), in one Chromium page: signs in, then visits every page over real data made
 * through the API (a run, a workflow with triggers, a queue whose CSV batch is followed to
 * completed, a collection with a delivery, gateway discovery, a browser task, an agent,
 * settings), checking each page's content, axe-core and the Content-Security-Policy. The other
 * console files cover the pages' interactions on sqlite; this one shows each page reads the same
 * way over the other store, in one pass.
 */
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { call, createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { requireChromium } from '../../helpers/chromium.js';
import { openConsoleBrowser, signIn, type ConsoleBrowser } from '../../helpers/console.js';
import { deploy, code, waitTerminal, type Deployed } from '../../helpers/runs.js';
import { dropRedisKeys, isPgAvailable } from '../../helpers/store.js';
import { finishedScript, startScript } from '../../helpers/browser-tasks.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('web console on PostgreSQL + Redis (Chromium)', function () {
  this.timeout(60_000);
  const prefix = `sy-console-pg-${process.pid}-${Date.now()}`;
  let server: TestServer;
  let org: TestOrg;
  let ui: ConsoleBrowser;
  let page: Page;
  let wf: Deployed;
  let runId: string;

  before(async function () {
    requireChromium(this);
    if (!(await isPgAvailable())) {
      if (process.env.CI === 'true') throw new Error('PostgreSQL is required on CI');
      this.skip();
    }
    server = await startTestServer('pg', { REDIS_URL, REDIS_PREFIX: prefix });
    org = await createTestOrg(server, 'Console pg org');
    wf = await deploy(server, org, {
      name: 'Pg greeter',
      inputSchema: { type: 'object', properties: { name: { type: 'string' } } },
      steps: [code('Greet', 'return "hello " + (ctx.inputs.name ?? "nobody");')],
    });
    const res = await call(server.baseUrl, 'POST', `/ext/triggers/${wf.apiTriggerId}`, {
      headers: { 'x-api-key': org.apiKey },
      body: { name: 'Ada' },
    });
    expect(res.status, res.text).to.equal(200);
    runId = res.headers.get('x-pf-run-id')!;
    const done = await waitTerminal(server, org.apiKey, wf.automationId, runId);
    expect(done.status).to.equal('COMPLETE');
    ui = await openConsoleBrowser();
    page = ui.page;
  });

  after(async () => {
    await ui?.close();
    server?.assertResponsesValid();
    await server?.close();
    await dropRedisKeys(REDIS_URL, prefix).catch(() => undefined);
  });

  it('signs in, then shows every page over data in PostgreSQL', async () => {
    await signIn(page, server.baseUrl, org);
    await page.locator('.chart canvas').first().waitFor();
    await ui.audit('pg-overview');

    // Runs: the run, then its page with the step timeline.
    await page.getByRole('link', { name: 'Runs', exact: true }).click();
    await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
    const row = page.locator('tr', { has: page.getByRole('link', { name: runId }) });
    expect(await row.textContent())
      .to.include('COMPLETE')
      .and.include(`${wf.automationId} v1`);
    await ui.audit('pg-runs');
    await page.getByRole('link', { name: runId }).click();
    await page.getByRole('heading', { name: `Run ${runId}` }).waitFor();
    await page.locator('.timeline li', { hasText: 'Greet' }).getByText('COMPLETE').waitFor();
    await ui.audit('pg-run-detail');

    // Workflows: the workflow with its two triggers, and its page listing them.
    await page.getByRole('link', { name: 'Workflows & triggers' }).click();
    await page.getByRole('heading', { name: 'Workflows & triggers', level: 1 }).waitFor();
    const wfRow = page.locator('tr', { has: page.getByRole('link', { name: 'Pg greeter' }) });
    expect((await wfRow.locator('td').nth(3).textContent())?.trim()).to.equal('2');
    await ui.audit('pg-workflows');
    await page.getByRole('link', { name: 'Pg greeter' }).click();
    await page.getByRole('heading', { name: 'Workflow Pg greeter' }).waitFor();
    await page
      .locator('tr', { hasText: wf.apiTriggerId })
      .getByRole('button', { name: /Copy the URL/ })
      .waitFor();
    await page.locator('tr', { hasText: wf.webhookTriggerId }).waitFor();
    await ui.audit('pg-workflow-detail');
  });

  it('queues: a CSV batch uploaded from the page is followed to completed', async () => {
    const queue = await call(server.baseUrl, 'POST', '/v1/queues', {
      token: org.token,
      body: { name: 'Pg lane', triggerId: wf.apiTriggerId },
    });
    expect(queue.status, queue.text).to.equal(201);
    await page.getByRole('link', { name: 'Queues' }).click();
    await page.getByRole('heading', { name: 'Queues', level: 1 }).waitFor();
    await page.getByRole('link', { name: 'Pg lane' }).waitFor();
    await ui.audit('pg-queues');
    await page.getByRole('link', { name: 'Pg lane' }).click();
    await page.getByRole('heading', { name: 'Queue Pg lane' }).waitFor();
    await page.getByLabel('CSV file (a header row, then one row per run)').setInputFiles({
      name: 'names.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from('name\nAda\nBob\nCy\n'),
    });
    await page.getByRole('button', { name: 'Upload and start a batch' }).click();
    const batch = page.locator('li.batch', { hasText: 'names.csv' });
    await batch.getByText('completed').waitFor({ timeout: 20_000 });
    expect(await batch.textContent()).to.include('3 of 3 rows finished');
    await ui.audit('pg-queue-detail');
  });

  it('collections: an item and its delivery in the log', async () => {
    const col = await call(server.baseUrl, 'POST', '/v1/collections', {
      token: org.token,
      body: {
        name: 'Pg contacts',
        type: 'structured_datastore',
        triggerUrls: [
          { event: 'onCreate', url: `${server.baseUrl}/ext/triggers/${wf.apiTriggerId}`, apiKey: org.apiKey },
        ],
      },
    });
    expect(col.status, col.text).to.equal(201);
    const collectionId = col.body.collectionId;
    const item = await call(server.baseUrl, 'POST', `/memory/items?collectionId=${collectionId}`, {
      token: org.token,
      body: { key: 'grace', content: { name: 'Grace' } },
    });
    expect(item.status, item.text).to.be.oneOf([200, 201]);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const log = await call(server.baseUrl, 'GET', `/v1/collections/${collectionId}/deliveries`, { token: org.token });
      if (log.body.items.length === 1 && log.body.items[0].status !== 'pending') {
        expect(log.body.items[0].status, log.text).to.equal('sent');
        break;
      }
      if (Date.now() > deadline) throw new Error(`deliveries: ${log.text}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    await page.getByRole('link', { name: 'Collections' }).click();
    await page.getByRole('heading', { name: 'Collections', level: 1 }).waitFor();
    await page.getByRole('link', { name: 'Pg contacts' }).click();
    await page.getByRole('heading', { name: 'Collection Pg contacts' }).waitFor();
    await page.getByRole('cell', { name: /^grace/ }).waitFor();
    const deliveries = page.locator('h2:has-text("Delivery log") ~ table tbody tr');
    await deliveries.getByText('sent', { exact: true }).waitFor();
    expect(await deliveries.textContent()).to.include('onCreate');
    await ui.audit('pg-collection-detail');
  });

  it('gateway discovery, browser tasks, agents and settings', async () => {
    await page.getByRole('link', { name: 'Gateway' }).click();
    await page.getByRole('heading', { name: 'Gateway', level: 1 }).waitFor();
    await page.locator('section[aria-labelledby="gw-servers"]').getByText('/mcp/svc-sidekick').waitFor();
    await page.getByLabel('What should a tool do?').fill('list the tool servers');
    await page.getByLabel('What should a tool do?').press('Enter');
    const ranked = page.locator('section[aria-labelledby="gw-discovery"] table');
    await ranked.waitFor({ timeout: 20_000 });
    expect(await ranked.locator('tbody tr').count()).to.be.greaterThan(0);
    expect(await ranked.locator('meter').count()).to.be.greaterThan(0);
    await ui.audit('pg-gateway');

    const sessionId = await startScript(server, org, "console.log('from pg'); return { ok: true };");
    const task = await finishedScript(server, org, sessionId, 30_000);
    expect(task.status, JSON.stringify(task)).to.equal('completed');
    await page.getByRole('link', { name: 'Browser tasks' }).click();
    await page.getByRole('heading', { name: 'Browser tasks', level: 1 }).waitFor();
    const taskRow = page.locator('tr', { has: page.getByRole('link', { name: sessionId }) });
    expect(await taskRow.textContent()).to.include('completed');
    await ui.audit('pg-browser-tasks');

    const agent = await call(server.baseUrl, 'POST', '/v1/agents', {
      token: org.token,
      body: { name: 'Pg helper', description: 'Answers from PostgreSQL', instructions: 'Answer briefly.' },
    });
    expect(agent.status, agent.text).to.equal(201);
    const channel = await call(server.baseUrl, 'POST', '/v1/channels', {
      token: org.token,
      body: { agentId: agent.body.agentId, name: 'Pg site' },
    });
    expect(channel.status, channel.text).to.equal(201);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Agents' }).click();
    await page.getByRole('heading', { name: 'Agents', level: 1 }).waitFor();
    const agentRow = page.locator('tr', { has: page.getByRole('button', { name: 'Pg helper' }) });
    expect(await agentRow.textContent()).to.include('Answers from PostgreSQL');
    expect((await agentRow.locator('td').nth(2).textContent())?.trim()).to.equal('1');
    await ui.audit('pg-agents');

    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
    await page.locator('section[aria-labelledby="credentials-title"]').getByText(org.clientId).waitFor();
    await page.locator('section[aria-labelledby="api-keys-title"]').locator('tbody tr').first().waitFor();
    await ui.audit('pg-settings');
  });
});
