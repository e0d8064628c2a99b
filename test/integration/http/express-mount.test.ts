/**
 * Switchyard embedded in an existing express 5 application (src/embed.ts, README "Embedding"):
 * `app.use('/switchyard', switchyard.handler)` next to the host's own routes, on loopback, with
 * PUBLIC_URL carrying the prefix so every absolute URL in answers (token issuer, trigger URLs,
 * signed run-file URLs, designatedOutput.url, bootstrap.json) reaches the mount. Every answer
 * of the mounted app is checked against the OpenAPI bundle.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import express from 'express';
import { createSwitchyard, type Switchyard } from '../../../src/embed.js';
import { createLogger } from '../../../src/config/logger.js';
import { call } from '../../helpers/server.js';

async function listen(app: express.Express): Promise<{ server: Server; origin: string }> {
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () =>
      resolve({ server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }),
    );
  });
}

async function closeServer(server: Server | undefined): Promise<void> {
  if (!server) return;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

describe('embedding: Switchyard mounted under /switchyard in an express 5 app (sqlite)', function () {
  this.timeout(60_000);
  const logLines: Record<string, unknown>[] = [];
  let dataDir: string;
  let host: express.Express;
  let server: Server;
  let origin: string;
  let base: string;
  let switchyard: Switchyard;
  let token: string;
  /** Another host app that parses JSON before the mount (the documented mistake). */
  let misordered: Server | undefined;

  before(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-embed-'));
    host = express();
    ({ server, origin } = await listen(host));
    base = `${origin}/switchyard`;
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n'))
          if (line) logLines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    switchyard = await createSwitchyard({
      env: {
        DATA_DIR: dataDir,
        PUBLIC_URL: base,
        SYNC_WAIT_MS: '20000',
        SANDBOX_POOL_SIZE: '1',
        DATABASE_URL: '',
        REDIS_URL: '',
      },
      log: createLogger('warn', sink),
      validateResponses: true,
    });
    // The order a user writes: Switchyard first, then the host's body parser and routes.
    host.use('/switchyard', switchyard.handler);
    host.use(express.json());
    host.get('/hello', (_req, res) => {
      res.json({ hello: 'from the host app' });
    });
    host.post('/echo', (req, res) => {
      res.json({ echoed: req.body as unknown });
    });
  });

  after(async () => {
    await closeServer(misordered);
    await closeServer(server);
    await switchyard?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  afterEach(() => {
    const failures = switchyard.responseValidator?.failures ?? [];
    expect(
      failures.map((f) => f.message),
      'responses that break the OpenAPI document',
    ).to.deep.equal([]);
  });

  it('bootstrap.json and the token issuer carry the prefix; op:issueOauthToken works through the mount', async () => {
    const boot = switchyard.bootstrap!;
    expect(boot, 'SEED_DEMO on an empty store').to.not.equal(undefined);
    expect(JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8')).baseUrls).to.deep.equal({
      triggers: base,
      auth: base,
      mcp: `${base}/mcp`,
      connect: base,
      runFiles: base,
    });
    const res = await fetch(`${boot.baseUrls.auth}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: boot.clientId,
        client_secret: boot.clientSecret,
        scope: `org:${boot.orgId}`,
      }),
    });
    expect(res.status).to.equal(200);
    token = ((await res.json()) as { access_token: string }).access_token;
    const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { iss: string };
    expect(claims.iss).to.equal(base);
    const meta = await call(base, 'GET', '/.well-known/oauth-authorization-server');
    expect(meta.body).to.include({
      issuer: base,
      token_endpoint: `${base}/oauth/token`,
      jwks_uri: `${base}/.well-known/jwks.json`,
    });
    const jwks = await call(base, 'GET', '/.well-known/jwks.json');
    expect(jwks.status).to.equal(200);
  });

  it('op:listTriggers through the mount lists trigger URLs under the prefix', async () => {
    const boot = switchyard.bootstrap!;
    const res = await call(base, 'GET', `/v1/triggers?automationId=${boot.demo.automationId}`, { token });
    expect(res.status, res.text).to.equal(200);
    const urls = JSON.stringify(res.body);
    expect(urls).to.contain(`${base}/ext/triggers/${boot.demo.apiTriggerId}`);
    expect(urls).to.not.match(new RegExp(`${origin}/ext/`));
  });

  it('op:callApiTrigger async, op:getRunStatus and op:getRunResults through the mount; designatedOutput.url downloads through it', async () => {
    const boot = switchyard.bootstrap!;
    const res = await call(base, 'POST', `/ext/triggers/${boot.demo.apiTriggerId}`, {
      headers: { 'x-api-key': boot.apiKey },
      body: { name: 'Ada' },
    });
    expect(res.status, res.text).to.equal(200);
    expect(res.text).to.equal('null');
    const runId = res.headers.get('x-pf-run-id')!;
    expect(res.headers.get('x-pf-automation-id')).to.equal(boot.demo.automationId);
    const poll = `/ext/webhook/${boot.apiKey}/runs/${boot.demo.automationId}/${runId}`;
    const deadline = Date.now() + 30_000;
    let status = await call(base, 'GET', `${poll}/status`);
    while (!['COMPLETE', 'FAILED', 'TIMEOUT'].includes(status.body.status)) {
      expect(Date.now(), `run still ${status.body.status}`).to.be.below(deadline);
      await new Promise((r) => setTimeout(r, 50));
      status = await call(base, 'GET', `${poll}/status`);
    }
    expect(status.status).to.equal(200);
    expect(status.body).to.include({ runId, status: 'COMPLETE' });
    const results = await call(base, 'GET', `${poll}/results`);
    expect(results.status).to.equal(200);
    const output = results.body.designatedOutput as { url: string; fileName: string };
    expect(output.fileName).to.equal('report.md');
    expect(output.url.startsWith(`${base}/files/`), output.url).to.equal(true);
    expect(results.body.results[1].resultUrls['report.md'].url.startsWith(`${base}/files/`)).to.equal(true);
    const file = await fetch(output.url);
    expect(file.status).to.equal(200);
    expect(file.headers.get('content-type')).to.match(/^text\/markdown/);
    expect(await file.text()).to.contain('Hello, Ada!');
  });

  it('op:callApiTrigger sync (x-api-wait: true) through the mount; its designatedOutput.url downloads; a tampered one is 403', async () => {
    const boot = switchyard.bootstrap!;
    const res = await call(base, 'POST', `/ext/triggers/${boot.demo.apiTriggerId}`, {
      headers: { 'x-api-key': boot.apiKey, 'x-api-wait': 'true' },
      body: { name: 'Grace' },
    });
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.include({ automationId: boot.demo.automationId, type: 'TRIGGER', status: 'COMPLETE' });
    expect(res.body.results[0].result.result).to.equal('Hello, Grace!');
    const url = res.body.designatedOutput.url as string;
    expect(url.startsWith(`${base}/files/`), url).to.equal(true);
    const file = await fetch(url);
    expect(file.status).to.equal(200);
    expect(await file.text()).to.contain('Hello, Grace!');
    const tampered = await fetch(
      url.replace(/signature=[0-9a-f]/, (m) => m.slice(0, -1) + (m.endsWith('0') ? '1' : '0')),
    );
    expect(tampered.status).to.equal(403);
    expect(await tampered.json()).to.include({ error: 'invalid_signature' });
  });

  it("the host app's own routes still work, its body parser included", async () => {
    const hello = await call(origin, 'GET', '/hello');
    expect(hello.status).to.equal(200);
    expect(hello.body).to.deep.equal({ hello: 'from the host app' });
    const echo = await call(origin, 'POST', '/echo', { body: { a: 1 } });
    expect(echo.body).to.deep.equal({ echoed: { a: 1 } });
  });

  it('unknown paths under the prefix are 404 in our error shape, never passed on to the host', async () => {
    for (const p of ['/nope', '/', '/hello', '/ext/triggers']) {
      const res = await call(base, 'GET', p);
      expect(res.status, p).to.equal(404);
      expect(res.body, p).to.deep.equal({ error: 'not_found', message: 'No such endpoint' });
      expect(res.headers.get('x-request-id'), p).to.be.a('string');
    }
    const wrongMethod = await call(base, 'DELETE', '/oauth/token');
    expect(wrongMethod.status).to.equal(405);
    expect(wrongMethod.headers.get('allow')).to.equal('POST');
  });

  it('mounted after express.json(): a request with a body is answered at once with body_already_read (500), not left hanging; a wrong mount path is logged', async () => {
    const wrong = express();
    wrong.use(express.json());
    wrong.use('/elsewhere', switchyard.handler);
    let wrongOrigin: string;
    ({ server: misordered, origin: wrongOrigin } = await listen(wrong));
    const boot = switchyard.bootstrap!;
    const started = Date.now();
    const res = await call(wrongOrigin, 'POST', `/elsewhere/ext/triggers/${boot.demo.apiTriggerId}`, {
      headers: { 'x-api-key': boot.apiKey },
      body: { name: 'x' },
    });
    expect(Date.now() - started).to.be.below(5000);
    expect(res.status).to.equal(500);
    expect(res.body.error).to.equal('body_already_read');
    expect(res.body.message).to.contain('before any body parser');
    // A bodiless call still works there (nothing was consumed).
    const jwks = await call(wrongOrigin, 'GET', '/elsewhere/.well-known/jwks.json');
    expect(jwks.status).to.equal(200);
    const warning = logLines.find((l) => l.mountPath === '/elsewhere');
    expect(warning, 'a warning that PUBLIC_URL does not match the mount').to.include({ publicUrl: base });
    expect(
      logLines.some((l) => l.mountPath === '/switchyard'),
      'no warning for the right mount',
    ).to.equal(false);
  });
});
