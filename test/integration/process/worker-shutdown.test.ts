/**
 * Graceful shutdown of `npm run worker` (README "Running in production") on PostgreSQL + Redis:
 * an HTTP process that only accepts triggers (RUN_CONCURRENCY=0) and worker processes.
 * - SIGTERM: the worker finishes the runs it executes, takes none after the signal, and exits 0;
 *   the other worker executes the rest, each run on its first attempt.
 * - A grace shorter than a step: the worker exits 1 when it runs out, its runs left RUNNING for
 *   recovery as after a crash. A second SIGTERM ends it at once (exit 1).
 * The step is an `http` call to a loopback server that answers after 600 ms.
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
const STEP_MS = 600;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Row {
  id: string;
  status: string;
  attempts: number;
  started_at: string;
  claimed_by: string;
}

describe('process: npm run worker shuts down gracefully (PostgreSQL + Redis)', function () {
  this.timeout(60_000);
  const prefix = `sy-wdown-${process.pid}-${Date.now()}`;
  let store: TestStore | undefined;
  let server: ChildProcess | undefined;
  const workers: WorkerProcess[] = [];
  let slow: http.Server;
  let inFlight = 0;
  let base: string;
  let trigger: () => Promise<string>;

  const env = (more: Record<string, string>) => ({
    DATABASE_URL: pgDatabaseUrl(store!),
    REDIS_URL,
    REDIS_PREFIX: prefix,
    ...more,
  });
  const worker = async (graceMs: number) => {
    const w = startWorker(
      store!.dataDir,
      env({ RUN_CONCURRENCY: '2', RUN_LEASE_MS: '1000', SHUTDOWN_GRACE_MS: String(graceMs) }),
    );
    workers.push(w);
    await w.started;
    return w;
  };
  const rows = async (ids: string[]) =>
    (await store!
      .db('runs')
      .whereIn('id', ids)
      .select('id', 'status', 'attempts', 'started_at', 'claimed_by')) as Row[];
  const until = async (what: string, cond: () => Promise<boolean> | boolean, timeoutMs = 15_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await cond())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await sleep(25);
    }
  };
  const byPid = (pid: number | undefined) => (r: Row) => r.claimed_by.split(':')[1] === String(pid);

  before(async function () {
    if (!(await isPgAvailable())) this.skip();
    store = await createTestStore('pg');
    slow = http.createServer((_req, res) => {
      inFlight++;
      setTimeout(() => {
        inFlight--;
        res.end('ok');
      }, STEP_MS);
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    server = startServer(store.dataDir, port, env({ RUN_CONCURRENCY: '0' }));
    await waitReady(base);
    const { token, b } = await bootstrapToken(base, store.dataDir);
    const trg = await slowCallTrigger(base, token, `http://127.0.0.1:${(slow.address() as AddressInfo).port}/`);
    trigger = async () => {
      const res = await call(base, 'POST', `/ext/triggers/${trg.triggerId}`, {
        headers: { 'x-api-key': b.apiKey },
        body: {},
      });
      expect(res.status, res.text).to.equal(200);
      return res.headers.get('x-pf-run-id')!;
    };
  });

  after(async () => {
    server?.kill('SIGKILL');
    for (const w of workers) w.child.kill('SIGKILL');
    slow?.close();
    await store?.close();
    await dropRedisKeys(REDIS_URL, prefix);
  });

  it('SIGTERM: the worker finishes its runs, takes no other, exits 0; the other worker executes the rest', async () => {
    const [w1, w2] = [await worker(5000), await worker(5000)];
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await trigger());
    await until('both workers to execute two runs each', () => inFlight === 4);
    const signalled = Date.now();
    w1.child.kill('SIGTERM');
    expect(await w1.exited).to.equal(0);
    expect(Date.now() - signalled).to.be.below(STEP_MS + 1500);
    await until('every run to complete', async () => (await rows(ids)).every((r) => r.status === 'COMPLETE'));
    const done = await rows(ids);
    expect(done.map((r) => r.attempts)).to.deep.equal(ids.map(() => 1));
    const ofW1 = done.filter(byPid(w1.child.pid));
    expect(ofW1, 'runs the signalled worker executed').to.have.length(2);
    for (const r of ofW1) expect(new Date(r.started_at).getTime()).to.be.below(signalled);
    expect(done.filter(byPid(w2.child.pid))).to.have.length(4);
  });

  it('a grace shorter than a step ends the worker when it runs out, a second SIGTERM at once (exit 1 both), their runs left as after a crash', async () => {
    const [short, twice] = await Promise.all([worker(200), worker(5000)]);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await trigger());
    await until('six runs in flight', () => inFlight === 6);
    const held = await rows(ids);
    const ofShort = held.filter(byPid(short.child.pid)).map((r) => r.id);
    const ofTwice = held.filter(byPid(twice.child.pid)).map((r) => r.id);
    expect([ofShort.length, ofTwice.length]).to.deep.equal([2, 2]);
    const signalled = Date.now();
    short.child.kill('SIGTERM');
    twice.child.kill('SIGTERM');
    await sleep(100);
    twice.child.kill('SIGTERM');
    expect(await twice.exited).to.equal(1);
    expect(Date.now() - signalled, 'exit after the second signal').to.be.below(500);
    expect(await short.exited).to.equal(1);
    expect(Date.now() - signalled, 'exit when the grace ran out').to.be.within(150, STEP_MS);
    // Recovered once their leases expire and bee-queue's stalled-job check (5 s) puts their jobs
    // back: process/worker.test.ts covers that path after kill -9.
    expect((await rows([...ofShort, ...ofTwice])).map((r) => r.status)).to.deep.equal(
      [...ofShort, ...ofTwice].map(() => 'RUNNING'),
    );
  });
});
