import { expect } from 'chai';
import {
  createConnection,
  decryptConnectionSecret,
  deleteConnection,
  findConnectionRow,
  getConnection,
  listConnections,
  listUserConnections,
  updateConnection,
} from '../../../src/connections/index.js';
import { connectionHandlers as h } from '../../../src/connections/handlers/index.js';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import { call, context, expectAppError, ORG_A, ORG_B, request, seedOrgs, testConfig } from '../engine/fixtures.js';

const kinds = await storeKinds();
const TOKEN = 'ya29.super-secret-token-value';

for (const kind of kinds) {
  describe(`connections service (${kind})`, () => {
    let store: TestStore;
    const config = testConfig();
    beforeEach(async () => {
      store = await createTestStore(kind);
      await seedOrgs(store.db);
    });
    afterEach(async () => store.close());

    it('encrypts the secret at rest and never returns it', async () => {
      const c = await createConnection(
        store.db,
        ORG_A,
        { name: 'Sales Gmail', service_key: 'gmail', secret: TOKEN, metadata: { a: 1 } },
        config,
      );
      expect(c.id).to.match(/^pcid_[0-9a-f]{32}$/);
      expect(c).to.deep.include({
        name: 'Sales Gmail',
        service_key: 'gmail',
        status: 'connected',
        metadata: { a: 1 },
        hasSecret: true,
        version: 1,
      });
      expect(Object.keys(c)).to.not.include('secret');
      expect(JSON.stringify(c)).to.not.include(TOKEN);
      const raw = (await store.db('connections').where({ id: c.id }).first()) as Record<string, unknown>;
      const rawText = JSON.stringify(raw);
      expect(rawText).to.not.include(TOKEN);
      expect(rawText).to.not.include(Buffer.from(TOKEN).toString('base64'));
      expect(String(raw.secret_enc)).to.match(/^v1\./);
      expect(decryptConnectionSecret(config, raw as never)).to.equal(TOKEN);
      expect(JSON.stringify(await getConnection(store.db, ORG_A, c.id))).to.not.include(TOKEN);
      expect(JSON.stringify(await listConnections(store.db, ORG_A))).to.not.include(TOKEN);
      // A different key cannot open it (AES-GCM authentication).
      expect(() => decryptConnectionSecret(testConfig(), raw as never)).to.throw();
    });

    it('keeps object secrets and replaces a secret on update', async () => {
      const c = await createConnection(
        store.db,
        ORG_A,
        { name: 'Hub', service_key: 'hubspot', secret: { username: 'u', password: 'p@ss' } },
        config,
      );
      expect(decryptConnectionSecret(config, (await findConnectionRow(store.db, ORG_A, c.id))!)).to.deep.equal({
        username: 'u',
        password: 'p@ss',
      });
      const u = await updateConnection(store.db, ORG_A, c.id, {
        expectedVersion: 1,
        patch: { secret: 'rotated' },
        config,
      });
      expect(u).to.include({ version: 2, hasSecret: true });
      expect(decryptConnectionSecret(config, (await findConnectionRow(store.db, ORG_A, c.id))!)).to.equal('rotated');
      await expectAppError(
        createConnection(store.db, ORG_A, { name: 'x', service_key: 'x', secret: '' }, config),
        'invalid_request',
        400,
      );
      await expectAppError(
        createConnection(store.db, ORG_A, { name: 'x', service_key: 'x', secret: [1] as never }, config),
        'invalid_request',
        400,
      );
      await expectAppError(
        createConnection(store.db, ORG_A, { name: 'x', service_key: 'no spaces', secret: 's' }, config),
        'invalid_request',
        400,
      );
    });

    it('filters by status and service key', async () => {
      const mk = (name: string, service_key: string, status: 'connected' | 'error' | 'disconnected') =>
        createConnection(store.db, ORG_A, { name, service_key, status, secret: 's' }, config);
      const a = await mk('A', 'gmail', 'connected');
      const b = await mk('B', 'gmail', 'error');
      const c = await mk('C', 'slack', 'disconnected');
      const ids = async (f: Parameters<typeof listConnections>[2]) =>
        (await listConnections(store.db, ORG_A, f)).items.map((x) => x.id);
      expect(await ids({})).to.deep.equal([a.id, b.id, c.id]);
      expect(await ids({ statuses: ['error', 'disconnected'] })).to.deep.equal([b.id, c.id]);
      expect(await ids({ serviceKey: 'gmail', statuses: ['connected'] })).to.deep.equal([a.id]);
      expect(await ids({ serviceKey: 'slack' })).to.deep.equal([c.id]);
    });

    it('lists user connections with exactly the spec fields, sorted by name', async () => {
      const z = await createConnection(
        store.db,
        ORG_A,
        { name: 'zeta', service_key: 'z', secret: 's', metadata: { m: 1 } },
        config,
      );
      const a = await createConnection(
        store.db,
        ORG_A,
        { name: 'Alpha', service_key: 'a', status: 'error', secret: 's' },
        config,
      );
      await createConnection(store.db, ORG_B, { name: 'other org', service_key: 'a', secret: 's' }, config);
      const all = await listUserConnections(store.db, ORG_A, ['connected', 'error', 'disconnected']);
      expect(all).to.deep.equal([
        { id: a.id, name: 'Alpha', service_key: 'a', status: 'error' },
        { id: z.id, name: 'zeta', service_key: 'z', status: 'connected' },
      ]);
      expect(await listUserConnections(store.db, ORG_A, ['connected'])).to.deep.equal([all[1]]);
      expect(await listUserConnections(store.db, ORG_A, ['disconnected'])).to.deep.equal([]);
    });

    it('updates with optimistic locking and deletes', async () => {
      const c = await createConnection(store.db, ORG_A, { name: 'n', service_key: 'k', secret: 's' }, config);
      const u = await updateConnection(store.db, ORG_A, c.id, {
        expectedVersion: 1,
        patch: { status: 'error', name: 'renamed', metadata: { x: true } },
        config,
      });
      expect(u).to.deep.include({ status: 'error', name: 'renamed', metadata: { x: true }, version: 2 });
      const err = await expectAppError(
        updateConnection(store.db, ORG_A, c.id, { expectedVersion: 1, patch: { name: 'late' }, config }),
        'version_conflict',
        412,
      );
      expect(err.details).to.deep.equal({ currentVersion: 2 });
      await expectAppError(
        updateConnection(store.db, ORG_A, c.id, { expectedVersion: 2, patch: {}, config }),
        'invalid_request',
        400,
      );
      await expectAppError(
        updateConnection(store.db, ORG_A, c.id, { expectedVersion: 2, patch: { status: 'active' as never }, config }),
        'invalid_request',
        400,
      );
      await deleteConnection(store.db, ORG_A, c.id, 2);
      await expectAppError(getConnection(store.db, ORG_A, c.id), 'not_found', 404);
    });

    it('isolates organisations', async () => {
      const c = await createConnection(store.db, ORG_A, { name: 'n', service_key: 'k', secret: 's' }, config);
      await expectAppError(getConnection(store.db, ORG_B, c.id), 'not_found', 404);
      await expectAppError(
        updateConnection(store.db, ORG_B, c.id, { expectedVersion: 1, patch: { name: 'x' }, config }),
        'not_found',
        404,
      );
      await expectAppError(deleteConnection(store.db, ORG_B, c.id), 'not_found', 404);
      expect(await findConnectionRow(store.db, ORG_B, c.id)).to.equal(undefined);
      expect((await listConnections(store.db, ORG_B)).items).to.deep.equal([]);
      expect(await listUserConnections(store.db, ORG_B, ['connected'])).to.deep.equal([]);
      expect(await getConnection(store.db, ORG_A, c.id)).to.include({ name: 'n', version: 1 });
    });
  });

  describe(`connection handlers (${kind})`, () => {
    let store: TestStore;
    beforeEach(async () => {
      store = await createTestStore(kind);
      await seedOrgs(store.db);
    });
    afterEach(async () => store.close());

    it('create, get, update (If-Match), list by statuses, delete', async () => {
      const ctx = context(store.db, ORG_A);
      const created = await call(
        'createConnection',
        h.createConnection,
        request({ body: { name: 'Gmail', service_key: 'gmail', secret: { token: TOKEN } } }),
        ctx,
      );
      expect(created.status).to.equal(201);
      expect(created.headers).to.deep.equal({ ETag: '"1"' });
      expect(JSON.stringify(created.body)).to.not.include(TOKEN);
      const id = (created.body as { id: string }).id;
      const params = { connectionId: id };
      expect((await call('getConnection', h.getConnection, request({ params }), ctx)).body).to.deep.equal(created.body);
      expect(
        (await call('updateConnection', h.updateConnection, request({ params, body: { status: 'error' } }), ctx))
          .status,
      ).to.equal(428);
      const upd = await call(
        'updateConnection',
        h.updateConnection,
        request({ params, body: { status: 'error' }, headers: { 'if-match': '"1"' } }),
        ctx,
      );
      expect(upd.headers).to.deep.equal({ ETag: '"2"' });
      const errored = await call('listConnections', h.listConnections, request({ query: { statuses: 'error' } }), ctx);
      expect((errored.body as { items: { id: string }[] }).items.map((c) => c.id)).to.deep.equal([id]);
      const connected = await call(
        'listConnections',
        h.listConnections,
        request({ query: { statuses: 'connected' } }),
        ctx,
      );
      expect(connected.body).to.deep.equal({ items: [], nextCursor: null });
      const bad = await call(
        'listConnections',
        h.listConnections,
        request({ query: { statuses: 'connected,connected' } }),
        ctx,
      );
      expect((bad.body as { error: string }).error).to.equal('invalid_statuses');
      expect(
        (await call('getConnection', h.getConnection, request({ params }), context(store.db, ORG_B))).status,
      ).to.equal(404);
      expect(
        (await call('deleteConnection', h.deleteConnection, request({ params, headers: { 'if-match': '"1"' } }), ctx))
          .status,
      ).to.equal(412);
      expect((await call('deleteConnection', h.deleteConnection, request({ params }), ctx)).status).to.equal(204);
    });
  });
}
