/**
 * Workflow operations over real HTTP (loopback server, full pipeline, every response checked
 * against the OpenAPI bundle).
 */
import { expect } from 'chai';
import { call, createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { storeKinds } from '../../helpers/store.js';
import { codeStep, definition } from './fixtures.js';

const kinds = await storeKinds();

for (const kind of kinds) {
  describe(`workflows over HTTP (${kind})`, () => {
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

    it('op:createWorkflow op:getWorkflow op:updateWorkflow — versions, stepMap and If-Match', async () => {
      const created = await call(server.baseUrl, 'POST', '/v1/workflows', { token: org.token, body: definition(2) });
      expect(created.status, created.text).to.equal(201);
      expect(created.headers.get('etag')).to.equal('"1"');
      expect(created.body.stepMap).to.deep.equal({ 0: 1, 1: 1 });
      const id = created.body.automationId as string;
      const got = await call(server.baseUrl, 'GET', `/v1/workflows/${id}`, { token: org.token });
      expect(got.body).to.deep.equal(created.body);
      const next = definition(2);
      next.steps[1] = codeStep('step 1', 'return 2;') as never;
      const missing = await call(server.baseUrl, 'PUT', `/v1/workflows/${id}`, { token: org.token, body: next });
      expect([missing.status, missing.body.error]).to.deep.equal([428, 'precondition_required']);
      const stale = await call(server.baseUrl, 'PUT', `/v1/workflows/${id}`, {
        token: org.token,
        body: next,
        headers: { 'if-match': '"5"' },
      });
      expect([stale.status, stale.body.error]).to.deep.equal([412, 'version_conflict']);
      const ok = await call(server.baseUrl, 'PUT', `/v1/workflows/${id}`, {
        token: org.token,
        body: next,
        headers: { 'if-match': '"1"' },
      });
      expect(ok.status, ok.text).to.equal(200);
      expect(ok.headers.get('etag')).to.equal('"2"');
      expect(ok.body).to.deep.include({ version: 2, stepMap: { 0: 1, 1: 2 } });
      const invalid = await call(server.baseUrl, 'POST', '/v1/workflows', {
        token: org.token,
        body: definition(1, { output: { stepIndex: 3, fileName: 'f' } }),
      });
      expect([invalid.status, invalid.body.error]).to.deep.equal([400, 'invalid_request']);
      expect(invalid.body.details[0]).to.include({ instancePath: '/output/stepIndex' });
      const foreign = await call(server.baseUrl, 'GET', `/v1/workflows/${id}`, { token: other.token });
      expect([foreign.status, foreign.body.error]).to.deep.equal([404, 'not_found']);
    });

    it('op:listWorkflows op:listWorkflowVersions op:getWorkflowVersion — pages and cursors', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        ids.push(
          (
            await call(server.baseUrl, 'POST', '/v1/workflows', {
              token: other.token,
              body: definition(1, { name: `w${i}` }),
            })
          ).body.automationId,
        );
      }
      const first = await call(server.baseUrl, 'GET', '/v1/workflows?limit=2', { token: other.token });
      expect(first.status).to.equal(200);
      expect(first.body.items.map((w: { automationId: string }) => w.automationId)).to.deep.equal(ids.slice(0, 2));
      const second = await call(server.baseUrl, 'GET', `/v1/workflows?limit=2&cursor=${first.body.nextCursor}`, {
        token: other.token,
      });
      expect(second.body).to.deep.include({ nextCursor: null });
      expect(second.body.items.map((w: { automationId: string }) => w.automationId)).to.deep.equal(ids.slice(2));
      const bad = await call(server.baseUrl, 'GET', '/v1/workflows?cursor=nope', { token: other.token });
      expect([bad.status, bad.body.error]).to.deep.equal([400, 'invalid_cursor']);
      const tooMany = await call(server.baseUrl, 'GET', '/v1/workflows?limit=500', { token: other.token });
      expect(tooMany.status).to.equal(400);
      const versions = await call(server.baseUrl, 'GET', `/v1/workflows/${ids[0]}/versions`, { token: other.token });
      expect(versions.body.items.map((v: { version: number }) => v.version)).to.deep.equal([1]);
      const v1 = await call(server.baseUrl, 'GET', `/v1/workflows/${ids[0]}/versions/1`, { token: other.token });
      expect(v1.body).to.deep.include({ automationId: ids[0], version: 1, name: 'w0' });
      const v2 = await call(server.baseUrl, 'GET', `/v1/workflows/${ids[0]}/versions/2`, { token: other.token });
      expect(v2.status).to.equal(404);
    });

    it('op:deleteWorkflow — 204, then 404; another organisation cannot delete', async () => {
      const id = (await call(server.baseUrl, 'POST', '/v1/workflows', { token: org.token, body: definition(1) })).body
        .automationId;
      expect((await call(server.baseUrl, 'DELETE', `/v1/workflows/${id}`, { token: other.token })).status).to.equal(
        404,
      );
      const del = await call(server.baseUrl, 'DELETE', `/v1/workflows/${id}`, { token: org.token });
      expect(del.status).to.equal(204);
      expect((await call(server.baseUrl, 'GET', `/v1/workflows/${id}`, { token: org.token })).status).to.equal(404);
    });
  });
}
