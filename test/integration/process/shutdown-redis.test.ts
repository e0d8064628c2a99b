/**
 * Graceful shutdown of the service on PostgreSQL + Redis with synchronous callers waiting
 * (src/runs/drain-waits.ts; README "Running in production"):
 * - one process, async load ahead of the synchronous calls: at SIGTERM it finishes the runs it
 *   executes; the synchronous callers whose runs nobody picked up get the timeout answer (200,
 *   the run headers to poll) and the process exits 0, well within its grace;
 * - an HTTP process that only accepts triggers beside a worker: at SIGTERM the caller whose run
 *   the worker executes, and the one whose run is queued behind it (the worker takes it next),
 *   keep waiting and get their results; the process exits 0.
 * The step is an `http` call to a loopback server that answers after 1.5 s.
 */
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { freePort, call } from '../../helpers/server.js';
import { createTestStore, isPgAvailable, type TestStore, dropRedisKeys } from '../../helpers/store.js';
import {
  startServer,
  startWorker,
  waitReady,
  bootstrapToken,
  pgDatabaseUrl,
  type WorkerProcess,
  slowCallTrigger,
} from '../../helpers/process.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const STEP_MS = 1_500;
const GRACE_MS = 10_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('process: SIGTERM with synchronous callers waiting (PostgreSQL + Redis)', function () {
  this.timeout(90_000);
  const prefixes: string[] = [];
  const stores: TestStore[] = [];
  /** Each test has a store and a Redis prefix of its own (no runs left by the one before). */
  let store: TestStore | undefined;
  let prefix = '';
  const fresh = async () => {
    store = await createTestStore('pg');
    stores.push(store);
    prefix = `sy-sdown-${process.pid}-${Date.now()}`;
    prefixes.push(prefix);
  };
  let slow: http.Server;
  let inFlight = 0;
  const children: ChildProcess[] = [];
  let worker: WorkerProcess | undefined;

  const env = (more: Record<string, string>) => ({
    DATABASE_URL: pgDatabaseUrl(store!),
    REDIS_URL,
    REDIS_PREFIX: prefix,
    SHUTDOWN_GRACE_MS: String(GRACE_MS),
    RUN_LEASE_MS: '2000',
    ...more,
  });
  const until = async (what: string, cond: () => boolean, timeoutMs = 15_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!cond()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await sleep(25);
    }
  };

  /** The service on a fresh port, its slow trigger, and a caller of it (sync when `wait`). */
  const service = async (more: Record<string, string>) => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const child = startServer(store!.dataDir, port, env(more));
    children.push(child);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await waitReady(base);
    const { token, b } = await bootstrapToken(base, store!.dataDir);
    const trg = await slowCallTrigger(base, token, `http://127.0.0.1:${(slow.address() as AddressInfo).port}/`);
    const trigger = (wait: boolean) =>
      call(base, 'POST', `/ext/triggers/${trg.triggerId}`, {
        headers: { 'x-api-key': b.apiKey, ...(wait ? { 'x-api-wait': 'true' } : {}) },
        body: {},
      });
    return { child, exited, trigger, automationId: trg.automationId };
  };
  const status = async (id: string) =>
    ((await store!.db('runs').where({ id }).first('status')) as { status: string }).status;

  before(async function () {
    if (!(await isPgAvailable())) this.skip();
    slow = http.createServer((_req, res) => {
      inFlight++;
      setTimeout(() => {
        inFlight--;
        res.end('slept');
      }, STEP_MS);
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
  });

  after(async () => {
    for (const c of children) c.kill('SIGKILL');
    worker?.child.kill('SIGKILL');
    slow?.close();
    for (const st of stores) await st.close();
    for (const p of prefixes) await dropRedisKeys(REDIS_URL, p);
  });

  it('one process under async load: the waiting synchronous callers get the timeout answer with the run headers; exit 0', async () => {
    await fresh();
    const s = await service({ RUN_CONCURRENCY: '2' });
    for (let i = 0; i < 4; i++) expect((await s.trigger(false)).status).to.equal(200);
    await until('two steps in flight', () => inFlight === 2);
    const waiting = Array.from({ length: 6 }, () => s.trigger(true));
    await sleep(300);
    const signalled = Date.now();
    s.child.kill('SIGTERM');
    const answers = await Promise.all(waiting);
    for (const a of answers) {
      expect(a.status, a.text).to.equal(200);
      expect(a.body.status, a.text).to.equal('timeout');
      expect(a.body.message).to.match(/poll its status with the X-Pf-Run-Id and X-Pf-Automation-Id headers/);
      expect(a.headers.get('x-pf-automation-id')).to.equal(s.automationId);
      expect(await status(a.headers.get('x-pf-run-id')!)).to.equal('PENDING');
    }
    expect(await s.exited).to.equal(0);
    expect(Date.now() - signalled, 'the runs in flight end, then the process').to.be.below(STEP_MS + 3_000);
  });

  it('beside a worker: the callers whose runs the worker executes or will take get their results; exit 0', async () => {
    await until('the steps of the test before to end', () => inFlight === 0);
    await fresh();
    const s = await service({ RUN_CONCURRENCY: '0' });
    worker = startWorker(store!.dataDir, env({ RUN_CONCURRENCY: '1' }));
    await worker.started;
    const running = s.trigger(true);
    await until('its step to be in flight', () => inFlight === 1);
    const queued = s.trigger(true);
    await sleep(300);
    s.child.kill('SIGTERM');
    for (const answer of [await running, await queued]) {
      expect(answer.status, answer.text).to.equal(200);
      expect(answer.body.status, answer.text).to.equal('COMPLETE');
      expect(answer.body.results[0].result.result).to.equal('slept');
    }
    expect(await s.exited).to.equal(0);
  });
});
