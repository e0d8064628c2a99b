/**
 * Graceful shutdown of one service process on sqlite (README "Running in production"), four
 * starts of one DATA_DIR, each test going on from the state the one before left:
 * - SIGTERM while a step is in flight: /readyz answers 503 `draining` at once, /healthz 200,
 *   requests are still served (with `Connection: close`), a run accepted then is not executed
 *   here (a synchronous caller of one gets the timeout answer once the runs here are done), the
 *   step finishes and its synchronous caller gets the result, the process exits 0;
 * - the next start executes the run accepted while draining; a second SIGTERM ends the process
 *   at once (exit 1) with its run still RUNNING;
 * - the next start recovers that run once its lease expires; SHUTDOWN_GRACE_MS shorter than a
 *   step ends the process when the grace runs out (exit 1);
 * - the next start recovers that run too.
 * The step is an `http` call to a loopback server that answers after 0.9 s.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { freePort, call } from '../../helpers/server.js';
import { openStore, type Knex } from '../../../src/storage/db.js';
import { startServer, waitReady, bootstrapToken, slowCallTrigger } from '../../helpers/process.js';

const STEP_MS = 900;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('process: graceful shutdown (sqlite)', function () {
  this.timeout(60_000);
  let dataDir: string;
  let db: Knex;
  let base: string;
  let port: number;
  let child: ChildProcess | undefined;
  let exited: Promise<number | null>;
  let slow: http.Server;
  /** Step calls the slow server has received. */
  let stepCalls = 0;
  let apiKey: string;
  let triggerId: string;

  before(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-shutdown-'));
    slow = http.createServer((_req, res) => {
      stepCalls++;
      setTimeout(() => res.end('slept'), STEP_MS);
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    port = await freePort();
    base = `http://127.0.0.1:${port}`;
  });

  after(async () => {
    child?.kill('SIGKILL');
    slow?.close();
    await db?.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const start = async (env: Record<string, string>) => {
    const c = startServer(dataDir, port, { RUN_CONCURRENCY: '1', RUN_LEASE_MS: '1000', ...env });
    child = c;
    exited = new Promise((resolve) => c.once('exit', (code) => resolve(code)));
    await waitReady(base);
  };
  const trigger = (wait: boolean) =>
    call(base, 'POST', `/ext/triggers/${triggerId}`, {
      headers: { 'x-api-key': apiKey, ...(wait ? { 'x-api-wait': 'true' } : {}) },
      body: {},
    });
  const run = async (id: string) =>
    (await db('runs').where({ id }).first('status', 'attempts')) as { status: string; attempts: number };
  const until = async (what: string, cond: () => Promise<boolean>, timeoutMs = 10_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await cond())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await sleep(25);
    }
  };
  /** A step call arrives at the slow server (the step is in flight). */
  const stepStarted = (before: number) => until('the step to start', async () => stepCalls > before);
  /** GET over a keep-alive connection; the answer's Connection header with it. */
  const getKeepAlive = (agent: http.Agent, p: string) =>
    new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
      http
        .get(`${base}${p}`, { agent }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection }));
        })
        .on('error', reject);
    });

  let drainedRun = '';
  let drainedSync = '';
  let stuckRun = '';

  it('SIGTERM: /readyz 503 at once, requests still served with Connection: close, the step in flight finishes for its sync caller, no new run is taken, exit 0', async () => {
    await start({ SHUTDOWN_GRACE_MS: '8000' });
    db = openStore({ dataDir });
    const { token, b } = await bootstrapToken(base, dataDir);
    apiKey = b.apiKey;
    const trg = await slowCallTrigger(base, token, `http://127.0.0.1:${(slow.address() as AddressInfo).port}/`);
    triggerId = trg.triggerId;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect(await getKeepAlive(agent, '/healthz')).to.deep.equal({ status: 200, connection: 'keep-alive' });
      const before = stepCalls;
      const sync = trigger(true);
      await stepStarted(before);
      const signalled = Date.now();
      child!.kill('SIGTERM');
      await until('/readyz to answer 503', async () => (await fetch(`${base}/readyz`)).status === 503, 1000);
      const ready = await call(base, 'GET', '/readyz');
      expect(ready.body).to.deep.include({ status: 'not_ready', draining: true });
      expect(ready.body.checks).to.deep.equal({ store: 'ok', blobs: 'ok', isolation: 'ok' });
      // Liveness stays 200; the idle keep-alive connection is served once more, then told to close.
      expect(await getKeepAlive(agent, '/healthz')).to.deep.equal({ status: 200, connection: 'close' });
      // Accepted while draining, but not executed here; a synchronous caller gets the timeout
      // answer once the step in flight is done (no Redis: no other process can finish its run).
      const late = await trigger(false);
      expect(late.status, late.text).to.equal(200);
      drainedRun = late.headers.get('x-pf-run-id')!;
      const lateSync = trigger(true);
      const answered = await sync;
      expect(answered.status, answered.text).to.equal(200);
      expect(answered.body.status).to.equal('COMPLETE');
      expect(answered.body.results[0].result.result).to.equal('slept');
      const timedOut = await lateSync;
      expect(timedOut.status, timedOut.text).to.equal(200);
      expect(timedOut.body.status).to.equal('timeout');
      drainedSync = timedOut.headers.get('x-pf-run-id')!;
      expect(await exited).to.equal(0);
      expect(Date.now() - signalled).to.be.below(STEP_MS + 2000);
      expect(await run(drainedRun)).to.deep.equal({ status: 'PENDING', attempts: 0 });
      expect(await run(drainedSync)).to.deep.equal({ status: 'PENDING', attempts: 0 });
      expect(stepCalls).to.equal(before + 1);
    } finally {
      agent.destroy();
    }
  });

  it('the next start executes the runs accepted while draining; a second SIGTERM ends the process at once (exit 1)', async () => {
    await start({ SHUTDOWN_GRACE_MS: '8000' });
    await until(
      'the runs accepted while draining to complete',
      async () => (await run(drainedRun)).status === 'COMPLETE' && (await run(drainedSync)).status === 'COMPLETE',
    );
    const before = stepCalls;
    const res = await trigger(false);
    stuckRun = res.headers.get('x-pf-run-id')!;
    await stepStarted(before);
    child!.kill('SIGTERM');
    await sleep(100);
    const second = Date.now();
    child!.kill('SIGTERM');
    expect(await exited).to.equal(1);
    expect(Date.now() - second).to.be.below(500);
    expect(await run(stuckRun)).to.deep.include({ status: 'RUNNING', attempts: 1 });
  });

  it('the next start recovers that run after its lease; a grace shorter than the step ends the process when it runs out (exit 1)', async () => {
    await start({ SHUTDOWN_GRACE_MS: '300' });
    await until('the run left RUNNING to be recovered', async () => (await run(stuckRun)).status === 'COMPLETE');
    expect((await run(stuckRun)).attempts).to.equal(2);
    const before = stepCalls;
    const res = await trigger(false);
    stuckRun = res.headers.get('x-pf-run-id')!;
    await stepStarted(before);
    const signalled = Date.now();
    child!.kill('SIGTERM');
    expect(await exited).to.equal(1);
    expect(Date.now() - signalled).to.be.within(250, STEP_MS);
    expect(await run(stuckRun)).to.deep.include({ status: 'RUNNING', attempts: 1 });
  });

  it('the next start recovers the run the grace cut short', async () => {
    await start({});
    await until('the run cut short to be recovered', async () => (await run(stuckRun)).status === 'COMPLETE');
    expect((await run(stuckRun)).attempts).to.equal(2);
    child!.kill('SIGTERM');
    expect(await exited).to.equal(0);
  });
});
