/**
 * A real third-party MCP server (@modelcontextprotocol/server-everything, Streamable HTTP, in
 * its own process) behind an application server: tools listed with PCID, results passed
 * through unchanged (spec sections 7 and "Tool server and tool").
 */
import { expect } from 'chai';
import { createAppToolServer, UpstreamPool } from '../../../src/gateway/upstream/index.js';
import type { ToolServer } from '../../../src/gateway/types.js';
import { setup, startEverything, LOOPBACK, type Env } from './setup.js';

describe('upstream: server-everything over Streamable HTTP', function () {
  this.timeout(60_000);
  let env: Env;
  let everything: Awaited<ReturnType<typeof startEverything>>;
  let pool: UpstreamPool;
  let server: ToolServer;
  let pcid: string;

  before(async () => {
    everything = await startEverything();
    env = await setup();
    pool = new UpstreamPool({ outbound: LOOPBACK, timeoutMs: 10_000 });
    const reg = await env.server({
      path: 'everything',
      name: 'Everything',
      service_key: 'everything',
      upstream: { type: 'mcp', url: everything.url, transport: 'streamable-http' },
      auth: { scheme: 'none' },
    });
    pcid = await env.connection({ service_key: 'everything', name: 'Everything conn' });
    server = createAppToolServer(reg, undefined, pool);
  });
  after(async () => {
    await pool?.close();
    await env?.close();
    await everything?.close();
  });

  it('describes itself as an application server', () => {
    expect(server).to.deep.include({
      path: 'everything',
      name: 'Everything',
      embedded: false,
      serviceKey: 'everything',
      description: '',
    });
  });

  it('lists the upstream tools with the required string argument PCID', async () => {
    const tools = await server.listTools(env.ctx());
    const names = tools.map((t) => t.name);
    expect(names).to.include.members(['echo', 'get-sum', 'get-structured-content']);
    for (const t of tools) {
      expect(t.inputSchema.type).to.equal('object');
      expect(t.inputSchema.required).to.include('PCID');
      const pcidProp = (t.inputSchema.properties as Record<string, { type: string; description: string }>).PCID!;
      expect(pcidProp.type).to.equal('string');
      expect(pcidProp.description).to.match(/connection id/i);
    }
    const echo = tools.find((t) => t.name === 'echo')!;
    expect(echo.inputSchema.required).to.deep.equal(['message', 'PCID']);
    expect(echo.description).to.equal('Echoes back the input string');
    expect(echo.annotations).to.deep.include({ readOnlyHint: true });
  });

  it('calls echo and get-sum and passes content through', async () => {
    const echo = await server.callTool(env.ctx(), 'echo', { PCID: pcid, message: 'hello' });
    expect(echo).to.deep.equal({ content: [{ type: 'text', text: 'Echo: hello' }] });
    const sum = await server.callTool(env.ctx(), 'get-sum', { PCID: pcid, a: 2, b: 40 });
    expect(sum.content[0]).to.deep.equal({ type: 'text', text: 'The sum of 2 and 40 is 42.' });
  });

  it('passes structuredContent through unchanged', async () => {
    const r = await server.callTool(env.ctx(), 'get-structured-content', { PCID: pcid, location: 'Chicago' });
    expect(r.structuredContent).to.have.keys(['temperature', 'conditions', 'humidity']);
    expect(JSON.parse(r.content[0]!.text as string)).to.deep.equal(r.structuredContent);
    expect(r.isError).to.equal(undefined);
  });

  it('passes an upstream tool error through (isError) and non-text content', async () => {
    // get-sum validates its input inside the upstream: the failure is a tool result.
    const r = await server.callTool(env.ctx(), 'get-sum', { PCID: pcid, a: 'x', b: 1 });
    expect(r.isError).to.equal(true);
    expect(r.content[0]!.text).to.match(/expected number/);
    const img = await server.callTool(env.ctx(), 'get-tiny-image', { PCID: pcid });
    const image = img.content.find((c) => c.type === 'image')!;
    expect(image).to.include({ mimeType: 'image/png' });
    expect(image.data).to.be.a('string').and.not.be.empty;
  });

  it('reuses one upstream session across calls', async () => {
    const before = pool.size;
    await server.callTool(env.ctx(), 'echo', { PCID: pcid, message: 'a' });
    await server.callTool(env.ctx(), 'echo', { PCID: pcid, message: 'b' });
    expect(pool.size).to.equal(before);
    expect(pool.size).to.equal(1);
  });
});
