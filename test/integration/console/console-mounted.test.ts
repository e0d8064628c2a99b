/**
 * The web console of a service mounted under a prefix in a host application (src/embed.ts):
 * express 5 serves Switchyard at /switchyard, and the console at /switchyard/console signs in,
 * follows its links, reloads a deep link, loads the editor's lazy chunk and streams nothing from
 * outside the prefix, in real Chromium against the real API.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import express from 'express';
import type { Page } from 'playwright-core';
import { createSwitchyard, type Switchyard } from '../../../src/embed.js';
import { createLogger } from '../../../src/config/logger.js';
import { requireChromium } from '../../helpers/chromium.js';
import { openConsoleBrowser, signIn, type ConsoleBrowser } from '../../helpers/console.js';
import { call } from '../../helpers/server.js';

describe('web console under a host application mount (/switchyard/console) in Chromium', function () {
  this.timeout(60_000);
  let dataDir: string;
  let server: Server;
  let origin: string;
  let base: string;
  let switchyard: Switchyard;
  let ui: ConsoleBrowser;
  let page: Page;
  /** Every request the page made, by path. */
  const requested: string[] = [];

  before(async function () {
    requireChromium(this);
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-console-mount-'));
    const host = express();
    server = await new Promise<Server>((resolve) => {
      const s = host.listen(0, '127.0.0.1', () => resolve(s));
    });
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    base = `${origin}/switchyard`;
    switchyard = await createSwitchyard({
      env: { DATA_DIR: dataDir, PUBLIC_URL: base, SANDBOX_POOL_SIZE: '1', DATABASE_URL: '', REDIS_URL: '' },
      log: createLogger('warn'),
    });
    host.use('/switchyard', switchyard.handler);
    host.get('/', (_req, res) => {
      res.send('the host application');
    });
    ui = await openConsoleBrowser();
    page = ui.page;
    page.on('request', (r) => requested.push(new URL(r.url()).pathname));
  });

  after(async () => {
    await ui?.close();
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    await switchyard?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('roots the page’s script and stylesheet at the mount; the files answer there', async () => {
    const res = await fetch(`${base}/console/runs/some/deep/link`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-security-policy')).to.contain("script-src 'self'");
    const html = await res.text();
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).to.be.greaterThan(0);
    for (const ref of refs) {
      expect(ref, ref).to.match(/^\/switchyard\/console\/assets\//);
      const asset = await fetch(`${origin}${ref}`);
      expect(asset.status, ref).to.equal(200);
    }
  });

  it('signs in, follows its links, reloads a deep link and opens the editor, all under the prefix', async () => {
    const boot = switchyard.bootstrap!;
    await signIn(page, base, {
      orgId: boot.orgId,
      clientId: boot.clientId,
      clientSecret: boot.clientSecret,
      apiKey: '',
      token: '',
    });
    const run = await call(base, 'POST', `/ext/triggers/${boot.demo.apiTriggerId}`, {
      headers: { 'x-api-key': boot.apiKey, 'x-api-wait': 'true' },
      body: { name: 'Ada' },
    });
    expect(run.status, run.text).to.equal(200);
    const runId = run.headers.get('x-pf-run-id')!;

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Runs' }).click();
    await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
    expect(new URL(page.url()).pathname).to.equal('/switchyard/console/runs');
    await page.getByRole('link', { name: runId }).click();
    await page.getByRole('heading', { name: `Run ${runId}` }).waitFor();
    expect(new URL(page.url()).pathname).to.equal(`/switchyard/console/runs/${boot.demo.automationId}/${runId}`);
    // A deep link loaded afresh: the page finds its scripts and the API, and keeps the session.
    await page.reload();
    await page.getByRole('heading', { name: `Run ${runId}` }).waitFor();
    await page.getByRole('link', { name: 'report.md' }).first().waitFor();
    await ui.audit('mounted-run-detail');

    // The editor is a chunk of its own, loaded when first opened.
    await page.goto(`${base}/console/workflows/${boot.demo.automationId}/edit`);
    await page.getByRole('heading', { name: /^Edit workflow/, level: 1 }).waitFor();
    await page.getByRole('textbox', { name: 'Definition (JSON)' }).waitFor();

    const outside = requested.filter((p) => !p.startsWith('/switchyard/'));
    expect(outside, 'requests outside the mount').to.deep.equal([]);
    expect(requested.some((p) => p === '/switchyard/oauth/token')).to.equal(true);
    expect(requested.some((p) => p.startsWith('/switchyard/v1/runs'))).to.equal(true);
  });
});
