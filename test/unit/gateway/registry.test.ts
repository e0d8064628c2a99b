import { expect } from 'chai';
import {
  createAppServer,
  deleteAppServer,
  EMBEDDED_PATHS,
  findAppServerByPath,
  getAppServer,
  listAppServers,
  updateAppServer,
  type AppServerCreate,
} from '../../../src/gateway/index.js';
import { appServerHandlers as h } from '../../../src/gateway/handlers/index.js';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import { call, context, expectAppError, ORG_A, ORG_B, request, seedOrgs } from '../engine/fixtures.js';

const kinds = await storeKinds();

function server(path: string, extra: Partial<AppServerCreate> = {}): AppServerCreate {
  return {
    path,
    name: `Server ${path}`,
    service_key: 'github',
    upstream: { type: 'mcp', url: 'https://mcp.example.com/github', transport: 'streamable-http' },
    auth: { scheme: 'bearer' },
    ...extra,
  };
}

for (const kind of kinds) {
  describe(`application server registry (${kind})`, () => {
    let store: TestStore;
    beforeEach(async () => {
      store = await createTestStore(kind);
      await seedOrgs(store.db);
    });
    afterEach(async () => store.close());

    it('registers mcp and openapi upstreams', async () => {
      const s = await createAppServer(store.db, ORG_A, server('github', { description: 'GitHub tools' }));
      expect(s.serverId).to.match(/^srv_[0-9a-f]{32}$/);
      expect(s).to.deep.include({
        path: 'github',
        name: 'Server github',
        description: 'GitHub tools',
        service_key: 'github',
        parentPath: null,
        upstream: { type: 'mcp', url: 'https://mcp.example.com/github', transport: 'streamable-http' },
        auth: { scheme: 'bearer' },
        version: 1,
      });
      const doc = { openapi: '3.1.0', info: { title: 'Pets', version: '1' }, paths: {} };
      const o = await createAppServer(
        store.db,
        ORG_A,
        server('pets', {
          upstream: { type: 'openapi', baseUrl: 'https://pets.example.com', document: doc },
          auth: { scheme: 'header', headerName: 'X-Api-Token' },
        }),
      );
      expect(o.upstream).to.deep.equal({ type: 'openapi', baseUrl: 'https://pets.example.com', document: doc });
      expect(o.auth).to.deep.equal({ scheme: 'header', headerName: 'X-Api-Token' });
      expect(await getAppServer(store.db, ORG_A, o.serverId)).to.deep.equal(o);
      expect(await findAppServerByPath(store.db, ORG_A, 'pets')).to.deep.equal(o);
    });

    it('rejects embedded paths and malformed registrations with 400', async () => {
      expect(EMBEDDED_PATHS).to.deep.equal([
        'mcp',
        'svc-sidekick',
        'gateway',
        'agent-management',
        'browser-automation',
      ]);
      for (const p of EMBEDDED_PATHS) {
        const err = await expectAppError(createAppServer(store.db, ORG_A, server(p)), 'invalid_request', 400);
        expect(err.message).to.include('reserved');
      }
      for (const p of ['', 'GitHub', '-x', 'a/b', 'x'.repeat(64)]) {
        await expectAppError(createAppServer(store.db, ORG_A, server(p)), 'invalid_request', 400);
      }
      await expectAppError(
        createAppServer(store.db, ORG_A, server('a', { auth: { scheme: 'header' } })),
        'invalid_request',
        400,
      );
      await expectAppError(
        createAppServer(store.db, ORG_A, server('a', { auth: { scheme: 'bearer', headerName: 'X' } })),
        'invalid_request',
        400,
      );
      await expectAppError(
        createAppServer(store.db, ORG_A, server('a', { upstream: { type: 'mcp', url: 'ftp://x', transport: 'sse' } })),
        'invalid_request',
        400,
      );
      await expectAppError(
        createAppServer(
          store.db,
          ORG_A,
          server('a', {
            upstream: { type: 'openapi', baseUrl: 'https://x', document: { swagger: '2.0' } },
          }),
        ),
        'invalid_request',
        400,
      );
      expect((await listAppServers(store.db, ORG_A)).items).to.deep.equal([]);
      expect((await createAppServer(store.db, ORG_A, server('x'.repeat(63)))).path).to.have.length(63);
    });

    it('answers 409 for a duplicate path in the organisation, not across organisations', async () => {
      await createAppServer(store.db, ORG_A, server('github'));
      const err = await expectAppError(
        createAppServer(store.db, ORG_A, server('github', { name: 'again' })),
        'conflict',
        409,
      );
      expect(err.details).to.deep.equal({ field: 'path' });
      expect((await createAppServer(store.db, ORG_B, server('github'))).path).to.equal('github');
      const [r1, r2] = await Promise.allSettled([
        createAppServer(store.db, ORG_A, server('racy')),
        createAppServer(store.db, ORG_A, server('racy')),
      ]);
      const outcomes = [r1!.status, r2!.status].sort();
      expect(outcomes).to.deep.equal(['fulfilled', 'rejected']);
      const rejected = [r1, r2].find((r): r is PromiseRejectedResult => r!.status === 'rejected')!;
      expect((rejected.reason as { code: string }).code).to.equal('conflict');
    });

    it('requires parentPath to be an existing top-level server of the same organisation', async () => {
      await expectAppError(
        createAppServer(store.db, ORG_A, server('github-issues', { parentPath: 'github' })),
        'invalid_request',
        400,
      );
      await createAppServer(store.db, ORG_B, server('github'));
      await expectAppError(
        createAppServer(store.db, ORG_A, server('github-issues', { parentPath: 'github' })),
        'invalid_request',
        400,
      );
      const parent = await createAppServer(store.db, ORG_A, server('github'));
      const child = await createAppServer(store.db, ORG_A, server('github-issues', { parentPath: 'github' }));
      expect(child.parentPath).to.equal('github');
      await expectAppError(
        createAppServer(store.db, ORG_A, server('grandchild', { parentPath: 'github-issues' })),
        'invalid_request',
        400,
      );
      // A parent with children can neither be deleted nor renamed; the child can.
      await expectAppError(deleteAppServer(store.db, ORG_A, parent.serverId), 'conflict', 409);
      await expectAppError(
        updateAppServer(store.db, ORG_A, parent.serverId, { expectedVersion: 1, patch: { path: 'gh' } }),
        'conflict',
        409,
      );
      await expectAppError(
        updateAppServer(store.db, ORG_A, parent.serverId, { expectedVersion: 1, patch: { parentPath: 'other' } }),
        'invalid_request',
        400,
      );
      const moved = await updateAppServer(store.db, ORG_A, child.serverId, {
        expectedVersion: 1,
        patch: { parentPath: null, path: 'issues' },
      });
      expect(moved).to.include({ parentPath: null, path: 'issues', version: 2 });
      await deleteAppServer(store.db, ORG_A, parent.serverId);
      await expectAppError(getAppServer(store.db, ORG_A, parent.serverId), 'not_found', 404);
    });

    it('updates with optimistic locking; a taken path is a conflict', async () => {
      const a = await createAppServer(store.db, ORG_A, server('alpha'));
      await createAppServer(store.db, ORG_A, server('beta'));
      await expectAppError(
        updateAppServer(store.db, ORG_A, a.serverId, { expectedVersion: 1, patch: { path: 'beta' } }),
        'conflict',
        409,
      );
      await expectAppError(
        updateAppServer(store.db, ORG_A, a.serverId, { expectedVersion: 1, patch: { path: 'gateway' } }),
        'invalid_request',
        400,
      );
      const u = await updateAppServer(store.db, ORG_A, a.serverId, {
        expectedVersion: 1,
        patch: {
          name: 'Alpha',
          description: null,
          auth: { scheme: 'basic' },
          upstream: { type: 'mcp', url: 'http://127.0.0.1:9/mcp', transport: 'sse' },
        },
      });
      expect(u).to.deep.include({ name: 'Alpha', description: null, auth: { scheme: 'basic' }, version: 2 });
      expect(u.upstream).to.deep.equal({ type: 'mcp', url: 'http://127.0.0.1:9/mcp', transport: 'sse' });
      const err = await expectAppError(
        updateAppServer(store.db, ORG_A, a.serverId, { expectedVersion: 1, patch: { name: 'late' } }),
        'version_conflict',
        412,
      );
      expect(err.details).to.deep.equal({ currentVersion: 2 });
      await expectAppError(
        updateAppServer(store.db, ORG_A, a.serverId, { expectedVersion: 2, patch: {} }),
        'invalid_request',
        400,
      );
      await expectAppError(deleteAppServer(store.db, ORG_A, a.serverId, 1), 'version_conflict', 412);
    });

    it('isolates organisations', async () => {
      const s = await createAppServer(store.db, ORG_A, server('github'));
      await expectAppError(getAppServer(store.db, ORG_B, s.serverId), 'not_found', 404);
      await expectAppError(
        updateAppServer(store.db, ORG_B, s.serverId, { expectedVersion: 1, patch: { name: 'x' } }),
        'not_found',
        404,
      );
      await expectAppError(deleteAppServer(store.db, ORG_B, s.serverId), 'not_found', 404);
      expect(await findAppServerByPath(store.db, ORG_B, 'github')).to.equal(undefined);
      expect((await listAppServers(store.db, ORG_B)).items).to.deep.equal([]);
      expect(await getAppServer(store.db, ORG_A, s.serverId)).to.include({ name: 'Server github', version: 1 });
    });
  });

  describe(`application server handlers (${kind})`, () => {
    let store: TestStore;
    beforeEach(async () => {
      store = await createTestStore(kind);
      await seedOrgs(store.db);
    });
    afterEach(async () => store.close());

    it('create 201 / duplicate 409 / update with If-Match / list pages / delete 409 then 204', async () => {
      const ctx = context(store.db, ORG_A);
      const created = await call('createAppServer', h.createAppServer, request({ body: server('github') }), ctx);
      expect(created.status).to.equal(201);
      expect(created.headers).to.deep.equal({ ETag: '"1"' });
      const dup = await call('createAppServer', h.createAppServer, request({ body: server('github') }), ctx);
      expect(dup.status).to.equal(409);
      const reserved = await call('createAppServer', h.createAppServer, request({ body: server('mcp') }), ctx);
      expect(reserved.status).to.equal(400);
      const params = { serverId: (created.body as { serverId: string }).serverId };
      expect(
        (await call('updateAppServer', h.updateAppServer, request({ params, body: { name: 'n' } }), ctx)).status,
      ).to.equal(428);
      const upd = await call(
        'updateAppServer',
        h.updateAppServer,
        request({ params, body: { name: 'n' }, headers: { 'if-match': '"1"' } }),
        ctx,
      );
      expect(upd.status).to.equal(200);
      expect(upd.headers).to.deep.equal({ ETag: '"2"' });
      await call(
        'createAppServer',
        h.createAppServer,
        request({ body: server('child', { parentPath: 'github' }) }),
        ctx,
      );
      const page1 = await call('listAppServers', h.listAppServers, request({ query: { limit: 1 } }), ctx);
      const cursor = (page1.body as { nextCursor: string }).nextCursor;
      expect(cursor).to.be.a('string');
      const page2 = await call('listAppServers', h.listAppServers, request({ query: { limit: 1, cursor } }), ctx);
      expect((page2.body as { items: { path: string }[] }).items.map((s) => s.path)).to.deep.equal(['child']);
      expect((await call('deleteAppServer', h.deleteAppServer, request({ params }), ctx)).status).to.equal(409);
      const childId = (page2.body as { items: { serverId: string }[] }).items[0]!.serverId;
      expect(
        (await call('deleteAppServer', h.deleteAppServer, request({ params: { serverId: childId } }), ctx)).status,
      ).to.equal(204);
      expect(
        (await call('deleteAppServer', h.deleteAppServer, request({ params, headers: { 'if-match': '"2"' } }), ctx))
          .status,
      ).to.equal(204);
      expect(
        (await call('getAppServer', h.getAppServer, request({ params }), context(store.db, ORG_B))).status,
      ).to.equal(404);
    });
  });
}
