/**
 * The queue operations of the management API (openapi/management.yaml `/v1/queues`, spec
 * section 15) over real HTTP on loopback: settings and their bounds, the trigger rule,
 * optimistic locking, organisation scope, paging, the item and batch reads, and what a delete
 * takes with it. Batches, items and row errors are written straight into the store (their
 * bytes into the blob store), so these reads are tested apart from upload and loading; those
 * queues stay paused so no dispatcher touches them. Every response is checked against the
 * OpenAPI bundle, on every store this machine has.
 */
import { expect } from 'chai';
import type { Knex } from 'knex';
import { call, createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { storeKinds } from '../../helpers/store.js';
import { createWorkflow } from '../../../src/engine/index.js';
import { createTrigger } from '../../../src/triggers/index.js';
import { createAgent } from '../../../src/agents/agents.js';
import { createChannel } from '../../../src/agents/channels.js';
import { demoWorkflow } from '../../../src/bootstrap/demo-workflow.js';
import { demoAgent } from '../../../src/bootstrap/demo-agent.js';
import { BlobNotFoundError } from '../../../src/kernel/blobs.js';
import { newId, nowIso } from '../../../src/kernel/ids.js';

const kinds = await storeKinds();

/** Header, then rows 2 and 3; the byte ranges below are these lines, line ends included. */
const CSV = 'email,plan\nada@example.com,pro\ngrace@example.com,team\n';
const ROW2 = [11, 31] as const;
const ROW3 = [31, 54] as const;

interface SeededBatch {
  batchId: string;
  csvKey: string;
  blobKey: string;
}

for (const kind of kinds) {
  describe(`queues: management API (${kind})`, () => {
    let server: TestServer;
    let org: TestOrg;
    let other: TestOrg;
    let apiTriggerId: string;
    let webhookTriggerId: string;
    let otherTriggerId: string;
    let channelId: string;
    const api = <T = any>(
      method: string,
      path: string,
      opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
    ) => call<T>(server.baseUrl, method, path, { token: org.token, ...opts });
    const db = (): Knex => server.app.services.db;
    const newQueue = async (body: Record<string, unknown> = {}, token = org.token) => {
      const res = await api('POST', '/v1/queues', { token, body: { name: 'q', triggerId: apiTriggerId, ...body } });
      expect(res.status, res.text).to.equal(201);
      return res.body.queueId as string;
    };

    /** A batch with its upload, two items (rows 2 and 3) and one skipped row, as the loader leaves them. */
    const seedBatch = async (
      queueId: string,
      items: { row: 2 | 3; status: string; runId?: string; attempts?: number }[],
      status = 'running',
    ): Promise<SeededBatch> => {
      const now = nowIso();
      const batchId = newId('batch');
      const csvKey = newId('csv');
      // Where src/queues/uploads.ts keeps an upload's bytes.
      const blobKey = `queue-uploads/${queueId}/${csvKey}-000000000000.csv`;
      const stored = await server.app.services.blobs.put(blobKey, Buffer.from(CSV));
      await db()('csv_uploads').insert({
        csv_key: csvKey,
        org_id: org.orgId,
        queue_id: queueId,
        filename: 'leads.csv',
        declared_size: stored.size,
        size_bytes: stored.size,
        sha256: stored.sha256,
        blob_key: blobKey,
        expires_at: now,
        uploaded_at: now,
        batch_id: batchId,
        created_at: now,
      });
      const completed = items.filter((i) => i.status === 'completed').length;
      const failed = items.filter((i) => i.status === 'failed').length;
      await db()('queue_batches').insert({
        id: batchId,
        org_id: org.orgId,
        queue_id: queueId,
        csv_key: csvKey,
        trigger_id: apiTriggerId,
        filename: 'leads.csv',
        size_bytes: stored.size,
        sha256: stored.sha256,
        blob_key: blobKey,
        columns: JSON.stringify(['email', 'plan']),
        status,
        total_rows: 3,
        loaded_rows: items.length,
        skipped_rows: 1,
        runs_completed: completed,
        runs_failed: failed,
        loaded: true,
        resume_offset: CSV.length,
        resume_row: 5,
        created_at: now,
        updated_at: now,
      });
      for (const it of items) {
        const [start, end] = it.row === 2 ? ROW2 : ROW3;
        await db()('queue_items').insert({
          batch_id: batchId,
          queue_id: queueId,
          row_number: it.row,
          byte_start: start,
          byte_end: end,
          status: it.status,
          run_id: it.runId ?? null,
          attempts: it.attempts ?? 0,
          updated_at: it.status === 'queued' ? null : now,
        });
      }
      await db()('batch_row_errors').insert({
        batch_id: batchId,
        row_number: 4,
        reason: 'column_count',
        message: 'Row has 3 columns; the header has 2.',
        raw_excerpt: 'a,b,c',
      });
      return { batchId, csvKey, blobKey };
    };

    before(async () => {
      server = await startTestServer(kind);
      org = await createTestOrg(server, 'Org A');
      other = await createTestOrg(server, 'Org B');
      const wf = await createWorkflow(db(), org.orgId, demoWorkflow);
      apiTriggerId = (await createTrigger(db(), org.orgId, { automationId: wf.automationId, kind: 'api' })).triggerId;
      webhookTriggerId = (await createTrigger(db(), org.orgId, { automationId: wf.automationId, kind: 'webhook' }))
        .triggerId;
      const otherWf = await createWorkflow(db(), other.orgId, demoWorkflow);
      otherTriggerId = (await createTrigger(db(), other.orgId, { automationId: otherWf.automationId, kind: 'api' }))
        .triggerId;
      const agent = await createAgent(db(), org.orgId, demoAgent);
      channelId = (await createChannel(db(), org.orgId, { agentId: agent.agentId })).channel.triggerId;
    });
    after(async () => server?.close());
    afterEach(() => server.assertResponsesValid());

    it('op:createQueue op:getQueue — defaults, ETag "1", the same view on read', async () => {
      const created = await api('POST', '/v1/queues', { body: { name: 'Leads', triggerId: apiTriggerId } });
      expect(created.status, created.text).to.equal(201);
      expect(created.headers.get('etag')).to.equal('"1"');
      expect(created.body.queueId).to.match(/^queue_[0-9a-f]{32}$/);
      expect(created.body).to.deep.include({
        name: 'Leads',
        description: '',
        triggerId: apiTriggerId,
        concurrencyLimit: 5,
        priority: 5,
        maxRetries: 0,
        paused: false,
        version: 1,
      });
      expect(created.body.createdAt).to.equal(created.body.updatedAt);
      const read = await api('GET', `/v1/queues/${created.body.queueId}`);
      expect(read.status, read.text).to.equal(200);
      expect(read.headers.get('etag')).to.equal('"1"');
      expect(read.body).to.deep.equal(created.body);
    });

    it('op:createQueue — every setting given, on a webhook trigger, created paused', async () => {
      const body = {
        name: 'N'.repeat(200),
        description: 'All the settings',
        triggerId: webhookTriggerId,
        concurrencyLimit: 1000,
        priority: 10,
        maxRetries: 3,
        paused: true,
      };
      const created = await api('POST', '/v1/queues', { body });
      expect(created.status, created.text).to.equal(201);
      expect(created.body).to.deep.include(body);
      const low = await api('POST', '/v1/queues', {
        body: { name: 'low', triggerId: apiTriggerId, concurrencyLimit: 1, priority: 1, maxRetries: 0 },
      });
      expect(low.body).to.deep.include({ concurrencyLimit: 1, priority: 1, maxRetries: 0 });
    });

    it('op:createQueue — bounds, types and unknown fields answer 400 invalid_request', async () => {
      const bad: Record<string, unknown>[] = [
        { triggerId: apiTriggerId },
        { name: 'x' },
        { name: '', triggerId: apiTriggerId },
        { name: 'N'.repeat(201), triggerId: apiTriggerId },
        { name: 'x', triggerId: '' },
        { name: 'x', triggerId: apiTriggerId, concurrencyLimit: 0 },
        { name: 'x', triggerId: apiTriggerId, concurrencyLimit: 1001 },
        { name: 'x', triggerId: apiTriggerId, concurrencyLimit: 2.5 },
        { name: 'x', triggerId: apiTriggerId, priority: 0 },
        { name: 'x', triggerId: apiTriggerId, priority: 11 },
        { name: 'x', triggerId: apiTriggerId, maxRetries: -1 },
        { name: 'x', triggerId: apiTriggerId, maxRetries: 4 },
        { name: 'x', triggerId: apiTriggerId, paused: 'yes' },
        { name: 'x', triggerId: apiTriggerId, description: 'd'.repeat(2001) },
        { name: 'x', triggerId: apiTriggerId, workflowId: 'wf_1' },
      ];
      for (const body of bad) {
        const res = await api('POST', '/v1/queues', { body });
        expect([res.status, res.body.error], JSON.stringify(body)).to.deep.equal([400, 'invalid_request']);
      }
      const notJson = await call(server.baseUrl, 'POST', '/v1/queues', {
        token: org.token,
        headers: { 'content-type': 'application/json' },
        raw: '{',
      });
      expect([notJson.status, notJson.body.error]).to.deep.equal([400, 'malformed_json']);
      const text = await call(server.baseUrl, 'POST', '/v1/queues', {
        token: org.token,
        headers: { 'content-type': 'text/plain' },
        raw: 'x',
      });
      expect(text.status).to.equal(415);
      expect((await api('GET', '/v1/queues')).body.items.map((q: any) => q.name)).to.not.include('x');
    });

    it('op:createQueue — a trigger that is not a workflow trigger of the organisation answers 400 invalid_trigger', async () => {
      for (const triggerId of ['trg_00000000000000000000000000000000', otherTriggerId, channelId, 'not-an-id']) {
        const res = await api('POST', '/v1/queues', { body: { name: 'x', triggerId } });
        expect([res.status, res.body.error], triggerId).to.deep.equal([400, 'invalid_trigger']);
        expect(res.body.details).to.deep.equal({ field: 'triggerId' });
        expect(res.body.message).to.contain('API or webhook trigger');
      }
    });

    it('op:listQueues — authentication, X-Selected-Org, organisation scope', async () => {
      expect((await call(server.baseUrl, 'GET', '/v1/queues')).status).to.equal(401);
      expect((await call(server.baseUrl, 'GET', '/v1/queues', { token: 'not-a-token' })).status).to.equal(401);
      const mismatch = await api('GET', '/v1/queues', { headers: { 'x-selected-org': other.orgId } });
      expect([mismatch.status, mismatch.body.error]).to.deep.equal([403, 'org_mismatch']);
      expect((await api('GET', '/v1/queues', { headers: { 'x-selected-org': org.orgId } })).status).to.equal(200);
      const theirs = await newQueue({ triggerId: otherTriggerId, name: 'theirs' }, other.token);
      const mine = (await api('GET', '/v1/queues?limit=200')).body.items.map((q: any) => q.queueId);
      expect(mine).to.not.include(theirs);
      expect(
        (await api('GET', '/v1/queues', { token: other.token })).body.items.map((q: any) => q.queueId),
      ).to.deep.equal([theirs]);
    });

    it('op:listQueues — pages oldest first with limit and cursor; a foreign or forged cursor answers 400 invalid_cursor', async () => {
      const ids = [await newQueue({ name: 'p1' }), await newQueue({ name: 'p2' }), await newQueue({ name: 'p3' })];
      const all: string[] = [];
      let cursor: string | null = null;
      do {
        const res: any = await api('GET', `/v1/queues?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        expect(res.status, res.text).to.equal(200);
        expect(res.body.items.length).to.be.at.most(2);
        all.push(...res.body.items.map((q: any) => q.queueId));
        cursor = res.body.nextCursor;
      } while (cursor);
      expect(all.slice(-3)).to.deep.equal(ids);
      expect(new Set(all).size).to.equal(all.length);
      const forged = await api('GET', '/v1/queues?cursor=not-a-cursor');
      expect([forged.status, forged.body.error]).to.deep.equal([400, 'invalid_cursor']);
      const collections = Buffer.from(
        JSON.stringify({ l: 'collections', a: 'col_01932f6fa1b27c3d9e0f1a2b3c4d5e6f' }),
      ).toString('base64url');
      expect((await api('GET', `/v1/queues?cursor=${collections}`)).body.error).to.equal('invalid_cursor');
      expect((await api('GET', '/v1/queues?limit=0')).status).to.equal(400);
      expect((await api('GET', '/v1/queues?limit=201')).status).to.equal(400);
    });

    it("op:getQueue — an unknown id, a malformed id and another organisation's queue answer 404 not_found", async () => {
      const theirs = await newQueue({ triggerId: otherTriggerId }, other.token);
      for (const id of ['queue_00000000000000000000000000000000', 'nope', theirs]) {
        const res = await api('GET', `/v1/queues/${id}`);
        expect([res.status, res.body.error], id).to.deep.equal([404, 'not_found']);
      }
    });

    it('op:updateQueue — If-Match required (428), stale or malformed (412), version and ETag move on', async () => {
      const id = await newQueue();
      const missing = await api('PATCH', `/v1/queues/${id}`, { body: { priority: 9 } });
      expect([missing.status, missing.body.error]).to.deep.equal([428, 'precondition_required']);
      const stale = await api('PATCH', `/v1/queues/${id}`, { body: { priority: 9 }, headers: { 'if-match': '"7"' } });
      expect([stale.status, stale.body.error, stale.body.details]).to.deep.equal([
        412,
        'version_conflict',
        { currentVersion: 1 },
      ]);
      expect(
        (await api('PATCH', `/v1/queues/${id}`, { body: { priority: 9 }, headers: { 'if-match': 'W/"1"' } })).status,
      ).to.equal(412);
      const changed = await api('PATCH', `/v1/queues/${id}`, {
        body: {
          name: 'Renamed',
          description: 'Now described',
          priority: 9,
          maxRetries: 2,
          concurrencyLimit: 50,
          triggerId: webhookTriggerId,
        },
        headers: { 'if-match': '"1"' },
      });
      expect(changed.status, changed.text).to.equal(200);
      expect(changed.headers.get('etag')).to.equal('"2"');
      expect(changed.body).to.deep.include({
        name: 'Renamed',
        description: 'Now described',
        priority: 9,
        maxRetries: 2,
        concurrencyLimit: 50,
        triggerId: webhookTriggerId,
        paused: false,
        version: 2,
      });
      expect(changed.body.updatedAt >= changed.body.createdAt).to.equal(true);
      // The first writer's version is stale now.
      expect(
        (await api('PATCH', `/v1/queues/${id}`, { body: { priority: 1 }, headers: { 'if-match': '"1"' } })).body
          .details,
      ).to.deep.equal({ currentVersion: 2 });
      expect((await api('GET', `/v1/queues/${id}`)).body.priority).to.equal(9);
    });

    it('op:updateQueue — pause and resume round trip, each waking the dispatcher', async () => {
      const id = await newQueue();
      const svc = server.app.services.queues;
      const wake = svc.wake;
      let wakes = 0;
      svc.wake = () => {
        wakes++;
        wake.call(svc);
      };
      try {
        const paused = await api('PATCH', `/v1/queues/${id}`, {
          body: { paused: true },
          headers: { 'if-match': '"1"' },
        });
        expect([paused.status, paused.body.paused, paused.headers.get('etag')]).to.deep.equal([200, true, '"2"']);
        expect((await api('GET', `/v1/queues/${id}`)).body.paused).to.equal(true);
        expect(wakes).to.equal(1);
        const resumed = await api('PATCH', `/v1/queues/${id}`, {
          body: { paused: false },
          headers: { 'if-match': '"2"' },
        });
        expect([resumed.status, resumed.body.paused, resumed.body.version]).to.deep.equal([200, false, 3]);
        expect((await api('GET', `/v1/queues/${id}`)).body.paused).to.equal(false);
        expect(wakes).to.equal(2);
        // Refused updates change nothing and wake nothing.
        expect((await api('PATCH', `/v1/queues/${id}`, { body: { paused: true } })).status).to.equal(428);
        expect(wakes).to.equal(2);
      } finally {
        svc.wake = wake;
      }
    });

    it("op:updateQueue — 400 for an empty or invalid body and a foreign trigger, 404 for another organisation's queue", async () => {
      const id = await newQueue();
      const headers = { 'if-match': '"1"' };
      for (const body of [
        {},
        { priority: 11 },
        { concurrencyLimit: 0 },
        { maxRetries: 4 },
        { name: '' },
        { paused: 'no' },
        { color: 'red' },
      ]) {
        const res = await api('PATCH', `/v1/queues/${id}`, { body, headers });
        expect([res.status, res.body.error], JSON.stringify(body)).to.deep.equal([400, 'invalid_request']);
      }
      for (const triggerId of [otherTriggerId, channelId]) {
        const res = await api('PATCH', `/v1/queues/${id}`, { body: { triggerId }, headers });
        expect([res.status, res.body.error]).to.deep.equal([400, 'invalid_trigger']);
      }
      expect((await api('GET', `/v1/queues/${id}`)).body).to.deep.include({ version: 1, triggerId: apiTriggerId });
      const theirs = await api('PATCH', `/v1/queues/${id}`, { token: other.token, body: { paused: true }, headers });
      expect([theirs.status, theirs.body.error]).to.deep.equal([404, 'not_found']);
      // 404 comes before the body's trigger check: the queue is the first thing wrong.
      const unknown = await api('PATCH', '/v1/queues/queue_00000000000000000000000000000000', {
        body: { triggerId: otherTriggerId },
        headers,
      });
      expect(unknown.status).to.equal(404);
    });

    it('op:listQueueItems — load order, payloads from the stored upload, batch and status filters, paging', async () => {
      const id = await newQueue({ paused: true });
      const a = await seedBatch(id, [
        { row: 2, status: 'completed', runId: 'run_00000000000000000000000000000001', attempts: 1 },
        { row: 3, status: 'queued' },
      ]);
      const b = await seedBatch(
        id,
        [
          { row: 2, status: 'failed', runId: 'run_00000000000000000000000000000002', attempts: 2 },
          { row: 3, status: 'cancelled' },
        ],
        'cancelled',
      );
      const all = await api('GET', `/v1/queues/${id}/items`);
      expect(all.status, all.text).to.equal(200);
      expect(all.body.nextCursor).to.equal(null);
      expect(all.body.items.map((i: any) => [i.batchId, i.rowNumber, i.status, i.attempts])).to.deep.equal([
        [a.batchId, 2, 'completed', 1],
        [a.batchId, 3, 'queued', 0],
        [b.batchId, 2, 'failed', 2],
        [b.batchId, 3, 'cancelled', 0],
      ]);
      expect(all.body.items[0]).to.deep.include({
        runId: 'run_00000000000000000000000000000001',
        payload: { email: 'ada@example.com', plan: 'pro' },
      });
      expect(all.body.items[1]).to.deep.include({
        runId: null,
        updatedAt: null,
        payload: { email: 'grace@example.com', plan: 'team' },
      });

      const ofB = await api('GET', `/v1/queues/${id}/items?batchId=${b.batchId}`);
      expect(ofB.body.items.map((i: any) => i.status)).to.deep.equal(['failed', 'cancelled']);
      const queued = await api('GET', `/v1/queues/${id}/items?status=queued`);
      expect(queued.body.items.map((i: any) => [i.batchId, i.rowNumber])).to.deep.equal([[a.batchId, 3]]);
      expect((await api('GET', `/v1/queues/${id}/items?status=failed&batchId=${a.batchId}`)).body.items).to.deep.equal(
        [],
      );
      expect((await api('GET', `/v1/queues/${id}/items?status=running`)).body.items).to.deep.equal([]);
      const badStatus = await api('GET', `/v1/queues/${id}/items?status=done`);
      expect([badStatus.status, badStatus.body.error]).to.deep.equal([400, 'invalid_request']);
      // A batch of another queue is only a filter value that matches nothing.
      const elsewhere = await newQueue({ paused: true });
      const c = await seedBatch(elsewhere, [{ row: 2, status: 'queued' }]);
      expect((await api('GET', `/v1/queues/${id}/items?batchId=${c.batchId}`)).body.items).to.deep.equal([]);

      const first = await api('GET', `/v1/queues/${id}/items?limit=3`);
      expect(first.body.items).to.have.length(3);
      expect(first.body.nextCursor).to.be.a('string');
      const second = await api(
        'GET',
        `/v1/queues/${id}/items?limit=3&cursor=${encodeURIComponent(first.body.nextCursor)}`,
      );
      expect(second.body.items.map((i: any) => [i.batchId, i.rowNumber])).to.deep.equal([[b.batchId, 3]]);
      expect(second.body.nextCursor).to.equal(null);
      expect((await api('GET', `/v1/queues/${id}/items?cursor=bm9wZQ`)).body.error).to.equal('invalid_cursor');

      // The upload's bytes are gone: items stay, their payload is null.
      await server.app.services.blobs.delete(a.blobKey);
      const gone = await api('GET', `/v1/queues/${id}/items?batchId=${a.batchId}`);
      expect(gone.body.items.map((i: any) => i.payload)).to.deep.equal([null, null]);
    });

    it("op:listQueueItems — another organisation's queue answers 404 not_found", async () => {
      const theirs = await newQueue({ triggerId: otherTriggerId, paused: true }, other.token);
      const res = await api('GET', `/v1/queues/${theirs}/items`);
      expect([res.status, res.body.error]).to.deep.equal([404, 'not_found']);
      expect((await api('GET', `/v1/queues/${theirs}/items`, { token: other.token })).status).to.equal(200);
    });

    it("op:listQueueBatches — oldest first with their counters, paging, 404 for another organisation's queue", async () => {
      const id = await newQueue({ paused: true });
      expect((await api('GET', `/v1/queues/${id}/batches`)).body).to.deep.equal({ items: [], nextCursor: null });
      const a = await seedBatch(id, [
        { row: 2, status: 'completed', runId: 'run_00000000000000000000000000000003', attempts: 1 },
        { row: 3, status: 'queued' },
      ]);
      const b = await seedBatch(
        id,
        [
          { row: 2, status: 'failed', attempts: 1 },
          { row: 3, status: 'cancelled' },
        ],
        'cancelled',
      );
      const list = await api('GET', `/v1/queues/${id}/batches`);
      expect(list.status, list.text).to.equal(200);
      expect(list.body.items.map((x: any) => x.batchId)).to.deep.equal([a.batchId, b.batchId]);
      expect(list.body.items[0]).to.deep.include({
        queueId: id,
        csvKey: a.csvKey,
        triggerId: apiTriggerId,
        filename: 'leads.csv',
        sizeBytes: CSV.length,
        status: 'running',
        totalRows: 3,
        loadedRows: 2,
        skippedRows: 1,
        readRows: 3,
        runsCompleted: 1,
        runsFailed: 0,
        runsRunning: 0,
        runsPending: 1,
        failureReason: null,
      });
      expect(list.body.items[1]).to.deep.include({ status: 'cancelled', runsFailed: 1 });
      const first = await api('GET', `/v1/queues/${id}/batches?limit=1`);
      expect(first.body.items.map((x: any) => x.batchId)).to.deep.equal([a.batchId]);
      const second = await api(
        'GET',
        `/v1/queues/${id}/batches?limit=1&cursor=${encodeURIComponent(first.body.nextCursor)}`,
      );
      expect([second.body.items.map((x: any) => x.batchId), second.body.nextCursor]).to.deep.equal([[b.batchId], null]);
      expect((await api('GET', `/v1/queues/${id}/batches?cursor=bm9wZQ`)).body.error).to.equal('invalid_cursor');
      const theirs = await api('GET', `/v1/queues/${id}/batches`, { token: other.token });
      expect([theirs.status, theirs.body.error]).to.deep.equal([404, 'not_found']);
    });

    it('op:deleteQueue — If-Match optional but checked, 404 after, other organisations untouched', async () => {
      const id = await newQueue();
      const theirs = await api('DELETE', `/v1/queues/${id}`, { token: other.token });
      expect([theirs.status, theirs.body.error]).to.deep.equal([404, 'not_found']);
      const stale = await api('DELETE', `/v1/queues/${id}`, { headers: { 'if-match': '"3"' } });
      expect([stale.status, stale.body.details]).to.deep.equal([412, { currentVersion: 1 }]);
      const deleted = await api('DELETE', `/v1/queues/${id}`, { headers: { 'if-match': '"1"' } });
      expect([deleted.status, deleted.text]).to.deep.equal([204, '']);
      expect((await api('GET', `/v1/queues/${id}`)).status).to.equal(404);
      expect((await api('DELETE', `/v1/queues/${id}`)).status).to.equal(404);
      expect((await api('DELETE', `/v1/queues/${id}`, { headers: { 'if-match': '"1"' } })).status).to.equal(404);
      const unconditional = await newQueue();
      expect((await api('DELETE', `/v1/queues/${unconditional}`)).status).to.equal(204);
    });

    it('op:deleteQueue — uploads, batches, items, row errors and stored files go; runs stay; other queues keep theirs', async () => {
      // A real run of the queue's workflow, finished before it is linked to an item.
      const run = await call(server.baseUrl, 'POST', `/ext/triggers/${apiTriggerId}`, {
        headers: { 'x-api-key': org.apiKey, 'x-api-wait': 'true' },
        body: { name: 'Ada' },
      });
      expect(run.status, run.text).to.equal(200);
      const runId = run.headers.get('x-pf-run-id')!;
      const id = await newQueue({ paused: true });
      const a = await seedBatch(id, [
        { row: 2, status: 'completed', runId, attempts: 1 },
        { row: 3, status: 'queued' },
      ]);
      const kept = await newQueue({ paused: true });
      const k = await seedBatch(kept, [{ row: 2, status: 'queued' }]);

      expect((await api('DELETE', `/v1/queues/${id}`)).status).to.equal(204);
      for (const [table, where] of [
        ['csv_uploads', { queue_id: id }],
        ['queue_batches', { queue_id: id }],
        ['queue_items', { queue_id: id }],
        ['batch_row_errors', { batch_id: a.batchId }],
      ] as const) {
        expect(await db()(table).where(where).select('*'), table).to.deep.equal([]);
      }
      let missing: unknown;
      await server.app.services.blobs.get(a.blobKey).catch((err: unknown) => (missing = err));
      expect(missing).to.be.instanceOf(BlobNotFoundError);
      expect(await db()('runs').where({ id: runId }).first('id')).to.deep.equal({ id: runId });
      expect((await api('GET', `/v1/runs?triggerId=${apiTriggerId}`)).body.items.map((r: any) => r.runId)).to.include(
        runId,
      );

      // The other queue keeps its batch, items, row errors and file.
      expect((await api('GET', `/v1/queues/${kept}/items`)).body.items.map((i: any) => i.payload)).to.deep.equal([
        { email: 'ada@example.com', plan: 'pro' },
      ]);
      expect((await api('GET', `/v1/queues/${kept}/batches`)).body.items.map((x: any) => x.batchId)).to.deep.equal([
        k.batchId,
      ]);
      expect(await db()('batch_row_errors').where({ batch_id: k.batchId }).select('row_number')).to.have.length(1);
    });
  });
}
