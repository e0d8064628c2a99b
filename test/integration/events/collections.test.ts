/**
 * Collections, items, files and their event calls over real HTTP (openapi/resources.yaml,
 * openapi/management.yaml /v1/collections), deliveries received by a loopback server and
 * checked against schemas/events, every response checked against the OpenAPI bundle, on every
 * store this machine has.
 */
import { expect } from 'chai';
import { call, createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { storeKinds } from '../../helpers/store.js';
import { payloadErrors, startReceiver, type Receiver } from '../../helpers/receiver.js';
import { pruneDeliveries } from '../../../src/events/outbox.js';

const kinds = await storeKinds();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const kind of kinds) {
  describe(`collections and resource events (${kind})`, () => {
    let server: TestServer;
    let org: TestOrg;
    let other: TestOrg;
    let rx: Receiver;
    const api = <T = any>(
      method: string,
      path: string,
      opts: { token?: string; body?: unknown; headers?: Record<string, string>; raw?: string | Uint8Array } = {},
    ) => call<T>(server.baseUrl, method, path, { token: org.token, ...opts });
    const newCollection = async (type: string, triggerUrls?: unknown[], name = `c-${type}`) => {
      const res = await api('POST', '/v1/collections', {
        body: { name, type, ...(triggerUrls ? { triggerUrls } : {}) },
      });
      expect(res.status, res.text).to.equal(201);
      return res.body.collectionId as string;
    };
    const hook = (event: string, path = '/hook', extra: Record<string, unknown> = {}) => ({
      event,
      url: `${rx.url}${path}`,
      apiKey: 'receiver-key-1234',
      ...extra,
    });
    const item = async (collectionId: string, body: Record<string, unknown>) => {
      const res = await api('POST', `/memory/items?collectionId=${collectionId}`, { body });
      expect(res.status, res.text).to.equal(201);
      return res.body;
    };
    const deliveries = async (collectionId: string, query = '') =>
      (await api('GET', `/v1/collections/${collectionId}/deliveries?limit=200${query}`)).body.items as any[];
    const settled = async (collectionId: string, n: number) => {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const items = await deliveries(collectionId);
        if (items.length >= n && items.every((d) => d.status !== 'pending')) return items;
        if (Date.now() > deadline)
          throw new Error(`deliveries not settled: ${JSON.stringify(items.map((d) => d.status))}`);
        await sleep(50);
      }
    };

    before(async () => {
      server = await startTestServer(kind, { OUTBOUND_ALLOWLIST: '127.0.0.0/8' });
      org = await createTestOrg(server, 'Org A');
      other = await createTestOrg(server, 'Org B');
      rx = await startReceiver();
    });
    after(async () => {
      await rx.close();
      await server.close();
    });
    beforeEach(() => {
      rx.calls.length = 0;
      rx.status = 202;
    });
    afterEach(() => server.assertResponsesValid());

    it('op:createCollection op:getCollection op:listCollections op:updateCollection op:deleteCollection — versions, filters, organisation scope', async () => {
      const created = await api('POST', '/v1/collections', {
        body: { name: 'Customers', type: 'structured_datastore', description: 'One per customer' },
      });
      expect(created.status, created.text).to.equal(201);
      expect(created.headers.get('etag')).to.equal('"1"');
      const id = created.body.collectionId as string;
      expect(id).to.match(/^col_[0-9a-f]{32}$/);
      expect(created.body).to.deep.include({
        name: 'Customers',
        type: 'structured_datastore',
        description: 'One per customer',
        triggerUrls: [],
        itemCount: 0,
        version: 1,
      });
      const vault = await newCollection('vault');
      const list = await api('GET', '/v1/collections?type=vault');
      expect(list.body.items.map((c: any) => c.collectionId)).to.deep.equal([vault]);
      expect((await api('GET', `/v1/collections/${id}`, { token: other.token })).status).to.equal(404);
      expect((await api('GET', '/v1/collections', { token: other.token })).body.items).to.deep.equal([]);
      expect((await api('PATCH', `/v1/collections/${id}`, { body: { name: 'X' } })).status).to.equal(428);
      expect(
        (await api('PATCH', `/v1/collections/${id}`, { body: { name: 'X' }, headers: { 'if-match': '"7"' } })).status,
      ).to.equal(412);
      const renamed = await api('PATCH', `/v1/collections/${id}`, {
        body: { name: 'Clients' },
        headers: { 'if-match': '"1"' },
      });
      expect([renamed.status, renamed.body.name, renamed.headers.get('etag')]).to.deep.equal([200, 'Clients', '"2"']);
      expect((await api('POST', '/v1/collections', { body: { name: 'x', type: 'spreadsheet' } })).status).to.equal(400);
      expect((await api('DELETE', `/v1/collections/${id}`, { token: other.token })).status).to.equal(404);
      expect((await api('DELETE', `/v1/collections/${id}`, { headers: { 'if-match': '"1"' } })).status).to.equal(412);
      expect((await api('DELETE', `/v1/collections/${id}`)).status).to.equal(204);
      expect((await api('GET', `/v1/collections/${id}`)).status).to.equal(404);
      expect((await api('GET', '/v1/collections')).status).to.equal(200);
    });

    it('op:updateDataCollection — replaces the collection-level list; keys never returned; bad entries stored nowhere', async () => {
      const id = await newCollection('structured_datastore');
      const set = await api('PATCH', `/datacollection/${id}`, {
        body: { triggerUrls: [hook('onCreate'), hook('onEdit', '/e', { triggerLevel: 'collection' })] },
      });
      expect(set.status, set.text).to.equal(200);
      expect(set.body.triggerUrls).to.deep.equal([
        { event: 'onCreate', url: `${rx.url}/hook`, triggerLevel: 'collection', apiKeyLast4: '1234' },
        { event: 'onEdit', url: `${rx.url}/e`, triggerLevel: 'collection', apiKeyLast4: '1234' },
      ]);
      expect(set.text).to.not.include('receiver-key');
      const bad = async (entry: unknown, code: string) => {
        const res = await api('PATCH', `/datacollection/${id}`, { body: { triggerUrls: [entry] } });
        expect([res.status, res.body.error], JSON.stringify(entry)).to.deep.equal([400, code]);
      };
      await bad(hook('onEdit', '/x', { triggerLevel: 'item' }), 'invalid_trigger_url');
      await bad(
        { event: 'onEdit', url: 'http://169.254.169.254/latest/meta-data', apiKey: 'k' },
        'invalid_trigger_url',
      );
      await bad({ event: 'onEdit', url: 'http://10.1.2.3/hook', apiKey: 'k' }, 'invalid_trigger_url');
      await bad({ event: 'onEdit', url: 'http://user:pw@example.com/hook', apiKey: 'k' }, 'invalid_trigger_url');
      await bad({ event: 'onEdit', url: 'ftp://example.com/hook', apiKey: 'k' }, 'invalid_request');
      await bad({ event: 'onUpdate', url: 'https://example.com/hook', apiKey: 'k' }, 'invalid_request');
      await bad({ event: 'onEdit', url: 'https://example.com/hook' }, 'invalid_request');
      const after = await api('GET', `/v1/collections/${id}`);
      expect(after.body.triggerUrls).to.have.length(2);
      expect(
        (await api('PATCH', '/datacollection/col_00000000000000000000000000000000', { body: { triggerUrls: [] } })).body
          .error,
      ).to.equal('collection_not_found');
      expect(
        (await api('PATCH', `/datacollection/${id}`, { token: other.token, body: { triggerUrls: [] } })).status,
      ).to.equal(404);
      const cleared = await api('PATCH', `/datacollection/${id}`, { body: { triggerUrls: [] } });
      expect(cleared.body.triggerUrls).to.deep.equal([]);
    });

    it('op:createMemoryItem — onCreate reaches the collection-level URL with X-API-KEY and a schema-valid payload', async () => {
      const id = await newCollection('structured_datastore', [hook('onCreate')]);
      const created = await item(id, {
        key: 'lead-1',
        content: { email: 'ada@example.com' },
        metadata: { source: 'test' },
        sortField: '2025-01-01',
      });
      expect(created).to.deep.include({
        collectionId: id,
        collectionType: 'datastore',
        key: 'lead-1',
        sortField: '2025-01-01',
        content: { email: 'ada@example.com' },
        metadata: { source: 'test' },
        triggerUrls: [],
      });
      const [got] = await rx.waitFor(1);
      expect(got!.headers['x-api-key']).to.equal('receiver-key-1234');
      expect(got!.headers['content-type']).to.equal('application/json');
      expect(payloadErrors('datastore', got!.body)).to.deep.equal([]);
      expect(got!.body).to.deep.include({
        event: 'onCreate',
        itemId: created.id,
        collectionId: id,
        collectionType: 'datastore',
        key: 'lead-1',
        content: { email: 'ada@example.com' },
        triggerLevel: 'collection',
      });
      const log = await settled(id, 1);
      expect(log[0]).to.deep.include({
        eventId: got!.body.eventId,
        event: 'onCreate',
        itemId: created.id,
        status: 'sent',
        httpStatus: 202,
        runId: 'run_received_1',
        error: null,
      });
      expect(log[0].durationMs).to.be.a('number');
    });

    it('op:createMemoryItem — bad input answers a clear error and stores nothing', async () => {
      const id = await newCollection('structured_datastore');
      const files = await newCollection('filestore');
      const expectError = async (path: string, body: unknown, status: number, code: string) => {
        const res = await api('POST', path, { body });
        expect([res.status, res.body.error], `${path} ${JSON.stringify(body)}`).to.deep.equal([status, code]);
      };
      await expectError(`/memory/items?collectionId=${id}`, { key: 'a', content: 'text' }, 400, 'invalid_content');
      await expectError(
        `/memory/items?collectionId=${id}`,
        { key: 'a', content: { a: 1 }, triggerUrls: [hook('onCreate')] },
        400,
        'invalid_trigger_url',
      );
      await expectError(
        `/memory/items?collectionId=${id}`,
        { key: 'a', content: { a: 1 }, triggerUrls: [{ event: 'onEdit', url: 'http://192.168.1.1/', apiKey: 'k' }] },
        400,
        'invalid_trigger_url',
      );
      await expectError(
        `/memory/items?collectionId=${id}`,
        { key: 'a', content: { a: 1 }, extra: true },
        400,
        'invalid_request',
      );
      await expectError(`/memory/items?collectionId=${id}`, { content: { a: 1 } }, 400, 'invalid_request');
      await expectError(
        `/memory/items?collectionId=${files}`,
        { key: 'a', content: { a: 1 } },
        400,
        'collection_type_mismatch',
      );
      await expectError(
        '/memory/items?collectionId=col_00000000000000000000000000000000',
        { key: 'a', content: { a: 1 } },
        404,
        'collection_not_found',
      );
      const foreign = await api('POST', `/memory/items?collectionId=${id}`, {
        token: other.token,
        body: { key: 'a', content: { a: 1 } },
      });
      expect([foreign.status, foreign.body.error]).to.deep.equal([404, 'collection_not_found']);
      expect(
        (await api('POST', `/memory/items?collectionId=${id}`, { body: { key: 'a', content: { a: 1 } } })).status,
      ).to.equal(201);
      await expectError(`/memory/items?collectionId=${id}`, { key: 'a', content: { a: 2 } }, 409, 'item_key_conflict');
      const oversize = await api('POST', `/memory/items?collectionId=${id}`, {
        body: { key: 'big', content: { blob: 'x'.repeat(17 * 1024 * 1024) } },
      });
      expect([oversize.status, oversize.body.error]).to.deep.equal([413, 'payload_too_large']);
      expect((await api('GET', `/v1/collections/${id}/items`)).body.items.map((i: any) => i.key)).to.deep.equal(['a']);
      expect(await deliveries(id)).to.deep.equal([]);
    });

    it('op:updateMemoryItem op:replaceMemoryItem — merge and replace; onEdit with `changed`; item-level URLs; triggerChanges false and no-op edits stay silent', async () => {
      const id = await newCollection('structured_datastore', [hook('onEdit', '/col')]);
      const created = await item(id, {
        key: 'k1',
        content: { a: 1, b: 2 },
        metadata: { m: 1 },
        triggerUrls: [hook('onEdit', '/item')],
      });
      expect(created.triggerUrls).to.deep.equal([
        { event: 'onEdit', url: `${rx.url}/item`, triggerLevel: 'item', apiKeyLast4: '1234' },
      ]);
      const merged = await api('PATCH', `/memory/items/${created.id}?collectionId=${id}`, {
        body: { content: { b: null, c: 3 }, metadata: { n: 2 } },
      });
      expect(merged.status, merged.text).to.equal(200);
      expect([merged.body.content, merged.body.metadata]).to.deep.equal([
        { a: 1, c: 3 },
        { m: 1, n: 2 },
      ]);
      const calls = await rx.waitFor(2);
      for (const c of calls) {
        expect(payloadErrors('datastore', c.body)).to.deep.equal([]);
        expect(c.body.changed).to.deep.equal({ content: { a: 1, b: 2 }, metadata: { m: 1 } });
        expect(c.body.content).to.deep.equal({ a: 1, c: 3 });
      }
      expect(calls.map((c) => [c.path, c.body.triggerLevel]).sort()).to.deep.equal([
        ['/col', 'collection'],
        ['/item', 'item'],
      ]);
      expect(new Set(calls.map((c) => c.body.eventId)).size).to.equal(2);
      await settled(id, 2);
      rx.calls.length = 0;
      const silent = await api('PUT', `/memory/items/${created.id}?collectionId=${id}`, {
        body: { content: { z: 1 }, triggerChanges: false },
      });
      expect([silent.body.content, silent.body.metadata]).to.deep.equal([{ z: 1 }, {}]);
      const same = await api('PUT', `/memory/items/${created.id}?collectionId=${id}`, { body: { content: { z: 1 } } });
      expect(same.status).to.equal(200);
      await sleep(300);
      expect(rx.calls).to.deep.equal([]);
      expect(await deliveries(id)).to.have.length(2);
      const missing = await api('PATCH', `/memory/items/item_00000000000000000000000000000000?collectionId=${id}`, {
        body: { content: {} },
      });
      expect([missing.status, missing.body.error]).to.deep.equal([404, 'item_not_found']);
      const wrongShape = await api('PATCH', `/memory/items/${created.id}?collectionId=${id}`, {
        body: { content: 'text' },
      });
      expect([wrongShape.status, wrongShape.body.error]).to.deep.equal([400, 'invalid_content']);
    });

    it('op:deleteMemoryItem — onDelete to collection- and item-level URLs, with the deleted content', async () => {
      const id = await newCollection('structured_datastore', [hook('onDelete', '/col')]);
      const created = await item(id, { key: 'gone', content: { v: 1 }, triggerUrls: [hook('onDelete', '/item')] });
      expect((await api('DELETE', `/memory/items/${created.id}?collectionId=${id}`)).status).to.equal(204);
      const calls = await rx.waitFor(2);
      expect(calls.map((c) => c.body.event)).to.deep.equal(['onDelete', 'onDelete']);
      for (const c of calls) expect(payloadErrors('datastore', c.body)).to.deep.equal([]);
      expect(calls[0]!.body.content).to.deep.equal({ v: 1 });
      expect((await api('DELETE', `/memory/items/${created.id}?collectionId=${id}`)).status).to.equal(404);
      expect((await api('DELETE', `/memory/items/${created.id}`)).status).to.equal(400);
    });

    it('onEdit limit: 200 concurrent edits of one item → exactly 2 delivered, the rest recorded as dropped', async () => {
      const id = await newCollection('structured_datastore', [hook('onEdit')]);
      const created = await item(id, { key: 'hot', content: { n: 0 } });
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          api('PATCH', `/memory/items/${created.id}?collectionId=${id}`, { body: { content: { n: i + 1 } } }),
        ),
      );
      expect(
        results.every((r) => r.status === 200),
        results.find((r) => r.status !== 200)?.text,
      ).to.equal(true);
      const log = await settled(id, 200);
      const byStatus = (s: string) => log.filter((d) => d.status === s).length;
      expect([byStatus('sent'), byStatus('dropped'), log.length]).to.deep.equal([2, 198, 200]);
      expect(log.find((d) => d.status === 'dropped').error).to.match(/dropped, not queued/);
      await sleep(200);
      expect(rx.calls).to.have.length(2);
      const dropped = await api('GET', `/v1/collections/${id}/deliveries?status=dropped&limit=5`);
      expect(dropped.body.items).to.have.length(5);
      expect(dropped.body.nextCursor).to.be.a('string');
      // Another item has its own window.
      const second = await item(id, { key: 'cold', content: { n: 0 } });
      await api('PATCH', `/memory/items/${second.id}?collectionId=${id}`, { body: { content: { n: 1 } } });
      await rx.waitFor(3);
    });

    it('vaults: content encrypted at rest, never returned or sent in plain text; collection-level URLs only', async () => {
      const id = await newCollection('vault', [hook('onCreate')]);
      const created = await item(id, { key: 'stripe', content: { token: 'sk_live_supersecret' } });
      expect(created.collectionType).to.equal('vault');
      expect(created.content).to.deep.equal({ token: '********' });
      const [got] = await rx.waitFor(1);
      expect(payloadErrors('datastore', got!.body)).to.deep.equal([]);
      expect(got!.body).to.deep.include({ collectionType: 'vault', isSecret: true, content: { token: '********' } });
      const row = await server.app.services.db('collection_items').where({ id: created.id }).first();
      expect(JSON.stringify(row)).to.not.include('supersecret');
      const listed = await api('GET', `/v1/collections/${id}/items`);
      expect(listed.body.items[0]).to.deep.include({ key: 'stripe', content: null, isSecret: true });
      expect(listed.text).to.not.include('supersecret');
      const itemLevel = await api('POST', `/memory/items?collectionId=${id}`, {
        body: { key: 'x', content: {}, triggerUrls: [hook('onEdit')] },
      });
      expect([itemLevel.status, itemLevel.body.error]).to.deep.equal([400, 'invalid_trigger_url']);
    });

    it('unstructured datastores: text content, delivered as {text}', async () => {
      const id = await newCollection('unstructured_datastore', [hook('onCreate')]);
      const created = await item(id, { key: 'note', content: 'Call Ada on Monday' });
      expect(created.content).to.equal('Call Ada on Monday');
      const [got] = await rx.waitFor(1);
      expect(payloadErrors('datastore', got!.body)).to.deep.equal([]);
      expect(got!.body.content).to.deep.equal({ text: 'Call Ada on Monday' });
      const wrong = await api('POST', `/memory/items?collectionId=${id}`, { body: { key: 'obj', content: { a: 1 } } });
      expect([wrong.status, wrong.body.error]).to.deep.equal([400, 'invalid_content']);
    });

    it('op:uploadFilestorageItem op:deleteFilestorageItem op:listCollectionItems — files, signed URLs, onCreate and onDelete payloads', async () => {
      const id = await newCollection('filestore', [hook('onCreate'), hook('onDelete')]);
      const form = new FormData();
      form.append('file', new Blob(['hello, file'], { type: 'text/plain' }), '../contract.txt');
      form.append('metadata', JSON.stringify({ customer: 'c_42' }));
      form.append('triggerUrls', JSON.stringify([hook('onDelete', '/file')]));
      const res = await fetch(`${server.baseUrl}/filestorage/items/upload?collectionId=${id}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${org.token}` },
        body: form,
      });
      const body = (await res.json()) as any;
      expect(res.status, JSON.stringify(body)).to.equal(201);
      expect(body).to.deep.include({
        collectionId: id,
        filename: 'contract.txt',
        fileSize: 11,
        mimeType: 'text/plain',
        metadata: { customer: 'c_42' },
        isPublic: false,
      });
      expect(body.filepath).to.equal(`${id}/${body.id}/contract.txt`);
      expect(body.triggerUrls).to.deep.equal([
        { event: 'onDelete', url: `${rx.url}/file`, triggerLevel: 'item', apiKeyLast4: '1234' },
      ]);
      const download = await fetch(body.signedUrl);
      expect([download.status, await download.text()]).to.deep.equal([200, 'hello, file']);
      const [created] = await rx.waitFor(1);
      expect(payloadErrors('filestorage', created!.body)).to.deep.equal([]);
      expect(created!.body).to.deep.include({
        event: 'onCreate',
        itemId: body.id,
        collectionType: 'filestorage',
        filename: 'contract.txt',
        fileSize: 11,
        triggerLevel: 'collection',
      });
      expect(await (await fetch(created!.body.signedUrl)).text()).to.equal('hello, file');
      const listed = await api('GET', `/v1/collections/${id}/items`);
      expect(listed.body.items[0]).to.deep.include({ itemId: body.id, filename: 'contract.txt', fileSize: 11 });
      expect((await api('DELETE', `/filestorage/items/${body.id}?collectionId=${id}`)).status).to.equal(204);
      const calls = await rx.waitFor(3);
      const deletes = calls.filter((c) => c.body.event === 'onDelete');
      expect(deletes.map((c) => c.body.triggerLevel).sort()).to.deep.equal(['collection', 'file']);
      for (const c of deletes) expect(payloadErrors('filestorage', c.body)).to.deep.equal([]);
      expect((await fetch(body.signedUrl)).status).to.equal(404);
      expect((await api('DELETE', `/filestorage/items/${body.id}?collectionId=${id}`)).status).to.equal(404);
    });

    it('op:uploadFilestorageItem — bad uploads store nothing', async () => {
      const id = await newCollection('filestore');
      const datastore = await newCollection('structured_datastore');
      const upload = async (collectionId: string, form: FormData) => {
        const res = await fetch(`${server.baseUrl}/filestorage/items/upload?collectionId=${collectionId}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${org.token}` },
          body: form,
        });
        return { status: res.status, body: (await res.json()) as any };
      };
      const withFile = () => {
        const f = new FormData();
        f.append('file', new Blob(['x']), 'a.txt');
        return f;
      };
      const noFile = new FormData();
      noFile.append('metadata', '{}');
      expect(await upload(id, noFile)).to.deep.include({ status: 400 });
      const badJson = withFile();
      badJson.append('metadata', '{nope');
      expect((await upload(id, badJson)).body.error).to.equal('invalid_request');
      const badUrl = withFile();
      badUrl.append('triggerUrls', JSON.stringify([hook('onCreate')]));
      expect((await upload(id, badUrl)).body.error).to.equal('invalid_trigger_url');
      expect((await upload(datastore, withFile())).body.error).to.equal('collection_type_mismatch');
      expect((await api('GET', `/v1/collections/${id}/items`)).body.items).to.deep.equal([]);
      const orphans = await server.app.services
        .db('files')
        .where({ org_id: org.orgId, kind: 'collection' })
        .count({ n: '*' });
      expect(Number(orphans[0]!.n)).to.equal(0);
    });

    it('op:testDataCollectionTrigger op:testMemoryTrigger — synchronous calls with their outcome', async () => {
      const id = await newCollection('structured_datastore', [hook('onEdit', '/ok')]);
      const test = await api('POST', `/datacollection/${id}/triggers/test`, {
        body: { event: 'onEdit', testData: { key: 'probe' } },
      });
      expect(test.status, test.text).to.equal(200);
      expect(test.body.results).to.deep.equal([
        { url: `${rx.url}/ok`, status: 'success', httpStatus: 202, runId: 'run_received_1' },
      ]);
      expect(rx.calls[0]!.body).to.deep.include({ event: 'onEdit', key: 'probe' });
      const none = await api('POST', `/datacollection/${id}/triggers/test`, {
        body: { event: 'onDelete', testData: {} },
      });
      expect(none.body).to.deep.equal({ message: 'No trigger URL is configured for onDelete.', results: [] });
      rx.status = 401;
      const one = await api('POST', `/memory/test-trigger?collectionId=${id}`, {
        body: { url: `${rx.url}/t`, apiKey: 'k', dataStoreId: id, data: { email: 'a@b.c' } },
      });
      expect(one.status, one.text).to.equal(200);
      expect(one.body.log).to.deep.include({ status: 'failed', event: 'onTest', runId: 'run_received_2' });
      expect(one.body.log.executionTime).to.be.a('number');
      expect(rx.calls[1]!.body).to.deep.include({ event: 'onTest', content: { email: 'a@b.c' } });
      expect(payloadErrors('datastore', rx.calls[1]!.body)).to.deep.equal([]);
      const mismatch = await api('POST', `/memory/test-trigger?collectionId=${id}`, {
        body: { url: `${rx.url}/t`, apiKey: 'k', dataStoreId: 'col_other', data: {} },
      });
      expect([mismatch.status, mismatch.body.error]).to.deep.equal([400, 'collection_mismatch']);
      const unreachable = await api('POST', `/memory/test-trigger?collectionId=${id}`, {
        body: { url: 'http://127.0.0.1:1/none', apiKey: 'k', dataStoreId: id, data: {} },
      });
      expect(unreachable.body.log).to.deep.include({ status: 'failed', runId: null });
    });

    it('op:listCollectionDeliveries — failures recorded, not retried; filters; another organisation sees nothing', async () => {
      rx.status = 500;
      const id = await newCollection('structured_datastore', [hook('onCreate')]);
      await item(id, { key: 'f', content: {} });
      const [failed] = await settled(id, 1);
      expect(failed).to.deep.include({ status: 'failed', httpStatus: 500, error: 'The trigger URL answered 500' });
      await sleep(300);
      expect(rx.calls).to.have.length(1);
      expect((await api('GET', `/v1/collections/${id}/deliveries?status=sent`)).body.items).to.deep.equal([]);
      expect((await api('GET', `/v1/collections/${id}/deliveries?event=onCreate`)).body.items).to.have.length(1);
      expect((await api('GET', `/v1/collections/${id}/deliveries`, { token: other.token })).status).to.equal(404);
      expect((await api('GET', `/v1/collections/${id}/deliveries?cursor=bogus`)).status).to.equal(400);
      // The log keeps finished entries 7 days; pending ones stay until delivered.
      const { db } = server.app.services;
      await db('event_outbox').where({ collection_id: id }).update({ created_at: '2000-01-01T00:00:00.000Z' });
      await db('event_outbox').insert({
        ...(await db('event_outbox').where({ collection_id: id }).first()),
        id: 'evt_00000000000000000000000000000001',
        status: 'pending',
        claimed_until: '2999-01-01T00:00:00.000Z',
      });
      expect(await pruneDeliveries(db, new Date(Date.now() - 7 * 86_400_000).toISOString())).to.equal(1);
      expect((await deliveries(id)).map((d) => d.status)).to.deep.equal(['pending']);
      await db('event_outbox').where({ collection_id: id }).delete();
    });
  });
}
