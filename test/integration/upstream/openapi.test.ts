/**
 * OpenAPI-described application servers (spec section 7): operations become tools, calls go
 * to the registered baseUrl with the connection's credential, non-2xx answers are tool errors,
 * and forwarded headers never reach them (spec section 5).
 */
import { expect } from 'chai';
import type { AppServer } from '../../../src/gateway/registry.js';
import { createAppToolServer, UpstreamPool } from '../../../src/gateway/upstream/index.js';
import type { ToolDef, ToolServer } from '../../../src/gateway/types.js';
import { petDocument, startPetApi, type HttpFixture } from '../../fixtures/upstreams/http-api.js';
import { freePort, gatewayError, setup, LOOPBACK, type Env } from './setup.js';

describe('upstream: OpenAPI-described HTTP API', function () {
  this.timeout(30_000);
  let env: Env;
  let api: HttpFixture;
  let pool: UpstreamPool;
  let reg: AppServer;
  let server: ToolServer;
  let pcid: string;
  const forwarded = { 'x-tenant': 'acme', 'x-trace-tag': 'forwarded' };
  const call = (name: string, args: Record<string, unknown>) =>
    server.callTool(env.ctx({ forwardedHeaders: forwarded }), name, { PCID: pcid, ...args });

  beforeEach(async () => {
    env = await setup();
    api = await startPetApi();
    pool = new UpstreamPool({ outbound: LOOPBACK, timeoutMs: 5_000 });
    reg = await env.server({
      path: 'pets',
      name: 'Pets',
      service_key: 'pets',
      auth: { scheme: 'header', headerName: 'X-Api-Key' },
      upstream: { type: 'openapi', baseUrl: `${api.baseUrl}/api/`, document: petDocument },
    });
    pcid = await env.connection({ service_key: 'pets', secret: { apiKey: 'pet-key' } });
    server = createAppToolServer(reg, undefined, pool);
  });
  afterEach(async () => {
    await pool.close();
    await api.close();
    await env.close();
  });

  it('generates one tool per operation with PCID, params as properties and the body under body', async () => {
    const tools = await server.listTools(env.ctx());
    const byName = new Map<string, ToolDef>(tools.map((t) => [t.name, t]));
    // uploadPhoto has only a multipart body: not offered. /hello has no operationId.
    expect([...byName.keys()]).to.deep.equal(['listPets', 'createPet', 'pets_get', 'get_hello']);
    const get = byName.get('pets_get')!;
    expect(get.description).to.equal('Get a pet');
    expect(get.annotations).to.deep.equal({ readOnlyHint: true });
    expect(get.inputSchema).to.deep.include({
      type: 'object',
      additionalProperties: false,
      required: ['petId', 'X-Trace-Tag', 'PCID'],
    });
    expect(get.inputSchema.properties).to.have.keys(['petId', 'verbose', 'X-Trace-Tag', 'PCID']);
    const create = byName.get('createPet')!;
    expect(create.description).to.equal('Create a pet.');
    expect(create.inputSchema.required).to.deep.equal(['body', 'PCID']);
    const body = (create.inputSchema.properties as Record<string, Record<string, any>>).body!;
    // $ref inlined, nullable rewritten, the self-reference cut.
    expect(body).to.deep.equal({
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string' }, tag: { type: ['string', 'null'] }, parent: {} },
    });
    expect(byName.get('get_hello')!.description).to.equal('GET /hello');
  });

  it('calls with path, query and header parameters and the credential; JSON objects are structuredContent', async () => {
    const r = await call('pets_get', { petId: '1', verbose: true, 'X-Trace-Tag': 'argument' });
    expect(r.isError).to.equal(undefined);
    expect(r.structuredContent).to.deep.equal({ id: '1', name: 'Rex', verbose: 'true', trace: 'argument' });
    expect(JSON.parse(r.content[0]!.text as string)).to.deep.equal(r.structuredContent);
    const req = api.requests.at(-1)!;
    expect(req.method).to.equal('GET');
    expect(req.url).to.equal('/api/pets/1?verbose=true');
    expect(req.headers['x-api-key']).to.equal('pet-key');
    expect(req.headers.accept).to.equal('application/json');
  });

  it('sends the JSON body and wraps arrays as {result}', async () => {
    const created = await call('createPet', { body: { name: 'Tom', tag: null } });
    expect(created.structuredContent).to.deep.equal({ id: '2', name: 'Tom', tag: null });
    const sent = api.requests.at(-1)!;
    expect(sent.method).to.equal('POST');
    expect(sent.headers['content-type']).to.equal('application/json');
    expect(JSON.parse(sent.body)).to.deep.equal({ name: 'Tom', tag: null });
    const list = await call('listPets', { limit: 5, tags: ['a', 'b c'] });
    expect(api.requests.at(-1)!.url).to.equal('/api/pets?limit=5&tags=a&tags=b+c');
    expect(list.structuredContent).to.deep.equal({
      result: [{ id: '1', name: 'Rex', limit: '5', tags: ['a', 'b c'] }],
    });
    const hello = await call('get_hello', {});
    expect(hello).to.deep.equal({
      content: [{ type: 'text', text: 'hello there' }],
      structuredContent: { result: 'hello there' },
    });
  });

  it('answers a non-2xx status as isError with the status and a body excerpt', async () => {
    const r = await call('pets_get', { petId: 'a/b', 'X-Trace-Tag': 't' });
    expect(api.requests.at(-1)!.url).to.equal('/api/pets/a%2Fb');
    expect(r.isError).to.equal(true);
    expect(r.structuredContent).to.deep.equal({ status: 404, error: '{"message":"no pet a/b"}' });
    expect(r.content[0]!.text).to.equal('HTTP 404: {"message":"no pet a/b"}');
  });

  it('forwards no headers to OpenAPI-generated servers', async () => {
    await call('pets_get', { petId: '1', 'X-Trace-Tag': 'argument' });
    await call('listPets', {});
    for (const req of api.requests) {
      expect(req.headers).to.not.have.property('x-tenant');
      expect(req.headers['x-trace-tag'] ?? 'argument').to.equal('argument');
    }
  });

  it('refuses unknown tools, unknown arguments and missing required ones with -32000', async () => {
    expect((await gatewayError(call('nope', {}))).message).to.equal('unknown tool "nope" on server pets');
    expect((await gatewayError(call('listPets', { limitt: 1 }))).message).to.equal(
      'tool listPets has no argument "limitt"',
    );
    expect((await gatewayError(call('pets_get', { petId: '1' }))).message).to.equal(
      'tool pets_get: argument "X-Trace-Tag" is required',
    );
    expect((await gatewayError(call('createPet', {}))).message).to.equal('tool createPet: argument "body" is required');
    expect(api.requests).to.have.length(0);
  });

  it('does not follow redirects (the credential stays with baseUrl)', async () => {
    const doc = {
      openapi: '3.1.0',
      info: { title: 'x', version: '1' },
      paths: { '/moved': { get: { operationId: 'moved', responses: {} } } },
    };
    const moved = await env.server({
      path: 'moved',
      name: 'Moved',
      service_key: 'pets',
      auth: { scheme: 'bearer' },
      upstream: { type: 'openapi', baseUrl: `${api.baseUrl}/api`, document: doc },
    });
    const r = await createAppToolServer(moved, undefined, pool).callTool(env.ctx(), 'moved', { PCID: pcid });
    expect(r.isError).to.equal(true);
    expect((r.structuredContent as { status: number }).status).to.equal(302);
  });

  it('answers an unreachable API with -32000', async () => {
    const port = await freePort();
    const down = await env.server({
      path: 'down',
      name: 'Down',
      service_key: 'pets',
      auth: { scheme: 'none' },
      upstream: { type: 'openapi', baseUrl: `http://127.0.0.1:${port}`, document: petDocument },
    });
    const err = await gatewayError(
      createAppToolServer(down, undefined, pool).callTool(env.ctx(), 'listPets', { PCID: pcid }),
    );
    expect(err.message).to.equal(
      'upstream down tools/call listPets failed: the upstream is unreachable (ECONNREFUSED)',
    );
  });
});
