/**
 * Rolling restarts (README "Running in production"): two service processes on one PostgreSQL
 * store and one Redis, both serving HTTP and executing runs, under sustained async and sync
 * trigger load. One of them is sent SIGTERM and started again, three times. A load generator
 * routes like a load balancer: to the processes whose /readyz answers 200.
 * - every trigger call answered 200 has its run COMPLETE, on its first attempt (no run waited for
 *   a lease to expire, none failed);
 * - no 5xx, and no failed connection for a request sent before the signal to its process (a
 *   request sent to the draining process after its listener closed may fail to connect: the
 *   generator sends it to the other process, as a load balancer would);
 * - every run not started at a signal starts within 1 s of it, on the other process;
 * - the signalled process exits 0.
 * The step is an `http` call to a loopback server that answers after 300 ms, so steps are in
 * flight at every signal without burning CPU.
 */
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { freePort } from '../../helpers/server.js';
import { createTestStore, isPgAvailable, type TestStore, dropRedisKeys } from '../../helpers/store.js';
import { startServer, waitReady, bootstrapToken, pgDatabaseUrl, slowCallTrigger } from '../../helpers/process.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Node {
  name: string;
  base: string;
  port: number;
  child?: ChildProcess;
  exited?: Promise<number | null>;
  /** As the load generator sees it (/readyz polled every 25 ms). */
  ready: boolean;
  /** [signal, ready again] per restart: requests sent to it inside may fail to connect. */
  down: Array<[number, number]>;
}

interface Sent {
  node: string;
  at: number;
  sync: boolean;
  status?: number;
  runId?: string;
  body?: any;
  error?: string;
}

describe('process: rolling restarts under load (PostgreSQL + Redis)', function () {
  this.timeout(90_000);
  let store: TestStore | undefined;
  const prefix = `sy-roll-${process.pid}-${Date.now()}`;
  let slow: http.Server;
  const nodes: Node[] = [];

  before(async function () {
    if (!(await isPgAvailable())) this.skip();
    store = await createTestStore('pg');
    slow = http.createServer((req, res) => {
      setTimeout(() => res.end('ok'), 300);
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
  });

  after(async () => {
    for (const n of nodes) n.child?.kill('SIGKILL');
    slow?.close();
    await store?.close();
    await dropRedisKeys(REDIS_URL, prefix);
  });

  const launch = (n: Node) => {
    n.child = startServer(store!.dataDir, n.port, {
      DATABASE_URL: pgDatabaseUrl(store!),
      REDIS_URL,
      REDIS_PREFIX: prefix,
      RUN_CONCURRENCY: '16',
      // One organisation's load sized for one process's 16 slots: all of them are its own here
      // (by default a quarter is kept for other organisations, src/runs/README.md).
      RUN_ORG_CONCURRENCY: '16',
      SHUTDOWN_GRACE_MS: '10000',
      // Long: a run that had to wait for a lease to expire would not finish within this test.
      RUN_LEASE_MS: '60000',
      SYNC_WAIT_MS: '20000',
    });
    const child = n.child;
    n.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  };

  it('loses no run, fails no run and no accepted request, and hands unstarted runs over at once, across three restarts', async () => {
    for (const name of ['A', 'B']) {
      const port = await freePort();
      nodes.push({ name, port, base: `http://127.0.0.1:${port}`, ready: false, down: [] });
    }
    const [a, b] = nodes as [Node, Node];
    // A seeds the store first; B finds it seeded.
    launch(a);
    await waitReady(a.base);
    launch(b);
    await waitReady(b.base);
    const { token, b: boot } = await bootstrapToken(a.base, store!.dataDir);
    const trg = await slowCallTrigger(a.base, token, `http://127.0.0.1:${(slow.address() as AddressInfo).port}/`);
    const triggerPath = `/ext/triggers/${trg.triggerId}`;

    // The balancer's view: /readyz of each process every 25 ms.
    let loading = true;
    const poll = (async () => {
      while (loading) {
        await Promise.all(
          nodes.map(async (n) => {
            try {
              n.ready = (await fetch(`${n.base}/readyz`)).status === 200;
            } catch {
              n.ready = false;
            }
          }),
        );
        await sleep(25);
      }
    })();
    for (const n of nodes) n.ready = true;

    const sent: Sent[] = [];
    let turn = 0;
    const pick = async (): Promise<Node> => {
      for (;;) {
        const up = nodes.filter((n) => n.ready);
        if (up.length) return up[turn++ % up.length]!;
        await sleep(5);
      }
    };
    const inDown = (n: Node, at: number) => n.down.some(([from, to]) => at >= from && at <= (to || Infinity));
    const fire = async (sync: boolean): Promise<void> => {
      for (let tries = 0; tries < 5; tries++) {
        const n = await pick();
        const s: Sent = { node: n.name, at: Date.now(), sync };
        sent.push(s);
        try {
          const res = await fetch(`${n.base}${triggerPath}`, {
            method: 'POST',
            headers: {
              'x-api-key': boot.apiKey,
              'content-type': 'application/json',
              ...(sync ? { 'x-api-wait': 'true' } : {}),
            },
            body: JSON.stringify({ n: sent.length }),
          });
          s.status = res.status;
          s.runId = res.headers.get('x-pf-run-id') ?? undefined;
          const text = await res.text();
          s.body = text ? JSON.parse(text) : null;
          return;
        } catch (err) {
          s.error = String((err as Error & { cause?: Error }).cause ?? err);
          // Sent to a process that is going away: the balancer tries the other one.
          if (!inDown(n, s.at)) return;
        }
      }
    };
    // Two async callers (one call every 60 ms each) and three synchronous callers (one call at a time each).
    const callers = [
      ...[0, 1].map(async () => {
        while (loading) {
          await fire(false);
          await sleep(60);
        }
      }),
      ...[0, 1, 2].map(async () => {
        while (loading) await fire(true);
      }),
    ];

    const signals: Array<{ node: Node; at: number; code: number | null; exitMs: number }> = [];
    for (const n of [a, b, a]) {
      await sleep(400);
      const at = Date.now();
      n.down.push([at, 0]);
      n.child!.kill('SIGTERM');
      const code = await n.exited!;
      signals.push({ node: n, at, code, exitMs: Date.now() - at });
      launch(n);
      await waitReady(n.base);
      n.down[n.down.length - 1]![1] = Date.now();
    }
    await sleep(300);
    loading = false;
    await Promise.all(callers);
    await poll;

    expect(
      signals.map((s) => s.code),
      'exit codes after SIGTERM',
    ).to.deep.equal([0, 0, 0]);

    // No 5xx, and no failed request other than one sent to a process that was going away.
    const failed = sent.filter((s) => s.error !== undefined || s.status === undefined || s.status >= 300);
    const excused = failed.filter(
      (s) =>
        s.error !== undefined &&
        inDown(
          nodes.find((n) => n.name === s.node)!,
          s.at,
        ),
    );
    expect(
      failed.filter((s) => !excused.includes(s)),
      'requests that failed',
    ).to.deep.equal([]);
    const accepted = sent.filter((s) => s.status === 200);
    expect(accepted.length).to.be.greaterThan(30);
    // Synchronous answers carry the finished run, never the timeout body.
    for (const s of accepted.filter((x) => x.sync)) expect(s.body?.status, JSON.stringify(s.body)).to.equal('COMPLETE');

    // Every accepted run ends COMPLETE on its first attempt.
    const ids = accepted.map((s) => s.runId!);
    let rows: Array<{
      id: string;
      status: string;
      attempts: number;
      created_at: string;
      started_at: string | null;
      claimed_by: string;
    }> = [];
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      rows = await store!
        .db('runs')
        .whereIn('id', ids)
        .select('id', 'status', 'attempts', 'created_at', 'started_at', 'claimed_by');
      if (rows.length === ids.length && rows.every((r) => ['COMPLETE', 'FAILED', 'TIMEOUT'].includes(r.status))) break;
      await sleep(100);
    }
    expect(rows.length, 'accepted runs in the store').to.equal(ids.length);
    expect(
      rows.filter((r) => r.status !== 'COMPLETE' || r.attempts !== 1).map((r) => `${r.id} ${r.status} ${r.attempts}`),
      'runs not COMPLETE on their first attempt',
    ).to.deep.equal([]);

    // Runs not started at a signal start within 1 s of it (on the process that goes on).
    const t = (iso: string) => new Date(iso).getTime();
    for (const s of signals) {
      const waiting = rows.filter((r) => t(r.created_at) <= s.at && t(r.started_at!) > s.at);
      const late = waiting.filter((r) => t(r.started_at!) - s.at > 1000);
      expect(late.map((r) => `${r.id} started ${t(r.started_at!) - s.at} ms after the signal`)).to.deep.equal([]);
    }
    // One process alone has room for the whole load: no run waited more than 1 s for its start.
    const waits = rows.map((r) => t(r.started_at!) - t(r.created_at));
    expect(Math.max(...waits), 'longest wait of a run for its start (ms)').to.be.at.most(1000);
    // TEST_FIGURES=1 prints what this run measured.
    if (process.env.TEST_FIGURES)
      process.stdout.write(
        `      ${accepted.length} accepted (${accepted.filter((x) => x.sync).length} sync), ${excused.length} sent to a closing process and sent again; exits after ${signals.map((s) => s.exitMs).join(', ')} ms; longest start wait ${Math.max(...waits)} ms\n`,
      );
  });
});
