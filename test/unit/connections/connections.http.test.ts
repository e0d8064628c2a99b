/** Connection operations over real HTTP (responses checked against the OpenAPI bundle). */
import { expect } from 'chai';
import { call, createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { storeKinds } from '../../helpers/store.js';

const kinds = await storeKinds();
const SECRET = 'xoxb-very-secret-token';

for (const kind of kinds) {
  describe(`connections over HTTP (${kind})`, () => {
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

    it('op:createConnection op:getConnection op:updateConnection op:listConnections op:deleteConnection', async () => {
      const created = await call(server.baseUrl, 'POST', '/v1/connections', {
        token: org.token,
        body: { name: 'Slack', service_key: 'slack', secret: SECRET, metadata: { team: 'T1' } },
      });
      expect(created.status, created.text).to.equal(201);
      expect(created.text).to.not.include(SECRET);
      expect(created.body).to.deep.include({ service_key: 'slack', status: 'connected', hasSecret: true, version: 1 });
      const path = `/v1/connections/${created.body.id}`;
      const got = await call(server.baseUrl, 'GET', path, { token: org.token });
      expect(got.body).to.deep.equal(created.body);
      expect(got.headers.get('etag')).to.equal('"1"');
      const upd = await call(server.baseUrl, 'PATCH', path, {
        token: org.token,
        body: { status: 'error', secret: { token: 'new' } },
        headers: { 'if-match': '"1"' },
      });
      expect(upd.status, upd.text).to.equal(200);
      expect(upd.body).to.deep.include({ status: 'error', version: 2 });
      expect((await call(server.baseUrl, 'PATCH', path, { token: org.token, body: { name: 'x' } })).status).to.equal(
        428,
      );
      const errored = await call(server.baseUrl, 'GET', '/v1/connections?statuses=error&serviceKey=slack', {
        token: org.token,
      });
      expect(errored.body.items.map((c: { id: string }) => c.id)).to.deep.equal([created.body.id]);
      const bad = await call(server.baseUrl, 'GET', '/v1/connections?statuses=error,bogus', { token: org.token });
      expect([bad.status, bad.body.error]).to.deep.equal([400, 'invalid_statuses']);
      expect((await call(server.baseUrl, 'GET', path, { token: other.token })).status).to.equal(404);
      expect((await call(server.baseUrl, 'DELETE', path, { token: org.token })).status).to.equal(204);
      expect((await call(server.baseUrl, 'GET', path, { token: org.token })).status).to.equal(404);
    });

    it('op:listUserConnections GET /manage/user-connections — bare array of the spec fields', async () => {
      await call(server.baseUrl, 'POST', '/v1/connections', {
        token: other.token,
        body: { name: 'Gmail', service_key: 'gmail', secret: SECRET },
      });
      await call(server.baseUrl, 'POST', '/v1/connections', {
        token: other.token,
        body: { name: 'Drive', service_key: 'gdrive', status: 'disconnected', secret: SECRET },
      });
      const all = await call(server.baseUrl, 'GET', '/manage/user-connections', { token: other.token });
      expect(all.status, all.text).to.equal(200);
      expect(all.body.map((c: { name: string }) => c.name)).to.deep.equal(['Drive', 'Gmail']);
      for (const c of all.body) expect(Object.keys(c).sort()).to.deep.equal(['id', 'name', 'service_key', 'status']);
      expect(all.text).to.not.include(SECRET);
      const one = await call(server.baseUrl, 'GET', '/manage/user-connections?statuses=disconnected', {
        token: other.token,
      });
      expect(one.body.map((c: { name: string }) => c.name)).to.deep.equal(['Drive']);
      const mismatch = await call(server.baseUrl, 'GET', '/manage/user-connections', {
        token: other.token,
        headers: { 'x-selected-org': org.orgId },
      });
      expect([mismatch.status, mismatch.body.error]).to.deep.equal([403, 'org_mismatch']);
      const same = await call(server.baseUrl, 'GET', '/manage/user-connections', {
        token: other.token,
        headers: { 'x-selected-org': other.orgId },
      });
      expect(same.status).to.equal(200);
      const unauth = await call(server.baseUrl, 'GET', '/manage/user-connections');
      expect(unauth.status).to.equal(401);
    });

    // Spec section 10: `statuses` is comma-separated; openapi/connect.yaml promises 400
    // invalid_statuses for empty, unknown (and, our rule, repeated) values.
    it('op:listUserConnections — comma-separated statuses and invalid_statuses over HTTP', async () => {
      const both = await call(server.baseUrl, 'GET', '/manage/user-connections?statuses=connected,error', {
        token: other.token,
      });
      expect(both.status, both.text).to.equal(200);
      expect(both.body.map((c: { name: string }) => c.name)).to.deep.equal(['Gmail']);
      for (const bad of ['', 'active', 'connected,connected', 'connected,']) {
        const r = await call(server.baseUrl, 'GET', `/manage/user-connections?statuses=${bad}`, { token: other.token });
        expect([r.status, r.body.error], `statuses=${bad}`).to.deep.equal([400, 'invalid_statuses']);
      }
    });
  });
}
