/** Trigger management operations over real HTTP (responses checked against the OpenAPI bundle). */
import { expect } from 'chai';
import { call, createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { storeKinds } from '../../helpers/store.js';
import { definition } from '../engine/fixtures.js';

const kinds = await storeKinds();

for (const kind of kinds) {
  describe(`triggers over HTTP (${kind})`, () => {
    let server: TestServer;
    let org: TestOrg;
    let other: TestOrg;
    let wfId: string;
    before(async () => {
      server = await startTestServer(kind);
      org = await createTestOrg(server, 'Org A');
      other = await createTestOrg(server, 'Org B');
      wfId = (await call(server.baseUrl, 'POST', '/v1/workflows', { token: org.token, body: definition(2) })).body
        .automationId;
    });
    after(async () => server.close());
    afterEach(() => server.assertResponsesValid());

    it('op:createTrigger op:getTrigger op:listTriggers — URLs, defaults, designatedOutput rule', async () => {
      const api = await call(server.baseUrl, 'POST', '/v1/triggers', {
        token: org.token,
        body: { automationId: wfId, kind: 'api', designatedOutput: { stepIndex: 1, fileName: 'r.md' } },
      });
      expect(api.status, api.text).to.equal(201);
      expect(api.headers.get('etag')).to.equal('"1"');
      expect(api.body).to.deep.include({
        kind: 'api',
        enabled: true,
        name: 'API trigger',
        designatedOutput: { stepIndex: 1, fileName: 'r.md' },
      });
      expect(api.body.urls.trigger).to.equal(`${server.baseUrl}/ext/triggers/${api.body.triggerId}`);
      const hook = await call(server.baseUrl, 'POST', '/v1/triggers', {
        token: org.token,
        body: { automationId: wfId, kind: 'webhook' },
      });
      expect(hook.body.urls.trigger).to.equal(`${server.baseUrl}/ext/webhook/{apiKey}/triggers/${hook.body.triggerId}`);
      expect(hook.text).to.not.include(org.apiKey);
      const outOfRange = await call(server.baseUrl, 'POST', '/v1/triggers', {
        token: org.token,
        body: { automationId: wfId, kind: 'api', designatedOutput: { stepIndex: 2, fileName: 'r.md' } },
      });
      expect([outOfRange.status, outOfRange.body.error]).to.deep.equal([400, 'invalid_request']);
      const foreignWorkflow = await call(server.baseUrl, 'POST', '/v1/triggers', {
        token: other.token,
        body: { automationId: wfId, kind: 'api' },
      });
      expect(foreignWorkflow.status).to.equal(404);
      const got = await call(server.baseUrl, 'GET', `/v1/triggers/${api.body.triggerId}`, { token: org.token });
      expect(got.body).to.deep.equal(api.body);
      const webhooks = await call(server.baseUrl, 'GET', `/v1/triggers?kind=webhook&automationId=${wfId}`, {
        token: org.token,
      });
      expect(webhooks.body).to.deep.equal({ items: [hook.body], nextCursor: null });
      expect((await call(server.baseUrl, 'GET', '/v1/triggers', { token: other.token })).body).to.deep.equal({
        items: [],
        nextCursor: null,
      });
    });

    it('op:updateTrigger op:deleteTrigger — disable with If-Match, delete', async () => {
      const t = (
        await call(server.baseUrl, 'POST', '/v1/triggers', {
          token: org.token,
          body: { automationId: wfId, kind: 'api' },
        })
      ).body;
      const path = `/v1/triggers/${t.triggerId}`;
      expect(
        (await call(server.baseUrl, 'PATCH', path, { token: org.token, body: { enabled: false } })).status,
      ).to.equal(428);
      const off = await call(server.baseUrl, 'PATCH', path, {
        token: org.token,
        body: { enabled: false },
        headers: { 'if-match': '"1"' },
      });
      expect(off.status, off.text).to.equal(200);
      expect(off.body).to.deep.include({ enabled: false, version: 2 });
      expect(off.headers.get('etag')).to.equal('"2"');
      const stale = await call(server.baseUrl, 'PATCH', path, {
        token: org.token,
        body: { enabled: true },
        headers: { 'if-match': '"1"' },
      });
      expect(stale.status).to.equal(412);
      expect(
        (
          await call(server.baseUrl, 'PATCH', path, {
            token: other.token,
            body: { enabled: true },
            headers: { 'if-match': '"2"' },
          })
        ).status,
      ).to.equal(404);
      expect((await call(server.baseUrl, 'DELETE', path, { token: other.token })).status).to.equal(404);
      expect((await call(server.baseUrl, 'DELETE', path, { token: org.token })).status).to.equal(204);
      expect((await call(server.baseUrl, 'GET', path, { token: org.token })).status).to.equal(404);
    });
  });
}
