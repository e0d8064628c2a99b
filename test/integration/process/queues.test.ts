/**
 * Queue batches across crashes and processes (issue 11; openapi/queues.yaml):
 * - kill -9 while a batch loads: the next start takes the batch over when the dead loader's
 *   lease runs out and resumes after the last committed chunk, so every good row is an item
 *   exactly once and every bad row a row error exactly once;
 * - two processes on one store dispatch one queue: together they never run more than its
 *   concurrencyLimit (sqlite file; PostgreSQL + Redis when this machine has them).
 */
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { openStore, type Knex } from '../../../src/storage/db.js';
import { freePort, call } from '../../helpers/server.js';
import { isPgAvailable, TEST_PG_URL } from '../../helpers/store.js';
import { startServer as start, waitReady as ready, bootstrapToken as tokenFor } from '../../helpers/process.js';
import { uploadCsvTo } from '../../helpers/queues.js';

async function batchOf(base: string, token: string, queueId: string, batchId: string): Promise<any> {
  const res = await call(base, 'GET', `/api/queues/${queueId}/batches/${batchId}`, { token });
  expect(res.status, res.text).to.equal(200);
  return res.body;
}

async function until<T>(
  what: string,
  probe: () => Promise<T>,
  done: (v: T) => boolean,
  timeoutMs = 60_000,
  everyMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

describe('process: queue batches across kill -9 and processes', function () {
  this.timeout(180_000);
  let dataDir: string;
  let children: ChildProcess[] = [];
  beforeEach(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-queues-'));
  });
  afterEach(() => {
    for (const c of children) c.kill('SIGKILL');
    children = [];
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('kill -9 mid-ingest: the next start resumes after the last committed chunk, no row lost or doubled', async () => {
    // 300,000 rows, every 997th one with a column too many: loading takes seconds, the kill lands
    // after the first committed chunks (5,000 rows each) and well before the end.
    const rows = 300_000;
    const bad = new Set<number>();
    const lines = ['email,plan,seats'];
    for (let i = 1; i <= rows; i++) {
      if (i % 997 === 0) {
        bad.add(i + 1); // rowNumber: the header is row 1
        lines.push(`bad${i}@example.com,pro,3,extra`);
      } else {
        lines.push(`user${i}@example.com,pro,${i % 50}`);
      }
    }
    const data = Buffer.from(lines.join('\r\n') + '\r\n');
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = { RUN_LEASE_MS: '1000' };
    const first = start(dataDir, port, env);
    children.push(first);
    await ready(base);
    const { token, b } = await tokenFor(base, dataDir);
    // A paused queue: rows load, nothing is dispatched (the count checked is the load alone).
    const queue = await call(base, 'POST', '/v1/queues', {
      token,
      body: { name: 'crash', triggerId: b.demo.apiTriggerId, paused: true },
    });
    expect(queue.status, queue.text).to.equal(201);
    const queueId = queue.body.queueId as string;
    const csvKey = await uploadCsvTo(base, token, queueId, data);
    const created = await call(base, 'POST', `/api/queues/${queueId}/items/csv`, {
      token,
      body: { csvKey, triggerId: b.demo.apiTriggerId },
    });
    expect(created.status, created.text).to.equal(202);
    expect(created.body.totalRows).to.equal(rows);
    const batchId = created.body.batchId as string;
    const mid = await until(
      'first chunks',
      () => batchOf(base, token, queueId, batchId),
      (x) => x.readRows >= 10_000,
      60_000,
      5,
    );
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    expect(mid.readRows, 'the kill landed before the end of the load').to.be.lessThan(rows);

    const db: Knex = openStore({ dataDir });
    try {
      // What the dead process committed: whole chunks, its items and row errors matching its counters.
      const itemsAtKill = Number(
        ((await db('queue_items').where({ batch_id: batchId }).count({ n: '*' }).first()) as { n: number | string }).n,
      );
      const errorsAtKill = Number(
        (
          (await db('batch_row_errors').where({ batch_id: batchId }).count({ n: '*' }).first()) as {
            n: number | string;
          }
        ).n,
      );
      const counters = (await db('queue_batches').where({ id: batchId }).first('loaded_rows', 'skipped_rows')) as {
        loaded_rows: number | string;
        skipped_rows: number | string;
      };
      expect([itemsAtKill, errorsAtKill]).to.deep.equal([Number(counters.loaded_rows), Number(counters.skipped_rows)]);
      expect(itemsAtKill + errorsAtKill, 'rows committed when the process died').to.be.within(5_000, rows - 1);
      expect((itemsAtKill + errorsAtKill) % 5_000, 'whole chunks only').to.equal(0);

      const second = start(dataDir, port, env);
      children.push(second);
      await ready(base);
      const { token: token2 } = await tokenFor(base, dataDir);
      const done = await until(
        'resumed load',
        () => batchOf(base, token2, queueId, batchId),
        (x) => x.readRows === rows && x.loadedRows + x.skippedRows === rows,
        120_000,
        100,
      );
      expect(done).to.include({
        status: 'running',
        totalRows: rows,
        loadedRows: rows - bad.size,
        skippedRows: bad.size,
        runsPending: rows - bad.size,
      });

      const items = (await db('queue_items')
        .where({ batch_id: batchId })
        .select(
          db.raw('count(*) as n'),
          db.raw('count(distinct row_number) as d'),
          db.raw('sum(row_number) as s'),
          db.raw('min(row_number) as lo'),
          db.raw('max(row_number) as hi'),
        )
        .first()) as Record<string, number | string>;
      let expectedSum = 0;
      for (let r = 2; r <= rows + 1; r++) if (!bad.has(r)) expectedSum += r;
      expect([Number(items.n), Number(items.d), Number(items.s), Number(items.lo), Number(items.hi)]).to.deep.equal([
        rows - bad.size,
        rows - bad.size,
        expectedSum,
        2,
        rows + 1,
      ]);
      const errors = (await db('batch_row_errors')
        .where({ batch_id: batchId })
        .orderBy('row_number')
        .pluck('row_number')) as (number | string)[];
      expect(errors.map(Number)).to.deep.equal([...bad].sort((x, y) => x - y));

      // The items carry the right rows: a page from the middle of the file reads back its payloads.
      const page = await call(
        base,
        'GET',
        `/v1/queues/${queueId}/items?batchId=${batchId}&limit=3&cursor=${Buffer.from(JSON.stringify({ l: 'queue-items', a: 150_000 })).toString('base64url')}`,
        { token: token2 },
      );
      expect(page.status, page.text).to.equal(200);
      for (const item of page.body.items) {
        expect(item.payload).to.deep.equal({
          email: `user${item.rowNumber - 1}@example.com`,
          plan: 'pro',
          seats: String((item.rowNumber - 1) % 50),
        });
      }
    } finally {
      await db.destroy();
    }
  });

  const backends: {
    name: string;
    env: () => Promise<Record<string, string> | undefined>;
    cleanup?: () => Promise<void>;
  }[] = [
    { name: 'sqlite file', env: async () => ({}) },
    (() => {
      const schema = `t_queues_${process.pid}`;
      return {
        name: 'PostgreSQL + Redis',
        async env() {
          if (!(await isPgAvailable())) {
            if (process.env.CI === 'true') throw new Error(`PostgreSQL is required on CI (${TEST_PG_URL})`);
            return undefined;
          }
          const c = new pg.Client({ connectionString: TEST_PG_URL });
          await c.connect();
          await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; CREATE SCHEMA "${schema}"`);
          await c.end();
          return {
            DATABASE_URL: `${TEST_PG_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`,
            REDIS_URL: 'redis://127.0.0.1:6379',
            REDIS_PREFIX: `sy-q-${process.pid}-${Date.now()}`,
          };
        },
        async cleanup() {
          const c = new pg.Client({ connectionString: TEST_PG_URL });
          await c.connect();
          await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
          await c.end();
        },
      };
    })(),
  ];

  for (const backend of backends) {
    it(`two processes dispatching one queue stay within its concurrencyLimit together (${backend.name})`, async function () {
      const env = await backend.env();
      if (!env) this.skip();
      const open = { now: 0, peak: 0, calls: 0 };
      const slow = http.createServer((_req, res) => {
        open.calls++;
        open.peak = Math.max(open.peak, ++open.now);
        setTimeout(() => {
          open.now--;
          res.end('ok');
        }, 120);
      });
      await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
      try {
        const ports = [await freePort(), await freePort()];
        const bases = ports.map((p) => `http://127.0.0.1:${p}`);
        const a = start(dataDir, ports[0]!, { ...env!, RUN_CONCURRENCY: '8' });
        children.push(a);
        await ready(bases[0]!);
        const b2 = start(dataDir, ports[1]!, { ...env!, RUN_CONCURRENCY: '8' });
        children.push(b2);
        await ready(bases[1]!);
        const { token } = await tokenFor(bases[0]!, dataDir);
        const wf = await call(bases[0]!, 'POST', '/v1/workflows', {
          token,
          body: {
            name: 'Slow call',
            steps: [
              {
                type: 'http',
                name: 'Nap',
                request: { method: 'GET', url: `http://127.0.0.1:${(slow.address() as AddressInfo).port}/` },
              },
            ],
          },
        });
        expect(wf.status, wf.text).to.equal(201);
        const trg = await call(bases[0]!, 'POST', '/v1/triggers', {
          token,
          body: { automationId: wf.body.automationId, kind: 'api' },
        });
        expect(trg.status, trg.text).to.equal(201);
        const queue = await call(bases[0]!, 'POST', '/v1/queues', {
          token,
          body: { name: 'shared', triggerId: trg.body.triggerId, concurrencyLimit: 3 },
        });
        expect(queue.status, queue.text).to.equal(201);
        const queueId = queue.body.queueId as string;
        const csvKey = await uploadCsvTo(
          bases[0]!,
          token,
          queueId,
          Buffer.from('n\n' + Array.from({ length: 30 }, (_, i) => `${i}\n`).join('')),
        );
        const created = await call(bases[1]!, 'POST', `/api/queues/${queueId}/items/csv`, {
          token: (await tokenFor(bases[1]!, dataDir)).token,
          body: { csvKey, triggerId: trg.body.triggerId },
        });
        expect(created.status, created.text).to.equal(202);
        const done = await until(
          'batch',
          () => batchOf(bases[0]!, token, queueId, created.body.batchId),
          (x) => x.status === 'completed',
          60_000,
          50,
        );
        expect(done).to.include({ runsCompleted: 30, runsFailed: 0, loadedRows: 30 });
        expect(open.calls).to.equal(30);
        expect(open.peak, 'calls in flight at once, both processes together').to.equal(3);
      } finally {
        await new Promise<void>((r) => slow.close(() => r()));
        await backend.cleanup?.();
      }
    });
  }
});
