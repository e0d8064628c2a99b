/**
 * The README's start command as a real process: first start on an empty DATA_DIR seeds the
 * demo, writes bootstrap.json (mode 0600), prints working commands once; a second start does
 * not seed again; SIGTERM shuts down cleanly.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { freePort, call } from '../../helpers/server.js';
import { isPgAvailable, TEST_PG_URL } from '../../helpers/store.js';
import { bundled, realDist } from '../../helpers/process.js';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../..');

interface Proc {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** The service as `npm start` runs it (dist/main.js) when `real`, else its test build (test/helpers/process.ts). */
function start(dataDir: string, port: number, extraEnv: Record<string, string> = {}, real = false): Proc {
  let out = '';
  const child = spawn(
    process.execPath,
    real ? ['--max-semi-space-size=2', path.join(realDist(), 'main.js')] : [bundled('main')],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        PUBLIC_URL: `http://127.0.0.1:${port}`,
        ...extraEnv,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

async function waitReady(base: string, proc: Proc): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null) throw new Error(`server exited early:\n${proc.output()}`);
    try {
      if ((await fetch(`${base}/readyz`)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`server not ready:\n${proc.output()}`);
}

describe('process: npm start on an empty DATA_DIR', function () {
  this.timeout(60_000);
  let dataDir: string;
  before(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-start-'));
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('seeds the demo, writes bootstrap.json 0600, and the printed token command works; SIGTERM exits 0', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const proc = start(dataDir, port, {}, true);
    try {
      await waitReady(base, proc);
      const file = path.join(dataDir, 'bootstrap.json');
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && !proc.output().includes('Switchyard is ready'))
        await new Promise((r) => setTimeout(r, 100));
      expect(statSync(file).mode & 0o777).to.equal(0o600);
      const b = JSON.parse(readFileSync(file, 'utf8'));
      expect(Object.keys(b).sort()).to.deep.equal(['apiKey', 'baseUrls', 'clientId', 'clientSecret', 'demo', 'orgId']);
      expect(Object.keys(b.baseUrls).sort()).to.deep.equal(['auth', 'connect', 'mcp', 'runFiles', 'triggers']);
      expect(Object.keys(b.demo).sort()).to.deep.equal([
        'agentId',
        'apiTriggerId',
        'automationId',
        'channelApiKey',
        'channelTriggerId',
        'datastoreId',
        'queueId',
        'webhookTriggerId',
      ]);
      expect(b.demo.channelTriggerId).to.match(/^chn_[0-9a-f]{32}$/);
      expect(b.demo.datastoreId).to.match(/^col_[0-9a-f]{32}$/);
      expect(b.demo.queueId).to.match(/^queue_[0-9a-f]{32}$/);
      expect(b.demo.agentId).to.match(/^agt_[0-9a-f]{32}$/);
      expect(b.baseUrls.mcp).to.equal(`${base}/mcp`);

      // The printed command, as printed.
      const printed = proc.output();
      expect(printed).to.contain(`-d client_id=${b.clientId}`);
      const token = await call(base, 'POST', '/oauth/token', {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        raw: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: b.clientId,
          client_secret: b.clientSecret,
          scope: `org:${b.orgId}`,
        }).toString(),
      });
      expect(token.status).to.equal(200);
      const wf = await call(base, 'GET', `/v1/workflows/${b.demo.automationId}`, { token: token.body.access_token });
      expect(wf.status).to.equal(200);
      expect(wf.body.definition.steps).to.have.length.greaterThanOrEqual(2);
      expect(wf.body.definition.output).to.deep.equal({ stepIndex: 1, fileName: 'report.md' });
      const triggers = await call(base, 'GET', `/v1/triggers?automationId=${b.demo.automationId}`, {
        token: token.body.access_token,
      });
      const byId = Object.fromEntries(triggers.body.items.map((t: { triggerId: string }) => [t.triggerId, t]));
      expect(byId[b.demo.apiTriggerId]).to.include({ kind: 'api' });
      expect(byId[b.demo.apiTriggerId].designatedOutput).to.deep.equal({ stepIndex: 1, fileName: 'report.md' });
      expect(byId[b.demo.webhookTriggerId]).to.include({ kind: 'webhook' });
      // The demo queue runs the demo workflow through its API trigger (spec section 15).
      const queue = await call(base, 'GET', `/v1/queues/${b.demo.queueId}`, { token: token.body.access_token });
      expect(queue.status, queue.text).to.equal(200);
      expect(queue.body).to.include({ name: 'Demo queue', triggerId: b.demo.apiTriggerId, paused: false });
      expect(printed).to.contain(`/v1/queues/${b.demo.queueId}`);

      // The demo agent's channel: without DEFAULT_MODEL it says how to configure one, never pretends.
      const agentReply = await call(base, 'POST', `/ext/triggers/${b.demo.channelTriggerId}`, {
        headers: { 'x-api-key': b.demo.channelApiKey },
        body: { message: 'hello' },
      });
      expect([agentReply.status, agentReply.body.error]).to.deep.equal([503, 'model_not_configured']);
      expect(agentReply.body.message).to.include('DEFAULT_MODEL').and.include('OPENAI_COMPATIBLE_BASE_URL');
      const agent = await call(base, 'GET', `/v1/agents/${b.demo.agentId}`, { token: token.body.access_token });
      expect(agent.body.servers).to.deep.equal([{ server: 'gateway' }]);

      // Secrets never reach the log lines (they are printed once, in the welcome text only).
      const logLines = printed.split('\n').filter((l) => l.startsWith('{'));
      for (const line of logLines) {
        expect(line).to.not.contain(b.clientSecret);
        expect(line).to.not.contain(b.apiKey);
        expect(line).to.not.contain(b.demo.channelApiKey);
      }
    } finally {
      proc.child.kill('SIGTERM');
    }
    expect(await proc.exited).to.equal(0);
  });

  it('a second start on the same DATA_DIR keeps the data and does not seed or print again', async () => {
    const before = readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8');
    const port = await freePort();
    const proc = start(dataDir, port);
    try {
      await waitReady(`http://127.0.0.1:${port}`, proc);
      await new Promise((r) => setTimeout(r, 300));
      expect(proc.output()).to.not.contain('Switchyard is ready');
      expect(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8')).to.equal(before);
    } finally {
      proc.child.kill('SIGTERM');
    }
    expect(await proc.exited).to.equal(0);
  });

  it('reports the code isolation in force in its startup log and in /readyz', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const proc = start(dataDir, port);
    try {
      await waitReady(base, proc);
      const ready = await call(base, 'GET', '/readyz');
      const isolation = ready.body.details.isolation;
      expect(ready.body.checks.isolation).to.equal('ok');
      expect(isolation.mode).to.equal(process.env.CODE_ISOLATION ?? 'auto');
      expect(isolation.level).to.be.oneOf(['namespaces', 'process']);
      expect(Object.keys(isolation.layers).sort()).to.deep.equal(['language', 'os', 'process']);
      const line = proc
        .output()
        .split('\n')
        .find((l) => l.includes('"msg":"code isolation:'));
      expect(line, proc.output()).to.be.a('string');
      expect(JSON.parse(line!).isolation.level).to.equal(isolation.level);
    } finally {
      proc.child.kill('SIGTERM');
    }
    expect(await proc.exited).to.equal(0);
  });

  it('without bubblewrap: auto starts with one warning naming what is missing and runs the demo workflow; strict refuses to start', async () => {
    // No program on the search path: no bubblewrap, prlimit or setpriv.
    const bare = { PATH: '/nonexistent' };
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const proc = start(dataDir, port, { ...bare, CODE_ISOLATION: 'auto' });
    try {
      await waitReady(base, proc);
      const ready = await call(base, 'GET', '/readyz');
      expect(ready.body.details.isolation).to.include({ mode: 'auto', level: 'process' });
      const warnings = proc
        .output()
        .split('\n')
        .filter((l) => l.includes('not every layer is available here'));
      expect(warnings, proc.output()).to.have.length(1);
      expect(warnings[0]).to.contain('apt-get install -y bubblewrap');
      const b = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8'));
      const run = await call(base, 'POST', `/ext/triggers/${b.demo.apiTriggerId}`, {
        headers: { 'X-API-KEY': b.apiKey, 'x-api-wait': 'true' },
        body: { name: 'Ada' },
      });
      expect(run.status, run.text).to.equal(200);
      expect(run.body.results.map((r: { exitCode: number }) => r.exitCode)).to.deep.equal([0, 0]);
    } finally {
      proc.child.kill('SIGTERM');
    }
    expect(await proc.exited).to.equal(0);
    const strict = start(dataDir, await freePort(), { ...bare, CODE_ISOLATION: 'strict' });
    expect(await strict.exited).to.equal(2);
    expect(strict.output()).to.contain('CODE_ISOLATION=strict').and.contain('apt-get install -y bubblewrap');
  });

  it('refuses an unknown CODE_ISOLATION with a clear message and exit code 2', async () => {
    const proc = start(dataDir, await freePort(), { CODE_ISOLATION: 'maybe' });
    expect(await proc.exited).to.equal(2);
    expect(proc.output()).to.contain('CODE_ISOLATION must be auto, strict or process');
  });

  it('refuses a bad configuration with a clear message and exit code 2', async () => {
    const proc = start(dataDir, 70000);
    expect(await proc.exited).to.equal(2);
    expect(proc.output()).to.contain('PORT must be an integer between 0 and 65535');
  });
});

describe('process: npm start with DATABASE_URL and REDIS_URL (PostgreSQL + Redis)', function () {
  this.timeout(60_000);
  const schema = `t_start_${process.pid}`;
  let dataDir: string;
  before(async function () {
    if (!(await isPgAvailable())) {
      if (process.env.CI === 'true') throw new Error(`PostgreSQL is required on CI (${TEST_PG_URL})`);
      this.skip();
    }
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-start-pg-'));
    const c = new pg.Client({ connectionString: TEST_PG_URL });
    await c.connect();
    await c.query(`CREATE SCHEMA "${schema}"`);
    await c.end();
  });
  after(async () => {
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    const c = new pg.Client({ connectionString: TEST_PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await c.end();
  });

  it('migrates and seeds PostgreSQL, reports Redis in /readyz, and keeps no sqlite file', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const databaseUrl = `${TEST_PG_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
    const proc = start(dataDir, port, {
      DATABASE_URL: databaseUrl,
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_PREFIX: `sy-start-${process.pid}-${Date.now()}`,
    });
    try {
      await waitReady(base, proc);
      const ready = await call(base, 'GET', '/readyz');
      expect(ready.body).to.deep.include({
        status: 'ready',
        draining: false,
        checks: { store: 'ok', blobs: 'ok', isolation: 'ok', redis: 'ok' },
      });
      expect(Object.keys(ready.body.details)).to.deep.equal(['isolation']);
      const b = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8'));
      const c = new pg.Client({ connectionString: databaseUrl });
      await c.connect();
      const orgs = await c.query('select id from organizations');
      await c.end();
      expect(orgs.rows.map((r: { id: string }) => r.id)).to.deep.equal([b.orgId]);
      expect(() => statSync(path.join(dataDir, 'switchyard.sqlite'))).to.throw();
    } finally {
      proc.child.kill('SIGTERM');
    }
    expect(await proc.exited).to.equal(0);
  });

  it('refuses to start when REDIS_URL names a Redis that does not answer', async () => {
    const port = await freePort();
    const dead = await freePort();
    const proc = start(dataDir, port, {
      DATABASE_URL: `${TEST_PG_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`,
      REDIS_URL: `redis://127.0.0.1:${dead}`,
    });
    expect(await proc.exited).to.equal(1);
    expect(proc.output()).to.match(/failed to start: .*ECONNREFUSED/);
  });
});
