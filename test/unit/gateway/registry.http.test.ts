/** Application server operations over real HTTP (responses checked against the OpenAPI bundle). */
import { expect } from 'chai';
import { call, createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { storeKinds } from '../../helpers/store.js';

const kinds = await storeKinds();
const body = (path: string, extra: Record<string, unknown> = {}) => ({
  path,
  name: path,
  service_key: 'github',
  upstream: { type: 'mcp', url: 'https://mcp.example.com/github', transport: 'streamable-http' },
  auth: { scheme: 'header', headerName: 'X-Token' },
  ...extra,
});

for (const kind of kinds) {
  describe(`application servers over HTTP (${kind})`, () => {
    let server: TestServer;
    let org: TestOrg;
    let other: TestOrg;
    before(async () => {
      server = await startTestServer(kind);
      org = await createTestOrg(server, 'Org A');
      other = await createTestOrg(server, 'Org B');
    });
    after(async () => server.close());
    afterEach(() => server.assertResponsesValid());

    it('op:createAppServer op:getAppServer op:listAppServers — reserved path, duplicate, parent', async () => {
      const created = await call(server.baseUrl, 'POST', '/v1/servers', { token: org.token, body: body('github') });
      expect(created.status, created.text).to.equal(201);
      expect(created.body).to.deep.include({
        path: 'github',
        parentPath: null,
        version: 1,
        auth: { scheme: 'header', headerName: 'X-Token' },
      });
      const dup = await call(server.baseUrl, 'POST', '/v1/servers', { token: org.token, body: body('github') });
      expect([dup.status, dup.body.error]).to.deep.equal([409, 'conflict']);
      const reserved = await call(server.baseUrl, 'POST', '/v1/servers', {
        token: org.token,
        body: body('browser-automation'),
      });
      expect(reserved.status).to.equal(400);
      const orphan = await call(server.baseUrl, 'POST', '/v1/servers', {
        token: org.token,
        body: body('gh-issues', { parentPath: 'gitlab' }),
      });
      expect(orphan.status).to.equal(400);
      const child = await call(server.baseUrl, 'POST', '/v1/servers', {
        token: org.token,
        body: body('gh-issues', { parentPath: 'github' }),
      });
      expect(child.status, child.text).to.equal(201);
      const got = await call(server.baseUrl, 'GET', `/v1/servers/${created.body.serverId}`, { token: org.token });
      expect(got.body).to.deep.equal(created.body);
      const list = await call(server.baseUrl, 'GET', '/v1/servers', { token: org.token });
      expect(list.body.items.map((s: { path: string }) => s.path)).to.deep.equal(['github', 'gh-issues']);
      expect((await call(server.baseUrl, 'GET', '/v1/servers', { token: other.token })).body.items).to.deep.equal([]);
      expect(
        (await call(server.baseUrl, 'GET', `/v1/servers/${created.body.serverId}`, { token: other.token })).status,
      ).to.equal(404);
    });

    it('op:updateAppServer op:deleteAppServer — If-Match, children block deletion', async () => {
      const parent = (await call(server.baseUrl, 'POST', '/v1/servers', { token: other.token, body: body('jira') }))
        .body;
      const child = (
        await call(server.baseUrl, 'POST', '/v1/servers', {
          token: other.token,
          body: body('jira-sd', { parentPath: 'jira' }),
        })
      ).body;
      const path = `/v1/servers/${parent.serverId}`;
      expect(
        (await call(server.baseUrl, 'PATCH', path, { token: other.token, body: { name: 'Jira' } })).status,
      ).to.equal(428);
      const upd = await call(server.baseUrl, 'PATCH', path, {
        token: other.token,
        body: { name: 'Jira', description: null, auth: { scheme: 'none' } },
        headers: { 'if-match': '"1"' },
      });
      expect(upd.status, upd.text).to.equal(200);
      expect(upd.body).to.deep.include({ name: 'Jira', description: null, auth: { scheme: 'none' }, version: 2 });
      expect(
        (
          await call(server.baseUrl, 'PATCH', path, {
            token: other.token,
            body: { name: 'x' },
            headers: { 'if-match': '"1"' },
          })
        ).status,
      ).to.equal(412);
      const blocked = await call(server.baseUrl, 'DELETE', path, { token: other.token });
      expect([blocked.status, blocked.body.error]).to.deep.equal([409, 'conflict']);
      expect(
        (await call(server.baseUrl, 'DELETE', `/v1/servers/${child.serverId}`, { token: other.token })).status,
      ).to.equal(204);
      expect((await call(server.baseUrl, 'DELETE', path, { token: org.token })).status).to.equal(404);
      expect((await call(server.baseUrl, 'DELETE', path, { token: other.token })).status).to.equal(204);
    });
  });
}
