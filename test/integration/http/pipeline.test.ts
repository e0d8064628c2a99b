/** The HTTP pipeline's own behaviour: routing, media types, malformed bodies, health. */
import { expect } from 'chai';
import { startTestServer, createTestOrg, call, type TestServer, type TestOrg } from '../../helpers/server.js';

describe('HTTP pipeline (sqlite)', () => {
  let server: TestServer;
  let org: TestOrg;
  before(async () => {
    server = await startTestServer('sqlite');
    org = await createTestOrg(server);
  });
  after(async () => server.close());
  afterEach(() => server.assertResponsesValid());

  it('op:getHealth and op:getReadiness answer without auth and are never cached', async () => {
    const live = await call(server.baseUrl, 'GET', '/healthz');
    expect([live.status, live.body]).to.deep.equal([200, { status: 'ok' }]);
    const ready = await call(server.baseUrl, 'GET', '/readyz');
    expect(ready.status).to.equal(200);
    expect(ready.body).to.deep.include({
      status: 'ready',
      draining: false,
      checks: { store: 'ok', blobs: 'ok', isolation: 'ok' },
    });
    expect(ready.body.details.isolation).to.deep.equal(server.app.services.isolation);
    expect(ready.headers.get('cache-control')).to.equal('no-store');
  });

  it('answers unknown paths with 404 and wrong methods with 405 + Allow, in the error object', async () => {
    const missing = await call(server.baseUrl, 'GET', '/nope');
    expect([missing.status, missing.body.error]).to.deep.equal([404, 'not_found']);
    const wrong = await call(server.baseUrl, 'PUT', '/healthz');
    expect(wrong.status).to.equal(405);
    expect(wrong.headers.get('allow')).to.equal('GET');
    expect(wrong.body).to.have.keys('error', 'message');
  });

  it('rejects malformed JSON with 400 malformed_json and a wrong media type with 415', async () => {
    const bad = await call(server.baseUrl, 'POST', '/v1/credentials', {
      token: org.token,
      headers: { 'content-type': 'application/json' },
      raw: '{"label":',
    });
    expect([bad.status, bad.body.error]).to.deep.equal([400, 'malformed_json']);
    const text = await call(server.baseUrl, 'POST', '/v1/credentials', {
      token: org.token,
      headers: { 'content-type': 'text/plain' },
      raw: 'label=x',
    });
    expect([text.status, text.body.error]).to.deep.equal([415, 'unsupported_media_type']);
  });

  it('rejects unknown fields and wrong types with 400 invalid_request and details', async () => {
    const res = await call(server.baseUrl, 'POST', '/v1/workflows', {
      token: org.token,
      body: { name: 'x', steps: 'nope' },
    });
    expect([res.status, res.body.error]).to.deep.equal([400, 'invalid_request']);
    expect(res.body.details).to.be.an('array').that.is.not.empty;
  });

  it('echoes a sane X-Request-Id and generates one otherwise', async () => {
    const echoed = await call(server.baseUrl, 'GET', '/healthz', { headers: { 'x-request-id': 'abc-123' } });
    expect(echoed.headers.get('x-request-id')).to.equal('abc-123');
    const generated = await call(server.baseUrl, 'GET', '/healthz', {
      headers: { 'x-request-id': 'bad id with spaces' },
    });
    expect(generated.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
  });
});
