/**
 * `npm run worker` as a real process (README "Scaling out"): an HTTP server that only accepts
 * triggers (RUN_CONCURRENCY=0) and a separate worker process on the same sqlite DATA_DIR,
 * joined by Redis (bee-queue for the runs, pub/sub for run-finished signals).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { freePort, call } from '../../helpers/server.js';
import { openStore, type Knex } from '../../../src/storage/db.js';
import { bundled } from '../../helpers/process.js';
import { dropRedisKeys } from '../../helpers/store.js';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../..');
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const TERMINAL = ['COMPLETE', 'FAILED', 'TIMEOUT'];

interface Proc {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** `src/main.ts` or `src/worker.ts` as their test bundles (test/helpers/process.ts). */
function spawnEntry(entry: 'src/main.ts' | 'src/worker.ts', env: Record<string, string>): Proc {
  let out = '';
  const child = spawn(process.execPath, [bundled(entry === 'src/main.ts' ? 'main' : 'worker')], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

async function waitFor(
  what: string,
  proc: Proc,
  cond: () => Promise<boolean> | boolean,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null)
      throw new Error(`process exited early (${proc.child.exitCode}) while waiting for ${what}:\n${proc.output()}`);
    try {
      if (await cond()) return;
    } catch {
      // not there yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}:\n${proc.output()}`);
}

describe('process: npm run worker beside an HTTP server that only accepts triggers (sqlite + Redis)', function () {
  this.timeout(120_000);
  const prefix = `sy-test-worker-${process.pid}-${Date.now()}`;
  let dataDir: string;
  let server: Proc | undefined;
  let worker: Proc | undefined;
  let base: string;
  let b: {
    apiKey: string;
    clientId: string;
    clientSecret: string;
    orgId: string;
    demo: { automationId: string; apiTriggerId: string };
  };
  let db: Knex | undefined;
  let earlyRun = '';

  before(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-worker-'));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    server = spawnEntry('src/main.ts', {
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      PUBLIC_URL: base,
      REDIS_URL,
      REDIS_PREFIX: prefix,
      RUN_CONCURRENCY: '0',
      SYNC_WAIT_MS: '30000',
    });
    await waitFor('the server to be ready', server, async () => (await fetch(`${base}/readyz`)).status === 200);
    await waitFor('bootstrap.json', server, () => server!.output().includes('Switchyard is ready'));
    b = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8'));
    db = openStore({ dataDir });
  });

  after(async () => {
    server?.child.kill('SIGKILL');
    worker?.child.kill('SIGKILL');
    await db?.destroy();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    await dropRedisKeys(REDIS_URL, prefix);
  });

  // A short lease, so a killed worker's run is recovered within seconds.
  const workerEnv = () => ({
    DATA_DIR: dataDir,
    REDIS_URL,
    REDIS_PREFIX: prefix,
    RUN_CONCURRENCY: '2',
    RUN_LEASE_MS: '1000',
  });
  const trigger = (headers: Record<string, string> = {}, body: unknown = { name: 'Worker' }) =>
    call(base, 'POST', `/ext/triggers/${b.demo.apiTriggerId}`, {
      headers: { 'x-api-key': b.apiKey, ...headers },
      body,
    });
  const status = (runId: string) =>
    call(base, 'GET', `/ext/webhook/${b.apiKey}/runs/${b.demo.automationId}/${runId}/status`);
  const claimedBy = async (runId: string) =>
    ((await db!('runs').where({ id: runId }).first('claimed_by')) as { claimed_by: string | null }).claimed_by;

  it('the server alone accepts a trigger call but runs nothing (RUN_CONCURRENCY=0)', async () => {
    const res = await trigger();
    expect(res.status, res.text).to.equal(200);
    const runId = res.headers.get('x-pf-run-id')!;
    expect(runId).to.match(/^run_/);
    await new Promise((r) => setTimeout(r, 1000));
    const s = await status(runId);
    expect(s.status).to.equal(200);
    expect(s.body.status).to.equal('PENDING');
    earlyRun = runId;
  });

  it('the worker process picks up the run queued before it started', async () => {
    worker = spawnEntry('src/worker.ts', workerEnv());
    await waitFor('the worker to start', worker, () => worker!.output().includes('switchyard worker started'));
    expect(earlyRun).to.match(/^run_/);
    await waitFor('the early run to finish', worker, async () =>
      TERMINAL.includes((await status(earlyRun)).body.status),
    );
    expect((await status(earlyRun)).body.status).to.equal('COMPLETE');
    expect(await claimedBy(earlyRun)).to.contain(`:${worker.child.pid}:`);
  });

  it('a sync call (x-api-wait: true) on the demo trigger completes through the worker process', async () => {
    const started = Date.now();
    const res = await trigger({ 'x-api-wait': 'true' }, { name: 'Sync' });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.status, res.text).to.equal('COMPLETE');
    const runId = res.headers.get('x-pf-run-id')!;
    expect(res.body.id).to.equal(runId);
    expect(res.headers.get('x-pf-automation-id')).to.equal(b.demo.automationId);
    expect(res.body.results.map((r: { stepIndex: number }) => r.stepIndex)).to.deep.equal([0, 1]);
    expect(res.body.results[0].result.result).to.equal('Hello, Sync!');
    expect(res.body.designatedOutput.fileName).to.equal('report.md');
    // Woken by the Redis signal, not by the sync timeout.
    expect(Date.now() - started).to.be.lessThan(10_000);
    expect(await claimedBy(runId), 'executed by the worker process').to.contain(`:${worker!.child.pid}:`);
  });

  it('an async call completes through the worker process (polled on the status endpoint)', async () => {
    const res = await trigger({}, { name: 'Async' });
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.equal(null);
    const runId = res.headers.get('x-pf-run-id')!;
    await waitFor(
      'the async run to finish',
      worker!,
      async () => TERMINAL.includes((await status(runId)).body.status),
      20_000,
    );
    const s = await status(runId);
    expect(s.body.status).to.equal('COMPLETE');
    expect(s.body.stepStatus).to.deep.equal({ 0: 'COMPLETE', 1: 'COMPLETE' });
    expect(await claimedBy(runId)).to.contain(`:${worker!.child.pid}:`);
  });

  it('a run whose worker was killed (-9) mid-run is re-run by a restarted worker (lease recovery + stalled job)', async () => {
    const token = (
      await call(base, 'POST', '/oauth/token', {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        raw: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: b.clientId,
          client_secret: b.clientSecret,
          scope: `org:${b.orgId}`,
        }).toString(),
      })
    ).body.access_token as string;
    const wf = await call(base, 'POST', '/v1/workflows', {
      token,
      body: {
        name: 'Slow',
        steps: [
          {
            type: 'code',
            name: 'Nap',
            code: 'const end = Date.now() + 1500; while (Date.now() < end) { /* busy: the sandbox has no timers */ } return "slept";',
          },
        ],
      },
    });
    expect(wf.status, wf.text).to.equal(201);
    const trg = await call(base, 'POST', '/v1/triggers', {
      token,
      body: { automationId: wf.body.automationId, kind: 'api' },
    });
    expect(trg.status, trg.text).to.equal(201);
    const res = await call(base, 'POST', `/ext/triggers/${trg.body.triggerId}`, {
      headers: { 'x-api-key': b.apiKey },
      body: {},
    });
    expect(res.status, res.text).to.equal(200);
    const runId = res.headers.get('x-pf-run-id')!;
    const runStatus = async () =>
      (await call(base, 'GET', `/ext/webhook/${b.apiKey}/runs/${wf.body.automationId}/${runId}/status`)).body
        .status as string;

    await waitFor('the slow run to start', worker!, async () => (await runStatus()) === 'RUNNING', 20_000);
    const lostPid = worker!.child.pid;
    worker!.child.kill('SIGKILL');
    await worker!.exited;
    worker = spawnEntry('src/worker.ts', workerEnv());
    await waitFor('the restarted worker to start', worker, () =>
      worker!.output().includes('switchyard worker started'),
    );
    await waitFor(
      'the lost run to finish on the new worker',
      worker,
      async () => TERMINAL.includes(await runStatus()),
      45_000,
    );
    expect(await runStatus()).to.equal('COMPLETE');
    const row = (await db!('runs').where({ id: runId }).first('claimed_by', 'attempts')) as {
      claimed_by: string;
      attempts: number;
    };
    expect(row.claimed_by).to.contain(`:${worker.child.pid}:`).and.not.contain(`:${lostPid}:`);
    expect(Number(row.attempts), 'the lost attempt and the re-run').to.equal(2);
  });

  it('after SIGTERM both processes exit 0', async () => {
    worker!.child.kill('SIGTERM');
    server!.child.kill('SIGTERM');
    const [w, s] = await Promise.all([worker!.exited, server!.exited]);
    expect({ worker: w, server: s }, `${worker!.output()}\n${server!.output()}`).to.deep.equal({
      worker: 0,
      server: 0,
    });
  });
});

describe('process: npm run worker refuses a bad configuration', function () {
  this.timeout(60_000);
  let dataDir: string;
  before(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-worker-cfg-'));
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('without REDIS_URL exits with code 2 and a message naming REDIS_URL', async () => {
    const proc = spawnEntry('src/worker.ts', { DATA_DIR: dataDir, REDIS_URL: '' });
    expect(await proc.exited).to.equal(2);
    expect(proc.output()).to.contain('configuration error').and.to.contain('REDIS_URL');
  });

  it('with RUN_CONCURRENCY=0 exits with code 2 and says why', async () => {
    const proc = spawnEntry('src/worker.ts', { DATA_DIR: dataDir, REDIS_URL, RUN_CONCURRENCY: '0' });
    expect(await proc.exited).to.equal(2);
    expect(proc.output()).to.contain('RUN_CONCURRENCY must be at least 1');
  });
});
