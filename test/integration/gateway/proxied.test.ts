/**
 * The gateway over the running service: the MCP Inspector CLI lists and calls tools on
 * svc-sidekick, gateway and a proxied server (server-everything); an agent limited to the
 * three fixed tools finds and calls a proxied tool from a plain-language request; PCID rules,
 * header forwarding and session-key separation through the real HTTP gateway (op:postMcpMessage).
 */
import { expect } from 'chai';
import { startTestServer, createTestOrg, call, type TestServer, type TestOrg } from '../../helpers/server.js';
import { startEverything } from '../upstream/setup.js';
import { startMcpFixture, type McpFixture } from '../../fixtures/upstreams/mcp-server.js';
import { callTool, createConnection, registerServer, sdkClient } from './helpers.js';
import { deploy, code } from '../../helpers/runs.js';
import { inspector } from '../../helpers/inspector.js';

describe('gateway with real upstreams (op:postMcpMessage)', function () {
  this.timeout(120_000);
  let server: TestServer;
  let org: TestOrg;
  let other: TestOrg;
  let everything: Awaited<ReturnType<typeof startEverything>>;
  let fixture: McpFixture;
  let everythingPcid: string;

  before(async () => {
    everything = await startEverything();
    fixture = await startMcpFixture();
    server = await startTestServer('sqlite');
    org = await createTestOrg(server, 'Proxy org');
    other = await createTestOrg(server, 'Other org');
    await registerServer(server, org, {
      path: 'everything',
      name: 'Everything',
      description: 'Reference MCP server: echo, sums, sample resources.',
      service_key: 'everything',
      upstream: { type: 'mcp', url: everything.url, transport: 'streamable-http' },
      auth: { scheme: 'none' },
    });
    everythingPcid = await createConnection(server, org, { name: 'Everything (test)', service_key: 'everything' });
    await registerServer(server, org, {
      path: 'recorder',
      name: 'Recorder',
      description: 'Records the headers it receives.',
      service_key: 'recorder',
      upstream: { type: 'mcp', url: fixture.url, transport: 'streamable-http' },
      auth: { scheme: 'bearer' },
    });
  });
  after(async () => {
    server?.assertResponsesValid();
    await server?.close();
    await everything?.close();
    await fixture?.close();
  });

  describe('MCP Inspector CLI', () => {
    it('lists and calls tools on svc-sidekick', async () => {
      const list = await inspector(`${server.baseUrl}/mcp/svc-sidekick`, org.token, ['--method', 'tools/list']);
      expect(list.code, list.stderr).to.equal(0);
      expect((JSON.parse(list.stdout) as { tools: { name: string }[] }).tools.map((t) => t.name)).to.have.members([
        'capabilities_discover',
        'capability_details',
      ]);
      const found = await inspector(`${server.baseUrl}/mcp/svc-sidekick`, org.token, [
        '--method',
        'tools/call',
        '--tool-name',
        'capabilities_discover',
        '--tool-arg',
        'request=echo a message back',
      ]);
      expect(found.code, found.stderr).to.equal(0);
      const result = JSON.parse(found.stdout) as {
        structuredContent: { tools: { name: string; serverName: string }[] };
      };
      expect(result.structuredContent.tools.some((t) => t.serverName === 'everything' && t.name === 'echo')).to.equal(
        true,
      );
    });

    it('lists and calls gateway_invoke on gateway', async () => {
      const list = await inspector(`${server.baseUrl}/mcp/gateway`, org.token, ['--method', 'tools/list']);
      expect(list.code, list.stderr).to.equal(0);
      expect((JSON.parse(list.stdout) as { tools: unknown[] }).tools).to.have.length(3);
      const res = await inspector(`${server.baseUrl}/mcp/gateway`, org.token, [
        '--method',
        'tools/call',
        '--tool-name',
        'gateway_invoke',
        '--tool-arg',
        'server=everything',
        '--tool-arg',
        'tool=echo',
        '--tool-arg',
        `arguments={"message":"via inspector","PCID":"${everythingPcid}"}`,
      ]);
      expect(res.code, res.stderr).to.equal(0);
      expect(res.stdout).to.include('Echo: via inspector');
    });

    it('lists and calls a proxied tool with its PCID', async () => {
      const list = await inspector(`${server.baseUrl}/mcp/everything`, org.token, ['--method', 'tools/list']);
      expect(list.code, list.stderr).to.equal(0);
      const echo = (
        JSON.parse(list.stdout) as { tools: { name: string; inputSchema: { required: string[] } }[] }
      ).tools.find((t) => t.name === 'echo')!;
      expect(echo.inputSchema.required).to.include('PCID');
      const res = await inspector(`${server.baseUrl}/mcp/everything`, org.token, [
        '--method',
        'tools/call',
        '--tool-name',
        'echo',
        '--tool-arg',
        'message=hello',
        '--tool-arg',
        `PCID=${everythingPcid}`,
      ]);
      expect(res.code, res.stderr).to.equal(0);
      expect(res.stdout).to.include('Echo: hello');
    });

    it('exits 3 (auth refused) with a bad token', async () => {
      const res = await inspector(`${server.baseUrl}/mcp/gateway`, 'not-a-token', ['--method', 'tools/list']);
      expect(res.code).to.equal(3);
    });
  });

  it('an agent limited to the three fixed tools finds and calls a proxied tool from a plain-language request', async () => {
    const agent = await sdkClient(server, org, 'gateway');
    try {
      const { tools } = await agent.listTools();
      expect(tools.map((t) => t.name)).to.have.members([
        'capabilities_discover',
        'capability_details',
        'gateway_invoke',
      ]);
      // 1. discover from the user's words
      const found = await agent.callTool({
        name: 'capabilities_discover',
        arguments: {
          request: 'echo this message back to me',
          types: ['tool', 'connection'],
          context: 'agent-execution',
        },
      });
      const discovered = found.structuredContent as {
        tools: { name: string; serverName: string }[];
        connections: { id: string; application: string }[];
      };
      const pick = discovered.tools[0]!;
      expect(pick, JSON.stringify(discovered.tools.slice(0, 3))).to.include({ name: 'echo', serverName: 'everything' });
      expect(discovered.connections.map((c) => c.id)).to.include(everythingPcid);
      // 2. read the schema
      const details = await agent.callTool({ name: 'capability_details', arguments: { items: [pick.name] } });
      expect(JSON.stringify(details.structuredContent)).to.include('message');
      // 3. call it; the only connected connection is injected as PCID
      const res = await agent.callTool({
        name: 'gateway_invoke',
        arguments: {
          server: pick.serverName,
          tool: pick.name,
          arguments: JSON.stringify({ message: 'from the agent' }),
        },
      });
      expect(res.isError).to.not.equal(true);
      expect(res.content).to.deep.equal([{ type: 'text', text: 'Echo: from the agent' }]);
    } finally {
      await agent.close();
    }
  });

  it('workflow tool steps call proxied and embedded tools through the gateway (templated arguments)', async () => {
    const wf = await deploy(server, org, {
      name: 'Tool steps',
      steps: [
        {
          type: 'tool',
          name: 'Echo',
          server: 'everything',
          tool: 'echo',
          arguments: { message: 'hello {{ inputs.name }}' },
        },
        { type: 'tool', name: 'Servers', server: 'mcp', tool: 'listServers', arguments: {} },
        code('Count', 'return { echoed: ctx.steps[0].result, servers: ctx.steps[1].result.servers.length };'),
      ],
    });
    const res = await call(server.baseUrl, 'POST', `/ext/triggers/${wf.apiTriggerId}`, {
      headers: { 'x-api-key': org.apiKey, 'x-api-wait': 'true' },
      body: { name: 'Ada' },
    });
    expect(res.status, res.text).to.equal(200);
    const results = res.body.results as { result: { resultType: string; result: string }; exitCode: number }[];
    expect(results.map((r) => r.exitCode)).to.deep.equal([0, 0, 0]);
    expect(results[0]!.result).to.deep.include({ resultType: 'plaintext', result: 'Echo: hello Ada' });
    expect(results[1]!.result.resultType).to.equal('json');
    expect(JSON.parse(results[2]!.result.result)).to.deep.equal({ echoed: 'Echo: hello Ada', servers: 7 });

    const failing = await deploy(server, org, {
      name: 'Bad tool',
      steps: [{ type: 'tool', name: 'Nope', server: 'everything', tool: 'no-such-tool', arguments: {} }],
    });
    const bad = await call(server.baseUrl, 'POST', `/ext/triggers/${failing.apiTriggerId}`, {
      headers: { 'x-api-key': org.apiKey, 'x-api-wait': 'true' },
      body: {},
    });
    expect(bad.body.results[0].exitCode).to.equal(1);
    expect(bad.body.results[0].result.result).to.match(/no-such-tool/);
    const unknownServer = await deploy(server, org, {
      name: 'Bad server',
      steps: [{ type: 'tool', name: 'Nope', server: 'nowhere', tool: 'x', arguments: {} }],
    });
    const gone = await call(server.baseUrl, 'POST', `/ext/triggers/${unknownServer.apiTriggerId}`, {
      headers: { 'x-api-key': org.apiKey, 'x-api-wait': 'true' },
      body: {},
    });
    expect(gone.body.results[0].exitCode).to.equal(1);
    expect(gone.body.results[0].result.result).to.equal(
      'Tool call failed: Unknown server "nowhere" for this organisation: use a serverName from capabilities_discover or listServers (JSON-RPC -32000)',
    );
  });

  describe('PCID rules through the gateway', () => {
    it('a PCID of another organisation is unknown; a disconnected one is refused; several connections need a choice', async () => {
      const foreign = await createConnection(server, other, { name: 'Theirs', service_key: 'everything' });
      const e1 = await callTool(server, org.token, 'everything', 'echo', { message: 'x', PCID: foreign });
      expect(e1.code).to.equal(-32000);
      expect(JSON.stringify(e1)).to.not.include('Theirs');
      const down = await createConnection(server, org, {
        name: 'Down',
        service_key: 'everything',
        status: 'disconnected',
      });
      const e2 = await callTool(server, org.token, 'everything', 'echo', { message: 'x', PCID: down });
      expect(e2.code).to.equal(-32000);
      expect(e2.message).to.include('disconnected');
      const second = await createConnection(server, org, { name: 'Everything (second)', service_key: 'everything' });
      const e3 = await callTool(server, org.token, 'gateway', 'gateway_invoke', {
        server: 'everything',
        tool: 'echo',
        arguments: { message: 'x' },
      });
      expect(e3.code).to.equal(-32000);
      expect(e3.message).to.include(everythingPcid).and.include(second).and.include('Everything (second)');
      const ok = await callTool(server, org.token, 'gateway', 'gateway_invoke', {
        server: 'everything',
        tool: 'echo',
        arguments: { message: 'chosen', PCID: second },
      });
      expect(ok.content[0].text).to.equal('Echo: chosen');
      const del = await call(server.baseUrl, 'DELETE', `/v1/connections/${second}`, { token: org.token });
      expect(del.status).to.equal(204);
    });
  });

  describe('header forwarding (spec section 5 table)', () => {
    let recorderPcid: string;
    before(async () => {
      recorderPcid = await createConnection(server, org, {
        name: 'Recorder key',
        service_key: 'recorder',
        secret: 'conn-secret-1',
      });
    });

    it("X-Pf-Forward-<Name> arrives lowercase; unprefixed and protected names do not; the credential is the connection's", async () => {
      const res = await callTool(
        server,
        org.token,
        'recorder',
        'whoami',
        { PCID: recorderPcid },
        {
          'X-Pf-Forward-Tenant': 'acme',
          'X-Pf-Forward-Authorization': 'Bearer stolen',
          'X-Pf-Forward-Content-Type': 'text/evil',
          'X-Pf-Forward-Accept': 'text/evil',
          'X-Pf-Forward-Mcp-Session-Id': 'hijack',
          'X-Custom': 'not-forwarded',
        },
      );
      const headers = res.structuredContent.headers as Record<string, string>;
      expect(headers.tenant).to.equal('acme');
      expect(headers.authorization).to.equal('Bearer conn-secret-1');
      expect(headers.authorization).to.not.include(org.token);
      expect(headers['x-custom']).to.equal(undefined);
      expect(headers['content-type']).to.not.equal('text/evil');
      expect(headers.accept).to.not.equal('text/evil');
      expect(headers['mcp-session-id']).to.not.equal('hijack');
      for (const name of Object.keys(headers)) expect(name).to.not.match(/^x-pf-forward-/);
    });

    it('different forwarded values never share an upstream session; equal values do', async () => {
      const before = fixture.sessionsOpened;
      await callTool(server, org.token, 'recorder', 'whoami', { PCID: recorderPcid }, { 'X-Pf-Forward-Tenant': 'one' });
      await callTool(server, org.token, 'recorder', 'whoami', { PCID: recorderPcid }, { 'X-Pf-Forward-Tenant': 'two' });
      await callTool(server, org.token, 'recorder', 'whoami', { PCID: recorderPcid }, { 'X-Pf-Forward-Tenant': 'one' });
      expect(fixture.sessionsOpened - before).to.equal(2);
    });
  });
});
