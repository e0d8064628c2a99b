/**
 * Queue CSV batches over HTTP (openapi/queues.yaml, spec section 15): upload through the
 * presigned URL, batch creation and head validation, loading into items and runs, row errors.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { createUploadUrl } from '../../../src/queues/uploads.js';
import { createAgent } from '../../../src/agents/agents.js';
import { createChannel } from '../../../src/agents/channels.js';
import { demoAgent } from '../../../src/bootstrap/demo-agent.js';
import { startTestServer, createTestOrg, call, type TestServer, type TestOrg } from '../../helpers/server.js';
import { deploy, code } from '../../helpers/runs.js';
import { makeQueue, uploadCsv, waitBatch, finished } from '../../helpers/queues.js';

describe('queue CSV batches (sqlite)', function () {
  this.timeout(60_000);
  let server: TestServer;
  let org: TestOrg;
  let triggerId: string;

  before(async () => {
    server = await startTestServer('sqlite', { RUN_CONCURRENCY: '4' });
    org = await createTestOrg(server);
    const wf = await deploy(server, org, {
      name: 'Echo row',
      steps: [code('Echo', 'return JSON.stringify(ctx.inputs);', { resultType: 'json' })],
    });
    triggerId = wf.apiTriggerId;
  });
  after(async () => {
    server.assertResponsesValid();
    await server.close();
  });

  it('loads every good row into a run and lists the skipped ones (op:createCsvUploadUrl op:uploadCsvFile op:createCsvBatch op:getQueueBatch op:listBatchRowErrors)', async () => {
    const queue = await makeQueue(server, org, { name: 'q1', triggerId, concurrencyLimit: 3 });
    const csv =
      '\uFEFFemail,note\r\nada@example.com,"likes, commas"\r\ngrace@example.com,"two\nlines"\n\nbad,row,extra\nlin@example.com,plain\nend@example.com,"never closed\n';
    const csvKey = await uploadCsv(server, org, queue.id, csv);
    const created = await call(server.baseUrl, 'POST', `/api/queues/${queue.id}/items/csv`, {
      token: org.token,
      body: { csvKey, triggerId },
    });
    expect(created.status, created.text).to.equal(202);
    expect(created.body).to.include({
      status: 'pending',
      totalRows: 5,
      csvKey,
      triggerId,
      filename: 'rows.csv',
      sizeBytes: Buffer.byteLength(csv),
    });
    const done = await waitBatch(server, org, queue.id, created.body.batchId, finished);
    expect(done).to.include({
      status: 'completed',
      loadedRows: 3,
      skippedRows: 2,
      readRows: 5,
      runsCompleted: 3,
      runsFailed: 0,
      runsPending: 0,
      runsRunning: 0,
    });
    const runs = await server.app.services
      .db('runs')
      .where({ started_by: 'queue_batch', trigger_id: triggerId })
      .select('inputs');
    expect(
      runs
        .map((r: { inputs: string }) => JSON.parse(r.inputs))
        .sort((a: any, b: any) => a.email.localeCompare(b.email)),
    ).to.deep.equal([
      { email: 'ada@example.com', note: 'likes, commas' },
      { email: 'grace@example.com', note: 'two\nlines' },
      { email: 'lin@example.com', note: 'plain' },
    ]);
    const errors = await call(
      server.baseUrl,
      'GET',
      `/api/queues/${queue.id}/batches/${created.body.batchId}/row-errors?limit=1`,
      { token: org.token },
    );
    expect(errors.status, errors.text).to.equal(200);
    expect(errors.body.items).to.deep.equal([
      {
        rowNumber: 5,
        reason: 'column_count',
        message: 'Row has 3 columns; the header has 2.',
        rawExcerpt: 'bad,row,extra',
      },
    ]);
    const next = await call(
      server.baseUrl,
      'GET',
      `/api/queues/${queue.id}/batches/${created.body.batchId}/row-errors?limit=1&cursor=${errors.body.nextCursor}`,
      { token: org.token },
    );
    expect(next.body.items).to.deep.equal([
      {
        rowNumber: 7,
        reason: 'unterminated_quote',
        message: 'A quoted field is not closed before the end of the file.',
        rawExcerpt: 'end@example.com,"never closed\n',
      },
    ]);
    expect(next.body.nextCursor).to.equal(null);
  });

  describe('upload URL and PUT', () => {
    let queueId: string;
    before(async () => {
      queueId = (await makeQueue(server, org, { name: 'uploads', triggerId, paused: true })).id;
    });

    it('refuses bad names and sizes with their own codes (op:createCsvUploadUrl)', async () => {
      const ask = (body: unknown) =>
        call(server.baseUrl, 'POST', `/api/queues/${queueId}/items/csv/upload-url`, { token: org.token, body });
      expect((await ask({ filename: 'rows.txt', sizeBytes: 10 })).body.error).to.equal('invalid_filename');
      expect((await ask({ filename: 'a/rows.csv', sizeBytes: 10 })).body.error).to.equal('invalid_filename');
      expect((await ask({ filename: `${'x'.repeat(252)}.csv`, sizeBytes: 10 })).body.error).to.equal(
        'invalid_filename',
      );
      const big = await ask({ filename: 'rows.CSV', sizeBytes: 1024 ** 3 + 1 });
      expect([big.status, big.body.error]).to.deep.equal([400, 'file_too_large']);
      expect((await ask({ filename: 'rows.csv', sizeBytes: 1024 ** 3 })).status).to.equal(200);
      expect((await ask({ filename: 'rows.csv', sizeBytes: 0 })).body.error).to.equal('invalid_request');
      const other = await createTestOrg(server, 'Other org');
      const foreign = await call(server.baseUrl, 'POST', `/api/queues/${queueId}/items/csv/upload-url`, {
        token: other.token,
        body: { filename: 'a.csv', sizeBytes: 1 },
      });
      expect([foreign.status, foreign.body.error]).to.deep.equal([404, 'queue_not_found']);
      const anonymous = await call(server.baseUrl, 'POST', `/api/queues/${queueId}/items/csv/upload-url`, {
        body: { filename: 'a.csv', sizeBytes: 1 },
      });
      expect(anonymous.status).to.equal(401);
    });

    it('checks signature, expiry, size and emptiness before keeping anything (op:uploadCsvFile)', async () => {
      const url = await call(server.baseUrl, 'POST', `/api/queues/${queueId}/items/csv/upload-url`, {
        token: org.token,
        body: { filename: 'a.csv', sizeBytes: 8 },
      });
      const target = new URL(url.body.uploadUrl);
      const put = (
        u: string,
        body: Buffer | string | undefined,
        headers: Record<string, string> = { 'content-type': 'application/octet-stream' },
      ) => call('', 'PUT', u, { raw: body ?? '', headers });
      const forged = new URL(target);
      forged.searchParams.set('expires', String(Number(target.searchParams.get('expires')) + 3600));
      expect((await put(forged.toString(), 'a\n1\n')).body.error).to.equal('invalid_signature');
      const unknown = new URL(target);
      unknown.pathname = '/api/queues/uploads/csv_00000000000000000000000000000000';
      expect((await put(unknown.toString(), 'a\n1\n')).body.error).to.equal('invalid_signature');
      const queue = (await server.app.services.db('queues').where({ id: queueId }).first()) as {
        id: string;
        org_id: string;
      };
      const stale = await createUploadUrl(
        server.app.services.db,
        server.app.services.config,
        { id: queue.id, orgId: queue.org_id } as never,
        { input: { filename: 'a.csv', sizeBytes: 8 }, nowMs: Date.now() - 2 * 3600_000 },
      );
      const expired = await put(stale.uploadUrl, 'a\n1\n');
      expect([expired.status, expired.body.error]).to.deep.equal([403, 'url_expired']);
      const tooBig = await put(target.toString(), 'a\n123456789\n');
      expect([tooBig.status, tooBig.body.error]).to.deep.equal([413, 'file_too_large']);
      // Chunked (no Content-Length): the limit is enforced while streaming, and nothing is kept.
      const chunked = await fetch(target, {
        method: 'PUT',
        headers: { 'content-type': 'text/csv' },
        body: new Blob(['a\n1234', '56789\n']).stream(),
        duplex: 'half',
      } as RequestInit);
      expect(chunked.status).to.equal(413);
      const empty = await put(target.toString(), '');
      expect([empty.status, empty.body.error]).to.deep.equal([400, 'empty_file']);
      const row = await server.app.services.db('csv_uploads').where({ csv_key: url.body.csvKey }).first();
      expect(row.blob_key, 'nothing kept').to.equal(null);
      const ok = await put(target.toString(), 'a\n1\n2\n', { 'content-type': 'text/csv' });
      expect([ok.status, ok.body]).to.deep.equal([200, { csvKey: url.body.csvKey, sizeBytes: 6 }]);
      // A second PUT replaces the file until a batch takes it; then the key is used.
      const again = await put(target.toString(), 'a\n1\n');
      expect(again.status).to.equal(200);
      const batch = await call(server.baseUrl, 'POST', `/api/queues/${queueId}/items/csv`, {
        token: org.token,
        body: { csvKey: url.body.csvKey, triggerId },
      });
      expect([batch.status, batch.body.totalRows, batch.body.sizeBytes]).to.deep.equal([202, 1, 4]);
      const used = await put(target.toString(), 'a\n1\n');
      expect([used.status, used.body.error]).to.deep.equal([409, 'csv_already_used']);
      const twice = await call(server.baseUrl, 'POST', `/api/queues/${queueId}/items/csv`, {
        token: org.token,
        body: { csvKey: url.body.csvKey, triggerId },
      });
      expect([twice.status, twice.body.error]).to.deep.equal([409, 'csv_already_used']);
    });
  });

  describe('head validation (op:createCsvBatch)', () => {
    let queueId: string;
    const create = (csvKey: string, trigger = triggerId) =>
      call(server.baseUrl, 'POST', `/api/queues/${queueId}/items/csv`, {
        token: org.token,
        body: { csvKey, triggerId: trigger },
      });
    before(async () => {
      queueId = (await makeQueue(server, org, { name: 'validation', triggerId, paused: true })).id;
    });

    for (const [name, csv, error] of [
      ['an empty file (a BOM and blank lines)', '\uFEFF\n\r\n\n', 'empty_file'],
      ['a header with no rows', 'email,plan\n', 'invalid_csv_header'],
      ['a duplicate column', 'email,email\n1,2\n', 'invalid_csv_header'],
      ['a semicolon file', 'email;plan\n1;2\n', 'invalid_csv_header'],
      [
        'invalid UTF-8',
        Buffer.concat([Buffer.from('a,b\n1,'), Buffer.from([0xff, 0xfe]), Buffer.from('\n')]),
        'invalid_encoding',
      ],
    ] as const) {
      it(`refuses ${name} with ${error} and leaves no batch`, async () => {
        const csvKey = await uploadCsv(server, org, queueId, csv as string | Buffer);
        const res = await create(csvKey);
        expect([res.status, res.body.error], res.text).to.deep.equal([400, error]);
        expect(await server.app.services.db('queue_batches').where({ csv_key: csvKey }).first()).to.equal(undefined);
      });
    }

    it('takes exactly 500,000 rows and refuses one more (too_many_rows)', async () => {
      const rows = (n: number) => 'n\n' + '1\n'.repeat(n);
      const over = await create(await uploadCsv(server, org, queueId, rows(500_001)));
      expect([over.status, over.body.error, over.body.message]).to.deep.equal([
        400,
        'too_many_rows',
        'CSV batches are limited to 500000 rows; this file has 500001.',
      ]);
      const exact = await create(await uploadCsv(server, org, queueId, rows(500_000)));
      expect([exact.status, exact.body.totalRows]).to.deep.equal([202, 500_000]);
      const loaded = await waitBatch(server, org, queueId, exact.body.batchId, (b) => b.loadedRows === 500_000, 60_000);
      expect(loaded).to.include({ status: 'running', skippedRows: 0, runsPending: 500_000 });
      const cancelled = await call(
        server.baseUrl,
        'POST',
        `/api/queues/${queueId}/batches/${exact.body.batchId}/cancel`,
        { token: org.token },
      );
      expect(cancelled.body).to.include({ status: 'cancelled', runsCancelled: 500_000, runsPending: 0 });
    });

    it('fails a batch left validating by a stopped server after 5 minutes and frees its csvKey', async () => {
      const { db, queues } = server.app.services;
      const csvKey = await uploadCsv(server, org, queueId, 'n\n1\n2\n');
      const first = await call(server.baseUrl, 'POST', `/api/queues/${queueId}/items/csv`, {
        token: org.token,
        body: { csvKey, triggerId },
      });
      expect(first.status, first.text).to.equal(202);
      // What a server that died during the head scan leaves behind: the batch still validating.
      const old = new Date(Date.now() - 4 * 60_000).toISOString();
      await db('queue_batches')
        .where({ id: first.body.batchId })
        .update({ status: 'validating', total_rows: null, updated_at: old });
      queues.wake();
      await new Promise((r) => setTimeout(r, 300));
      expect(
        (
          await call(server.baseUrl, 'GET', `/api/queues/${queueId}/batches/${first.body.batchId}`, {
            token: org.token,
          })
        ).body.status,
        'not yet: 4 minutes',
      ).to.equal('validating');
      await db('queue_batches')
        .where({ id: first.body.batchId })
        .update({ updated_at: new Date(Date.now() - 6 * 60_000).toISOString() });
      queues.wake();
      const failed = await waitBatch(server, org, queueId, first.body.batchId, finished);
      expect(failed.status).to.equal('failed');
      expect(failed.failureReason).to.match(/interrupted/);
      const again = await call(server.baseUrl, 'POST', `/api/queues/${queueId}/items/csv`, {
        token: org.token,
        body: { csvKey, triggerId },
      });
      expect(again.status, again.text).to.equal(202);
      expect(again.body).to.include({ csvKey, totalRows: 2, status: 'pending' });
    });

    it('needs an uploaded file, a known trigger and a workflow trigger', async () => {
      expect((await create('csv_nothing')).body.error).to.equal('csv_not_uploaded');
      const url = await call(server.baseUrl, 'POST', `/api/queues/${queueId}/items/csv/upload-url`, {
        token: org.token,
        body: { filename: 'a.csv', sizeBytes: 4 },
      });
      expect((await create(url.body.csvKey)).body.error, 'URL issued, nothing PUT').to.equal('csv_not_uploaded');
      const csvKey = await uploadCsv(server, org, queueId, 'a\n1\n');
      const missing = await create(csvKey, 'trg_unknown');
      expect([missing.status, missing.body.error]).to.deep.equal([404, 'trigger_not_found']);
      const agent = await createAgent(server.app.services.db, org.orgId, demoAgent);
      const { channel } = await createChannel(server.app.services.db, org.orgId, {
        agentId: agent.agentId,
        name: 'c',
        outputFormat: 'text',
      });
      const agentTrigger = await create(csvKey, channel.triggerId);
      expect([agentTrigger.status, agentTrigger.body.error]).to.deep.equal([400, 'invalid_trigger']);
      const otherQueue = await makeQueue(server, org, { name: 'other', triggerId, paused: true });
      const elsewhere = await call(server.baseUrl, 'POST', `/api/queues/${otherQueue.id}/items/csv`, {
        token: org.token,
        body: { csvKey, triggerId },
      });
      expect(elsewhere.body.error, 'a key belongs to its queue').to.equal('csv_not_uploaded');
    });
  });

  describe('dispatch', () => {
    let slow: http.Server;
    let slowUrl: string;
    const open = new Map<string, number>();
    const peak = new Map<string, number>();
    before(async () => {
      slow = http.createServer((req, res) => {
        const tag = new URL(req.url ?? '/', 'http://x').searchParams.get('q') ?? '';
        open.set(tag, (open.get(tag) ?? 0) + 1);
        peak.set(tag, Math.max(peak.get(tag) ?? 0, open.get(tag)!));
        setTimeout(() => {
          open.set(tag, open.get(tag)! - 1);
          res.end('ok');
        }, 150);
      });
      await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
      slowUrl = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/`;
    });
    after(() => new Promise<void>((r) => slow.close(() => r())));

    const slowTrigger = async (tag: string, fail = false) =>
      (
        await deploy(server, org, {
          name: `Slow ${tag}`,
          steps: [
            { type: 'http', name: 'Nap', request: { method: 'GET', url: `${slowUrl}?q=${tag}` } },
            ...(fail ? [code('Boom', 'throw new Error("boom");')] : []),
          ],
        })
      ).apiTriggerId;

    it('keeps a queue within its concurrency limit across all its runs', async () => {
      const trigger = await slowTrigger('limit');
      const queue = await makeQueue(server, org, { name: 'limited', triggerId: trigger, concurrencyLimit: 2 });
      const csvKey = await uploadCsv(
        server,
        org,
        queue.id,
        'n\n' + Array.from({ length: 10 }, (_, i) => `${i}\n`).join(''),
      );
      const batch = await call(server.baseUrl, 'POST', `/api/queues/${queue.id}/items/csv`, {
        token: org.token,
        body: { csvKey, triggerId: trigger },
      });
      const done = await waitBatch(server, org, queue.id, batch.body.batchId, finished);
      expect(done).to.include({ status: 'completed', runsCompleted: 10 });
      expect(peak.get('limit')).to.equal(2);
    });

    it('retries a failed row maxRetries times, then counts it failed', async () => {
      const trigger = await slowTrigger('retry', true);
      const queue = await makeQueue(server, org, {
        name: 'retrying',
        triggerId: trigger,
        concurrencyLimit: 5,
        maxRetries: 2,
      });
      const csvKey = await uploadCsv(server, org, queue.id, 'n\n1\n2\n');
      const batch = await call(server.baseUrl, 'POST', `/api/queues/${queue.id}/items/csv`, {
        token: org.token,
        body: { csvKey, triggerId: trigger },
      });
      const done = await waitBatch(server, org, queue.id, batch.body.batchId, finished);
      expect(done).to.include({ status: 'completed', runsCompleted: 0, runsFailed: 2 });
      const runs = await server.app.services.db('runs').where({ trigger_id: trigger }).select('status');
      expect(runs.map((r: { status: string }) => r.status)).to.deep.equal(Array(6).fill('FAILED'));
      const items = await server.app.services
        .db('queue_items')
        .where({ batch_id: batch.body.batchId })
        .pluck('attempts');
      expect(items).to.deep.equal([3, 3]);
    });

    it('gives the free places to the higher priority first and starts nothing in a paused queue', async () => {
      const { db, queues } = server.app.services;
      const trigger = await slowTrigger('prio');
      const low = await makeQueue(server, org, {
        name: 'low',
        triggerId: trigger,
        concurrencyLimit: 100,
        priority: 1,
        paused: true,
      });
      const high = await makeQueue(server, org, {
        name: 'high',
        triggerId: trigger,
        concurrencyLimit: 100,
        priority: 9,
        paused: true,
      });
      const rows = 'n\n' + Array.from({ length: 40 }, (_, i) => `${i}\n`).join('');
      const batches: Record<string, string> = {};
      for (const q of [low, high]) {
        const csvKey = await uploadCsv(server, org, q.id, rows);
        batches[q.id] = (
          await call(server.baseUrl, 'POST', `/api/queues/${q.id}/items/csv`, {
            token: org.token,
            body: { csvKey, triggerId: trigger },
          })
        ).body.batchId;
        await waitBatch(server, org, q.id, batches[q.id]!, (b) => b.loadedRows === 40);
      }
      await new Promise((r) => setTimeout(r, 300));
      expect(await db('runs').where({ trigger_id: trigger }).count({ n: '*' }).first()).to.deep.equal({ n: 0 });
      await db('queues').whereIn('id', [low.id, high.id]).update({ paused: false });
      queues.wake();
      await waitBatch(server, org, high.id, batches[high.id]!, finished);
      await waitBatch(server, org, low.id, batches[low.id]!, finished);
      const order = (await db('queue_items')
        .whereIn('batch_id', Object.values(batches))
        .join('runs', 'runs.id', 'queue_items.run_id')
        .orderBy('runs.created_at')
        .orderBy('runs.id')
        .select('queue_items.queue_id')) as { queue_id: string }[];
      const firstLow = order.findIndex((o) => o.queue_id === low.id);
      // The dispatch-ahead budget (16 at RUN_CONCURRENCY 4) goes to the high queue first.
      expect(firstLow).to.be.at.least(16);
    });

    it('cancel stops dispatch: runs not started never start, running ones finish (op:cancelQueueBatch)', async () => {
      const { db } = server.app.services;
      const trigger = await slowTrigger('cancel');
      const queue = await makeQueue(server, org, { name: 'cancelled', triggerId: trigger, concurrencyLimit: 2 });
      const csvKey = await uploadCsv(
        server,
        org,
        queue.id,
        'n\n' + Array.from({ length: 30 }, (_, i) => `${i}\n`).join(''),
      );
      const batch = await call(server.baseUrl, 'POST', `/api/queues/${queue.id}/items/csv`, {
        token: org.token,
        body: { csvKey, triggerId: trigger },
      });
      await waitBatch(server, org, queue.id, batch.body.batchId, (b) => b.runsCompleted >= 2);
      const cancel = await call(
        server.baseUrl,
        'POST',
        `/api/queues/${queue.id}/batches/${batch.body.batchId}/cancel`,
        { token: org.token },
      );
      expect(cancel.status, cancel.text).to.equal(200);
      expect(cancel.body.status).to.equal('cancelled');
      const runsAtCancel = Number(
        ((await db('runs').where({ trigger_id: trigger }).count({ n: '*' }).first()) as { n: number }).n,
      );
      const settled = await waitBatch(server, org, queue.id, batch.body.batchId, (b) => b.runsRunning === 0);
      await new Promise((r) => setTimeout(r, 500));
      const runsAfter = Number(
        ((await db('runs').where({ trigger_id: trigger }).count({ n: '*' }).first()) as { n: number }).n,
      );
      expect(runsAfter, 'no run created after cancel').to.equal(runsAtCancel);
      const final = await waitBatch(server, org, queue.id, batch.body.batchId, () => true);
      expect(final.runsCompleted + final.runsCancelled + final.runsFailed).to.equal(30);
      expect(final.runsCancelled).to.be.at.least(30 - runsAtCancel);
      expect(settled.status).to.equal('cancelled');
      expect(
        await db('runs').where({ trigger_id: trigger, status: 'PENDING' }).count({ n: '*' }).first(),
      ).to.deep.equal({ n: 0 });
      const again = await call(server.baseUrl, 'POST', `/api/queues/${queue.id}/batches/${batch.body.batchId}/cancel`, {
        token: org.token,
      });
      expect([again.status, again.body.status]).to.deep.equal([200, 'cancelled']);
    });

    it('cancel during ingest stops row creation within one chunk and leaves only whole chunks (op:cancelQueueBatch)', async () => {
      const { db } = server.app.services;
      const trigger = await slowTrigger('cancel-ingest');
      const queue = await makeQueue(server, org, {
        name: 'cancelled while loading',
        triggerId: trigger,
        concurrencyLimit: 2,
      });
      // 300,000 rows with a bad one every 1,000: seconds of loading, while two runs at a time go.
      const rows = 300_000;
      const csv =
        'email,n\n' +
        Array.from({ length: rows }, (_, i) =>
          i % 1000 === 999 ? `bad${i},${i},x\n` : `u${i}@example.com,${i}\n`,
        ).join('');
      const csvKey = await uploadCsv(server, org, queue.id, csv);
      const batch = await call(server.baseUrl, 'POST', `/api/queues/${queue.id}/items/csv`, {
        token: org.token,
        body: { csvKey, triggerId: trigger },
      });
      expect(batch.status, batch.text).to.equal(202);
      const batchId = batch.body.batchId as string;
      await waitBatch(server, org, queue.id, batchId, (b) => b.readRows >= 5_000 && b.runsCompleted >= 1, 30_000);
      const cancel = await call(server.baseUrl, 'POST', `/api/queues/${queue.id}/batches/${batchId}/cancel`, {
        token: org.token,
      });
      expect(cancel.status, cancel.text).to.equal(200);
      expect(cancel.body.status).to.equal('cancelled');
      const runsAtCancel = Number(
        ((await db('runs').where({ trigger_id: trigger }).count({ n: '*' }).first()) as { n: number }).n,
      );
      await new Promise((r) => setTimeout(r, 1_000));
      const settled = await waitBatch(server, org, queue.id, batchId, (b) => b.runsRunning === 0);
      // The chunk in flight at the cancel commits before it or not at all: no row after the answer.
      expect(settled.readRows).to.equal(cancel.body.readRows);
      expect(settled.readRows, 'the load stopped before the end').to.be.lessThan(rows);
      expect(settled.readRows % 5_000, 'whole chunks only').to.equal(0);
      await new Promise((r) => setTimeout(r, 600));
      const final = await waitBatch(server, org, queue.id, batchId, () => true);
      expect(final.readRows, 'no row read after the batch settled').to.equal(settled.readRows);
      const count = async (table: string, where: Record<string, unknown>) =>
        Number(((await db(table).where(where).count({ n: '*' }).first()) as { n: number }).n);
      expect(await count('queue_items', { batch_id: batchId })).to.equal(final.loadedRows);
      expect(await count('batch_row_errors', { batch_id: batchId })).to.equal(final.skippedRows);
      expect(await count('queue_items', { batch_id: batchId, status: 'queued' }), 'no item left to dispatch').to.equal(
        0,
      );
      expect(await count('runs', { trigger_id: trigger }), 'no run created after the cancel').to.equal(runsAtCancel);
      expect(await count('runs', { trigger_id: trigger, status: 'PENDING' })).to.equal(0);
      expect(final.runsCompleted + final.runsFailed + final.runsCancelled).to.equal(final.loadedRows);
      expect(final).to.include({ status: 'cancelled', runsPending: 0, runsRunning: 0 });
    });

    it('answers 409 for a finished batch and 404 for unknown ones', async () => {
      const queue = await makeQueue(server, org, { name: 'finished', triggerId });
      const csvKey = await uploadCsv(server, org, queue.id, 'n\n1\n');
      const batch = await call(server.baseUrl, 'POST', `/api/queues/${queue.id}/items/csv`, {
        token: org.token,
        body: { csvKey, triggerId },
      });
      await waitBatch(server, org, queue.id, batch.body.batchId, finished);
      const late = await call(server.baseUrl, 'POST', `/api/queues/${queue.id}/batches/${batch.body.batchId}/cancel`, {
        token: org.token,
      });
      expect([late.status, late.body.error]).to.deep.equal([409, 'batch_finished']);
      const unknown = await call(server.baseUrl, 'GET', `/api/queues/${queue.id}/batches/batch_nope`, {
        token: org.token,
      });
      expect([unknown.status, unknown.body.error]).to.deep.equal([404, 'batch_not_found']);
      const other = await createTestOrg(server, 'Third org');
      const foreign = await call(server.baseUrl, 'GET', `/api/queues/${queue.id}/batches/${batch.body.batchId}`, {
        token: other.token,
      });
      expect([foreign.status, foreign.body.error]).to.deep.equal([404, 'queue_not_found']);
      const badCursor = await call(
        server.baseUrl,
        'GET',
        `/api/queues/${queue.id}/batches/${batch.body.batchId}/row-errors?cursor=nope`,
        { token: org.token },
      );
      expect([badCursor.status, badCursor.body.error]).to.deep.equal([400, 'invalid_cursor']);
      for (const [method, url] of [
        ['GET', `/api/queues/${queue.id}/batches/`],
        ['POST', `/api/queues/${queue.id}/batches//cancel`],
      ] as const) {
        const bad = await call(server.baseUrl, method, url, { token: org.token });
        expect([bad.status, bad.body.error], `${method} ${url}`).to.deep.equal([400, 'invalid_request']);
        expect(bad.body.details[0].path).to.equal('/batchId');
      }
    });
  });
});
