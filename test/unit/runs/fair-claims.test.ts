/**
 * Run slots shared fairly across organisations (src/runs/README.md "Sharing the run slots"), on
 * sqlite and PostgreSQL: the claim statement takes the oldest PENDING runs of the organisations
 * under their cap, at most the slots each has left; run workers (in-process queue, and the Redis
 * queue with bee-queue) never execute more of one organisation's runs at once than
 * RUN_ORG_CONCURRENCY, do not leave another organisation's runs behind a backlog, lose no run
 * and execute none twice; a synchronous call's adoption respects the cap; recovery still re-runs
 * a run whose worker was lost; a Redis worker that stops hands the runs it deferred to another.
 * The slow steps are `http` steps to a server on loopback that counts the requests of each
 * organisation in flight: exactly the runs executing at once.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Knex } from 'knex';
import { loadConfig } from '../../../src/config/index.js';
import { SandboxPool } from '../../../src/engine/index.js';
import { probeIsolation } from '../../../src/containment/index.js';
import { InProcessRunQueue, RedisRunQueue, type RunQueue } from '../../../src/runs/run-queue.js';
import { openBlobStore } from '../../../src/kernel/blobs.js';
import { createOrganization } from '../../../src/auth/index.js';
import { insertRuns, runRows } from '../../../src/runs/runs.js';
import { claimRunsFairly } from '../../../src/runs/fair-claims.js';
import { createSignals } from '../../../src/runs/signals.js';
import { RunWorkers } from '../../../src/runs/worker.js';
import { createTestStore, dropRedisKeys, storeKinds, type TestStore } from '../../helpers/store.js';
import { addWorkflow, silent } from './write-path-helpers.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const kinds = await storeKinds();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A loopback server whose `/<tag>?ms=N` answers after N ms; the most requests of each tag in flight at once. */
async function slowServer() {
  const inFlight = new Map<string, number>();
  const most = new Map<string, number>();
  let total = 0;
  let mostTotal = 0;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    const tag = url.pathname.slice(1);
    const n = (inFlight.get(tag) ?? 0) + 1;
    inFlight.set(tag, n);
    most.set(tag, Math.max(most.get(tag) ?? 0, n));
    total += 1;
    mostTotal = Math.max(mostTotal, total);
    setTimeout(
      () => {
        inFlight.set(tag, inFlight.get(tag)! - 1);
        total -= 1;
        res.setHeader('content-type', 'application/json');
        res.end('{"ok":true}');
      },
      Number(url.searchParams.get('ms') ?? 0),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    step: (tag: string, ms: number) => ({
      type: 'http',
      name: 'Wait',
      request: { method: 'GET', url: `${base}/${tag}?ms=${ms}` },
    }),
    most: (tag: string) => most.get(tag) ?? 0,
    mostTotal: () => mostTotal,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}

interface Workers {
  workers: RunWorkers;
  queue: RunQueue;
  close(): Promise<void>;
}

/** Run workers of one process on `store` with the given queue, started. */
async function startWorkers(
  store: TestStore,
  opts: { queue: 'in-process' | 'redis'; prefix?: string; env: Record<string, string> },
): Promise<Workers> {
  const config = loadConfig({
    DATA_DIR: store.dataDir,
    SEED_DEMO: 'false',
    CODE_ISOLATION: process.env.CODE_ISOLATION ?? 'auto',
    ...opts.env,
  });
  const queue: RunQueue =
    opts.queue === 'redis'
      ? new RedisRunQueue(REDIS_URL, { isWorker: true, prefix: opts.prefix, stallIntervalMs: 1000 })
      : new InProcessRunQueue(60_000);
  const signals = await createSignals(undefined, silent, 'test');
  const blobs = openBlobStore(config);
  const sandbox = new SandboxPool({
    isolation: await probeIsolation({ mode: config.codeIsolation }),
    size: 1,
    log: silent,
  });
  const workers = new RunWorkers({ db: store.db, config, log: silent, queue, sandbox, blobs, signals });
  await workers.start();
  return {
    workers,
    queue,
    async close() {
      await workers.close();
      await sandbox.close();
      await signals.close();
    },
  };
}

/** Inserts PENDING runs (as trigger calls do), created `at` + i ms, and returns their ids. */
async function addRuns(db: Knex, o: { orgId: string; automationId: string; n: number; at: number }): Promise<string[]> {
  const rows = Array.from({ length: o.n }, (_, i) =>
    runRows(
      {
        orgId: o.orgId,
        automationId: o.automationId,
        automationVersion: 1,
        triggerId: null,
        inputs: {},
        startedBy: 'test',
        timeoutMs: 60_000,
      },
      undefined,
      new Date(o.at + i).toISOString(),
    ),
  );
  await insertRuns(db, rows);
  return rows.map((r) => r.run.id as string);
}

interface Row {
  id: string;
  org_id: string;
  status: string;
  attempts: number;
  started_at: string | null;
  finished_at: string | null;
}

async function untilDone(db: Knex, ids: string[], timeoutMs: number): Promise<Row[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = (await db('runs').whereIn('id', ids)) as Row[];
    if (rows.length === ids.length && rows.every((r) => ['COMPLETE', 'FAILED', 'TIMEOUT'].includes(r.status)))
      return ids.map((id) => rows.find((r) => r.id === id)!);
    if (Date.now() > deadline) throw new Error(`runs not done: ${rows.map((r) => r.status).join(', ')}`);
    await sleep(25);
  }
}

for (const kind of kinds) {
  describe(`fair run claims (${kind})`, function () {
    this.timeout(60_000);
    let store: TestStore;
    let orgs: string[];
    let automationId: string;

    beforeEach(async () => {
      store = await createTestStore(kind);
      orgs = [];
      for (const name of ['A', 'B', 'C']) orgs.push((await createOrganization(store.db, { name })).id);
      automationId = await addWorkflow(store.db, orgs[0]!, [{ type: 'code', name: 's', code: 'return 1;' }]);
    });
    afterEach(() => store.close());

    const claim = (limit: number, left: Record<string, number>, cap = 2) =>
      claimRunsFairly(store.db, { workerId: 'w', leaseMs: 30_000, cap, left }, limit);

    it('takes the oldest runs across organisations, at most the slots each has left, the rest in later claims', async () => {
      const [a, b, c] = orgs as [string, string, string];
      const t = Date.parse('2030-01-01T00:00:00.000Z');
      const ra = await addRuns(store.db, { orgId: a, automationId, n: 5, at: t });
      const rb = await addRuns(store.db, { orgId: b, automationId, n: 3, at: t + 100 });
      const rc = await addRuns(store.db, { orgId: c, automationId, n: 1, at: t + 200 });
      // A's backlog is older than every other run: still only its 2 slots, then B's and C's oldest.
      const first = await claim(5, {});
      expect(first.map((r) => r.id)).to.deep.equal([ra[0], ra[1], rb[0], rb[1], rc[0]]);
      expect(first.every((r) => r.status === 'RUNNING' && Number(r.attempts) === 1 && r.claimed_by === 'w')).to.equal(
        true,
      );
      // Organisations at their cap are left out; B has one slot left.
      expect(await claim(5, { [a]: 0, [b]: 1, [c]: 0 })).to.have.length(1);
      expect((await claim(5, { [a]: 0, [b]: 0, [c]: 0 })).map((r) => r.id)).to.deep.equal([]);
      // A slot of A frees: its oldest PENDING run next, one only.
      expect((await claim(5, { [a]: 1, [b]: 0, [c]: 0 })).map((r) => r.id)).to.deep.equal([ra[2]]);
      // Without a binding cap, the oldest first whatever the organisation.
      const rest = await claim(5, {}, 10);
      expect(rest.map((r) => r.id)).to.deep.equal([ra[3], ra[4]]);
      const states = (await store.db('runs').select('status')) as { status: string }[];
      expect(states.filter((s) => s.status === 'PENDING')).to.have.length(0);
    });

    it('claims each run once when claims race (two workers)', async () => {
      const [a, b] = orgs as [string, string];
      const t = Date.parse('2030-01-01T00:00:00.000Z');
      const ids = [
        ...(await addRuns(store.db, { orgId: a, automationId, n: 20, at: t })),
        ...(await addRuns(store.db, { orgId: b, automationId, n: 20, at: t + 10 })),
      ];
      const got: string[] = [];
      const worker = async (name: string) => {
        for (;;) {
          const runs = await claimRunsFairly(store.db, { workerId: name, leaseMs: 30_000, cap: 3, left: {} }, 4);
          if (!runs.length) return;
          got.push(...runs.map((r) => r.id));
          await store
            .db('runs')
            .whereIn(
              'id',
              runs.map((r) => r.id),
            )
            .update({ status: 'COMPLETE' });
        }
      };
      await Promise.all([worker('w1'), worker('w2')]);
      expect([...got].sort()).to.deep.equal([...ids].sort());
    });

    for (const queue of ['in-process', 'redis'] as const) {
      describe(`run workers, ${queue} queue`, () => {
        const prefix = `sy-fair-${process.pid}-${Date.now()}`;
        let slow: Awaited<ReturnType<typeof slowServer>>;
        const started: Workers[] = [];
        const start = async (env: Record<string, string>) => {
          const w = await startWorkers(store, { queue, prefix, env });
          started.push(w);
          return w;
        };
        beforeEach(async () => (slow = await slowServer()));
        afterEach(async () => {
          for (const w of started.splice(0)) await w.close();
          await slow.close();
          if (queue === 'redis') await dropRedisKeys(REDIS_URL, prefix);
        });

        it("executes at most RUN_ORG_CONCURRENCY of an organisation's runs at once; another's runs are not left behind its backlog; each run once", async () => {
          const [a, b] = orgs as [string, string];
          const slowWf = await addWorkflow(store.db, a, [slow.step('A', 300)]);
          const quickWf = await addWorkflow(store.db, b, [slow.step('B', 0)]);
          const w = await start({ RUN_CONCURRENCY: '4', RUN_ORG_CONCURRENCY: '2' });
          const now = Date.now();
          const aIds = await addRuns(store.db, { orgId: a, automationId: slowWf, n: 8, at: now });
          const bIds = await addRuns(store.db, { orgId: b, automationId: quickWf, n: 3, at: now + 50 });
          await w.queue.enqueue([...aIds, ...bIds]);
          const aRuns = await untilDone(store.db, aIds, 20_000);
          const bRuns = await untilDone(store.db, bIds, 20_000);
          for (const r of [...aRuns, ...bRuns]) expect(r, r.id).to.include({ status: 'COMPLETE' });
          expect([...aRuns, ...bRuns].map((r) => Number(r.attempts))).to.deep.equal([...aIds, ...bIds].map(() => 1));
          expect(slow.most('A'), "A's steps at once").to.equal(2);
          expect(slow.mostTotal(), 'steps at once').to.be.at.most(4);
          // B's runs, queued behind all of A's, started before A's fifth did (A's backlog runs two by two).
          const aFifth = aRuns.map((r) => r.started_at!).sort()[4]!;
          for (const r of bRuns)
            expect(r.started_at! < aFifth, `B's run started ${r.started_at}, A's fifth ${aFifth}`).to.equal(true);
        });

        it('recovery re-runs a run whose worker was lost, under the cap', async () => {
          const [a] = orgs as [string];
          const wf = await addWorkflow(store.db, a, [slow.step('A', 50)]);
          const [lost, other] = await addRuns(store.db, { orgId: a, automationId: wf, n: 2, at: Date.now() });
          await store
            .db('runs')
            .where({ id: lost })
            .update({
              status: 'RUNNING',
              claimed_by: 'gone',
              attempts: 1,
              started_at: new Date().toISOString(),
              lease_until: new Date(Date.now() - 1000).toISOString(),
            });
          const w = await start({ RUN_CONCURRENCY: '2', RUN_ORG_CONCURRENCY: '1', RUN_LEASE_MS: '600' });
          await w.queue.enqueue([other!]);
          const [l, o] = await untilDone(store.db, [lost!, other!], 20_000);
          expect(l).to.include({ status: 'COMPLETE' });
          expect(Number(l!.attempts)).to.equal(2);
          expect(o).to.include({ status: 'COMPLETE' });
          expect(Number(o!.attempts)).to.equal(1);
          expect(slow.most('A')).to.equal(1);
        });

        if (queue === 'in-process') {
          it("a synchronous call's adoption respects the cap: an organisation at it is queued, another adopts", async () => {
            const [a, b] = orgs as [string, string];
            const w = await start({ RUN_CONCURRENCY: '3', RUN_ORG_CONCURRENCY: '1' });
            let first: ReturnType<RunWorkers['adopt']>;
            const deadline = Date.now() + 5000;
            while (!(first = w.workers.adopt(a))) {
              if (Date.now() > deadline) throw new Error('no consumer asleep');
              await sleep(10);
            }
            expect(w.workers.adopt(a), 'A is at its cap').to.equal(undefined);
            const other = w.workers.adopt(b);
            expect(other, 'B adopts').to.not.equal(undefined);
            first!.cancel();
            other!.cancel();
            const again = w.workers.adopt(a);
            expect(again, "A's slot is free again").to.not.equal(undefined);
            again!.cancel();
          });
        } else {
          it('a worker that stops hands the runs it deferred to another process; none is lost or run twice', async () => {
            const [a] = orgs as [string];
            const wf = await addWorkflow(store.db, a, [slow.step('A', 400)]);
            const first = await start({ RUN_CONCURRENCY: '3', RUN_ORG_CONCURRENCY: '1' });
            const ids = await addRuns(store.db, { orgId: a, automationId: wf, n: 5, at: Date.now() });
            await first.queue.enqueue(ids);
            // One runs, the others are deferred (their jobs done): none waits in Redis any more.
            const deadline = Date.now() + 5000;
            while (slow.most('A') < 1) {
              if (Date.now() > deadline) throw new Error('no run started');
              await sleep(10);
            }
            await sleep(300);
            const second = await start({ RUN_CONCURRENCY: '3', RUN_ORG_CONCURRENCY: '1' });
            await first.close();
            started.splice(started.indexOf(first), 1);
            const runs = await untilDone(store.db, ids, 20_000);
            expect(runs.map((r) => r.status)).to.deep.equal(ids.map(() => 'COMPLETE'));
            expect(runs.map((r) => Number(r.attempts))).to.deep.equal(ids.map(() => 1));
            const by = (await store.db('runs').whereIn('id', ids).select('claimed_by')) as { claimed_by: string }[];
            expect(
              new Set(by.map((r) => r.claimed_by)).has(second.workers.workerId),
              'the second worker ran some',
            ).to.equal(true);
          });
        }
      });
    }
  });
}
