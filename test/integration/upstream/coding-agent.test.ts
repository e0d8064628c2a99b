/**
 * The coding-agent launch tool (spec section 13 and Limits): every validation row of the input
 * table, and the call to a local coding-agent service with the connection's key.
 */
import { expect } from 'chai';
import { operationValidators } from '../../../generated/validators/operations.js';
import { AppError } from '../../../src/errors/index.js';
import type { AppServer } from '../../../src/gateway/registry.js';
import { CODING_AGENT_TOOL, createAppToolServer, UpstreamPool } from '../../../src/gateway/upstream/index.js';
import type { ToolServer } from '../../../src/gateway/types.js';
import { startCodingAgentApi, type HttpFixture } from '../../fixtures/upstreams/http-api.js';
import { gatewayError, setup, LOOPBACK, type Env } from './setup.js';

/** 15 MiB of decoded image = 20,971,520 base64 characters (schema decision). */
const MAX_IMAGE_B64 = 20_971_520;

describe('upstream: coding-agent launch tool', function () {
  this.timeout(60_000);
  let env: Env;
  let api: HttpFixture;
  let pool: UpstreamPool;
  let reg: AppServer;
  let server: ToolServer;
  let pcid: string;
  const valid = () => ({
    prompt: { text: 'Add a health check.' },
    repos: [{ url: 'https://github.com/acme/app', startingRef: 'main' }],
  });
  const launch = (args: Record<string, unknown>) =>
    server.callTool(env.ctx({ forwardedHeaders: { 'x-tenant': 'acme' } }), CODING_AGENT_TOOL, { PCID: pcid, ...args });
  const invalid = async (args: Record<string, unknown>, field: string, message: RegExp) => {
    const err = await gatewayError(launch(args));
    expect(err.message).to.match(/^invalid arguments: /);
    expect(err.message).to.match(message);
    expect(err.data).to.deep.equal({ field });
    expect(api.requests).to.have.length(0);
  };

  beforeEach(async () => {
    env = await setup();
    api = await startCodingAgentApi();
    pool = new UpstreamPool({ outbound: LOOPBACK, timeoutMs: 10_000 });
    reg = await env.server({
      path: 'coding-agent',
      name: 'Coding agent',
      service_key: 'coding-agent',
      auth: { scheme: 'bearer' },
      upstream: { type: 'coding-agent', baseUrl: api.baseUrl },
    });
    pcid = await env.connection({ service_key: 'coding-agent', secret: { apiKey: 'key_live_123' } });
    server = createAppToolServer(reg, undefined, pool);
  });
  afterEach(async () => {
    await pool.close();
    await api.close();
    await env.close();
  });

  it('registers as upstream {type: coding-agent, baseUrl} (registry and management.yaml agree)', async () => {
    expect(reg.upstream).to.deep.equal({ type: 'coding-agent', baseUrl: api.baseUrl });
    const bad = await env
      .server({
        path: 'ca-bad',
        name: 'x',
        service_key: 'coding-agent',
        auth: { scheme: 'bearer' },
        upstream: { type: 'coding-agent', baseUrl: 'ftp://x' },
      })
      .catch((e: unknown) => e);
    expect(bad).to.be.instanceOf(AppError);
    expect((bad as AppError).message).to.equal('upstream.baseUrl must be an absolute http(s) URL');
    const validate = operationValidators.createAppServer!.json!;
    const body = {
      path: 'ca',
      name: 'Coding agent',
      service_key: 'coding-agent',
      auth: { scheme: 'bearer' },
      upstream: { type: 'coding-agent', baseUrl: 'https://api.example.com' },
    };
    expect(validate(body), JSON.stringify(validate.errors)).to.equal(true);
    expect(validate({ ...body, upstream: { ...body.upstream, url: 'https://x' } })).to.equal(false);
  });

  it('lists the launch tool of schemas/tools/coding-agent with PCID required', async () => {
    const [tool, ...rest] = await server.listTools(env.ctx());
    expect(rest).to.have.length(0);
    expect(tool!.name).to.equal('coding-agent_launch');
    expect(tool!.inputSchema.required).to.deep.equal(['prompt', 'repos', 'PCID']);
    expect(tool!.outputSchema!.required).to.deep.equal(['agentId', 'status']);
  });

  it('valid input: POST /v0/agents with the connection key as Bearer; the answer is structuredContent', async () => {
    const r = await launch({
      ...valid(),
      model: { id: 'claude-4-sonnet', params: [{ name: 'thinking', value: 'high' }] },
      autoCreatePR: true,
      skipReviewerRequest: true,
      branchName: 'feat/health',
      envVars: { NODE_ENV: 'test' },
    });
    expect(r.isError).to.equal(undefined);
    expect(r.structuredContent).to.deep.equal({
      id: 'bc_123',
      status: 'CREATING',
      name: 'agent',
      target: { url: 'https://agents.example.com/bc_123' },
      agentId: 'bc_123',
      url: 'https://agents.example.com/bc_123',
    });
    expect(api.requests).to.have.length(1);
    const req = api.requests[0]!;
    expect(req.method).to.equal('POST');
    expect(req.url).to.equal('/v0/agents');
    expect(req.headers.authorization).to.equal('Bearer key_live_123');
    expect(req.headers).to.not.have.property('x-tenant');
    expect(JSON.parse(req.body)).to.deep.equal({
      prompt: { text: 'Add a health check.' },
      source: { repository: 'https://github.com/acme/app', ref: 'main' },
      model: 'claude-4-sonnet',
      modelParams: [{ name: 'thinking', value: 'high' }],
      target: { autoCreatePr: true, branchName: 'feat/health', skipReviewerRequest: true },
      envVars: { NODE_ENV: 'test' },
    });
  });

  it('prUrl overrides url and startingRef; autoGenerateBranch applies only with prUrl', async () => {
    await launch({
      ...valid(),
      repos: [
        { url: 'https://github.com/acme/app', startingRef: 'main', prUrl: 'https://github.com/acme/app/pull/42' },
      ],
      autoGenerateBranch: false,
      skipReviewerRequest: true,
    });
    expect(JSON.parse(api.requests[0]!.body)).to.deep.equal({
      prompt: { text: 'Add a health check.' },
      source: { prUrl: 'https://github.com/acme/app/pull/42' },
      target: { autoBranch: false },
    });
    await launch({ ...valid(), autoGenerateBranch: true });
    expect(JSON.parse(api.requests[1]!.body)).to.not.have.property('target');
  });

  it('images: up to 5 of at most 15 MiB each are sent', async () => {
    const big = 'A'.repeat(MAX_IMAGE_B64);
    await launch({ ...valid(), prompt: { text: 't', images: ['iVBORw0KGgo=', 'AAAA', 'AAAA', 'AAAA', big] } });
    const sent = JSON.parse(api.requests[0]!.body) as { prompt: { images: Array<{ data: string }> } };
    expect(sent.prompt.images).to.have.length(5);
    expect(sent.prompt.images[4]!.data).to.have.length(MAX_IMAGE_B64);
  });

  it('rejects 6 images', async () => {
    await invalid(
      { ...valid(), prompt: { text: 't', images: Array(6).fill('AAAA') } },
      'prompt.images',
      /prompt\.images must have at most 5 items/,
    );
  });

  it('rejects an image over 15 MiB and one that is not base64', async () => {
    await invalid(
      { ...valid(), prompt: { text: 't', images: ['A'.repeat(MAX_IMAGE_B64 + 4)] } },
      'prompt.images[0]',
      /prompt\.images\[0\] is larger than 15 MiB/,
    );
    await invalid(
      { ...valid(), prompt: { text: 't', images: ['AA!A'] } },
      'prompt.images[0]',
      /must be standard base64/,
    );
    await invalid(
      { ...valid(), prompt: { text: 't', images: ['AAAAA'] } },
      'prompt.images[0]',
      /must be standard padded base64/,
    );
  });

  it('rejects 2 repos and a repo without url or prUrl', async () => {
    await invalid(
      { ...valid(), repos: [{ url: 'https://github.com/a/b' }, { url: 'https://github.com/a/c' }] },
      'repos',
      /repos must have at most 1 item$/,
    );
    await invalid(
      { ...valid(), repos: [{ startingRef: 'main' }] },
      'repos[0].url',
      /repos\[0\]\.url is required unless repos\[0\]\.prUrl is given/,
    );
    await invalid({ ...valid(), repos: [] }, 'repos', /repos must have at least 1 item/);
  });

  it('envVars: names up to 1024 bytes and values up to 4096 bytes pass', async () => {
    const name = `${'é'.repeat(511)}AB`; // 1024 bytes
    const value = 'é'.repeat(2048); // 4096 bytes
    await launch({ ...valid(), envVars: { [name]: value } });
    expect(JSON.parse(api.requests[0]!.body).envVars).to.deep.equal({ [name]: value });
  });

  it('rejects an envVars name over 1024 bytes (counted in UTF-8 bytes, not characters)', async () => {
    const name = 'é'.repeat(513); // 513 characters, 1026 bytes
    await invalid({ ...valid(), envVars: { [name]: 'v' } }, 'envVars', /envVars name ".*…" is longer than 1024 bytes/);
  });

  it('rejects an envVars value over 4096 bytes', async () => {
    await invalid(
      { ...valid(), envVars: { BIG: 'é'.repeat(2049) } },
      'envVars.BIG',
      /envVars\.BIG is longer than 4096 bytes/,
    );
  });

  it('rejects an empty envVars name or value', async () => {
    await invalid({ ...valid(), envVars: { '': 'v' } }, 'envVars', /envVars names must not be empty/);
    await invalid({ ...valid(), envVars: { EMPTY: '' } }, 'envVars.EMPTY', /envVars\.EMPTY must not be empty/);
  });

  it('rejects the CURSOR_ prefix', async () => {
    await invalid(
      { ...valid(), envVars: { CURSOR_API_KEY: 'x' } },
      'envVars',
      /envVars name "CURSOR_API_KEY" must not start with CURSOR_/,
    );
  });

  it('rejects a missing prompt text and unknown arguments', async () => {
    await invalid({ repos: valid().repos, prompt: {} }, 'prompt.text', /prompt\.text is required/);
    await invalid({ ...valid(), extra: 1 }, 'extra', /extra is not a known argument/);
    await invalid({ ...valid(), model: {} }, 'model.id', /model\.id is required/);
  });

  it('passes upstream failures as tool errors', async () => {
    api.nextAnswer = { status: 401, body: { error: 'bad key' } };
    const r = await launch(valid());
    expect(r.isError).to.equal(true);
    expect(r.structuredContent).to.deep.equal({ status: 401, error: '{"error":"bad key"}' });
    api.nextAnswer = { status: 200, body: { hello: 'world' } };
    const r2 = await launch(valid());
    expect(r2.isError).to.equal(true);
    expect(r2.content[0]!.text).to.match(/without an agent id and status/);
  });

  it('checks the PCID like every application tool', async () => {
    const other = await env.connection({ service_key: 'github' });
    expect(
      (await gatewayError(server.callTool(env.ctx(), CODING_AGENT_TOOL, { ...valid(), PCID: other }))).message,
    ).to.match(/not "coding-agent"/);
    // The single connected connection is injected when PCID is missing.
    const r = await server.callTool(env.ctx(), CODING_AGENT_TOOL, valid());
    expect(r.structuredContent).to.include({ agentId: 'bc_123' });
    expect((await gatewayError(server.callTool(env.ctx(), 'other_tool', { PCID: pcid }))).message).to.equal(
      'unknown tool "other_tool" on server coding-agent',
    );
  });
});
