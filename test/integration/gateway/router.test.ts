/**
 * The gateway's JSON-RPC surface over real HTTP (spec section 7, Errors "Tool gateway";
 * decisions in openapi/gateway.yaml): op:postMcpMessage — transport errors, JSON-RPC codes,
 * notifications, batches, the MCP SDK client, listServers, org isolation.
 */
import { expect } from 'chai';
import { startTestServer, createTestOrg, call, type TestServer, type TestOrg } from '../../helpers/server.js';
import { JSON_HEADERS, rpc, callTool, sdkClient } from './helpers.js';

describe('gateway router (op:postMcpMessage)', function () {
  this.timeout(30_000);
  let server: TestServer;
  let org: TestOrg;
  let other: TestOrg;

  before(async () => {
    server = await startTestServer('sqlite');
    org = await createTestOrg(server, 'Gateway org');
    other = await createTestOrg(server, 'Other org');
  });
  after(async () => {
    server.assertResponsesValid();
    await server.close();
  });

  describe('transport errors are JSON-RPC errors with id null', () => {
    it('401 -32000 without a token, with WWW-Authenticate', async () => {
      const res = await rpc(server, undefined, 'mcp', 'tools/list');
      expect(res.status).to.equal(401);
      expect(res.headers.get('www-authenticate')).to.match(/^Bearer/);
      expect(res.body).to.deep.include({ jsonrpc: '2.0', id: null });
      expect(res.body.error).to.include({ code: -32000 });
      expect(res.body.error.data).to.deep.equal({ error: 'missing_token' });
    });

    it('401 -32000 with a bad token; the message carries no token text', async () => {
      const res = await rpc(server, 'eyJhbGciOiJub25lIn0.e30.', 'mcp', 'tools/list');
      expect(res.status).to.equal(401);
      expect(res.body.error.code).to.equal(-32000);
      expect(res.text).to.not.include('eyJhbGciOiJub25lIn0');
    });

    it('403 -32000 when X-Selected-Org is another organisation; accepted when it matches', async () => {
      const bad = await rpc(server, org.token, 'mcp', 'tools/list', {}, { 'x-selected-org': other.orgId });
      expect(bad.status).to.equal(403);
      expect(bad.body.error).to.include({ code: -32000 });
      const good = await rpc(server, org.token, 'mcp', 'tools/list', {}, { 'x-selected-org': org.orgId });
      expect(good.status).to.equal(200);
    });

    it('415 -32000 when Content-Type is not application/json; charset parameter allowed', async () => {
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
      const bad = await call(server.baseUrl, 'POST', '/mcp/mcp', {
        token: org.token,
        raw: body,
        headers: { 'content-type': 'text/plain', accept: 'application/json' },
      });
      expect(bad.status).to.equal(415);
      expect(bad.body.error.code).to.equal(-32000);
      const ok = await call(server.baseUrl, 'POST', '/mcp/mcp', {
        token: org.token,
        raw: body,
        headers: { 'content-type': 'application/json; charset=utf-8', accept: 'application/json' },
      });
      expect(ok.status).to.equal(200);
      expect(ok.body).to.deep.equal({ jsonrpc: '2.0', id: 1, result: {} });
    });

    it('406 -32000 when Accept lacks application/json', async () => {
      // (fetch always sends an Accept header: `*/*` when none is given, which counts as JSON.)
      for (const accept of ['text/event-stream', 'text/html', 'application/xml;q=1']) {
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (accept) headers.accept = accept;
        const res = await call(server.baseUrl, 'POST', '/mcp/mcp', {
          token: org.token,
          raw: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
          headers,
        });
        expect(res.status, String(accept)).to.equal(406);
        expect(res.body.error.code).to.equal(-32000);
      }
      const star = await call(server.baseUrl, 'POST', '/mcp/mcp', {
        token: org.token,
        raw: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
        headers: { 'content-type': 'application/json', accept: '*/*' },
      });
      expect(star.status).to.equal(200);
    });

    it('400 -32700 for malformed JSON; -32600 for JSON that is not a JSON-RPC payload', async () => {
      const malformed = await call(server.baseUrl, 'POST', '/mcp/mcp', {
        token: org.token,
        raw: '{"jsonrpc":',
        headers: JSON_HEADERS,
      });
      expect(malformed.status).to.equal(400);
      expect(malformed.body.error.code).to.equal(-32700);
      const notRpc = await call(server.baseUrl, 'POST', '/mcp/mcp', {
        token: org.token,
        raw: '"hello"',
        headers: JSON_HEADERS,
      });
      expect(notRpc.body.error.code).to.equal(-32600);
      const noMethod = await call(server.baseUrl, 'POST', '/mcp/mcp', {
        token: org.token,
        raw: '{"jsonrpc":"2.0","id":7}',
        headers: JSON_HEADERS,
      });
      expect(noMethod.body.error.code).to.equal(-32600);
    });

    it('404 -32000 for an unknown server path; 405 for GET (no SSE stream)', async () => {
      const res = await rpc(server, org.token, 'no-such-server', 'tools/list');
      expect(res.status).to.equal(404);
      expect(res.body.error).to.include({ code: -32000 });
      expect(res.body.error.message).to.include('no-such-server');
      const get = await call(server.baseUrl, 'GET', '/mcp/mcp', {
        token: org.token,
        headers: { accept: 'text/event-stream' },
      });
      expect(get.status).to.equal(405);
      expect(get.headers.get('allow')).to.equal('POST');
    });
  });

  describe('JSON-RPC methods', () => {
    it('initialize negotiates a supported protocol version; ping answers {}', async () => {
      const init = await rpc(server, org.token, 'svc-sidekick', 'initialize', {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 't', version: '1' },
      });
      expect(init.body.result).to.deep.include({
        protocolVersion: '2025-06-18',
        capabilities: { tools: { listChanged: false } },
      });
      expect(init.body.result.serverInfo.name).to.equal('switchyard/svc-sidekick');
      const unknownVersion = await rpc(server, org.token, 'svc-sidekick', 'initialize', {
        protocolVersion: '1999-01-01',
      });
      expect(unknownVersion.body.result.protocolVersion)
        .to.match(/^\d{4}-\d{2}-\d{2}$/)
        .and.not.equal('1999-01-01');
      const ping = await rpc(server, org.token, 'gateway', 'ping');
      expect(ping.body.result).to.deep.equal({});
    });

    it('notifications only → 202 with no body; a batch answers each request', async () => {
      const note = await call(server.baseUrl, 'POST', '/mcp/gateway', {
        token: org.token,
        headers: JSON_HEADERS,
        raw: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      });
      expect(note.status).to.equal(202);
      expect(note.text).to.equal('');
      const batch = await call(server.baseUrl, 'POST', '/mcp/gateway', {
        token: org.token,
        headers: JSON_HEADERS,
        raw: JSON.stringify([
          { jsonrpc: '2.0', id: 1, method: 'ping' },
          { jsonrpc: '2.0', method: 'notifications/initialized' },
          { jsonrpc: '2.0', id: 2, method: 'nope' },
        ]),
      });
      expect(batch.status).to.equal(200);
      expect(batch.body).to.have.length(2);
      expect(batch.body[0]).to.deep.equal({ jsonrpc: '2.0', id: 1, result: {} });
      expect(batch.body[1].error.code).to.equal(-32601);
      const empty = await call(server.baseUrl, 'POST', '/mcp/gateway', {
        token: org.token,
        headers: JSON_HEADERS,
        raw: '[]',
      });
      expect(empty.body.error.code).to.equal(-32600);
      const big = Array.from({ length: 101 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' }));
      const tooBig = await call(server.baseUrl, 'POST', '/mcp/gateway', {
        token: org.token,
        headers: JSON_HEADERS,
        raw: JSON.stringify(big),
      });
      expect(tooBig.body.error).to.include({ code: -32600, message: 'A batch holds at most 100 messages' });
      const full = await call(server.baseUrl, 'POST', '/mcp/gateway', {
        token: org.token,
        headers: JSON_HEADERS,
        raw: JSON.stringify(big.slice(0, 100)),
      });
      expect(full.body).to.have.length(100);
    });

    it('unknown method -32601; tools/call without a name or with non-object arguments -32602; unknown tool -32602', async () => {
      expect((await rpc(server, org.token, 'mcp', 'resources/read', {})).body.error.code).to.equal(-32601);
      expect((await rpc(server, org.token, 'mcp', 'tools/call', { arguments: {} })).body.error.code).to.equal(-32602);
      expect(
        (await rpc(server, org.token, 'mcp', 'tools/call', { name: 'listServers', arguments: [1] })).body.error.code,
      ).to.equal(-32602);
      const unknown = await rpc(server, org.token, 'mcp', 'tools/call', { name: 'nope', arguments: {} });
      expect(unknown.body.error.code).to.equal(-32602);
      expect(unknown.body.error.message).to.include('nope');
    });

    it('arguments that break the input schema are -32000 naming the field', async () => {
      const err = await callTool(server, org.token, 'svc-sidekick', 'capabilities_discover', { request: 42 });
      expect(err.code).to.equal(-32000);
      expect(err.message).to.match(/request/);
      const extra = await callTool(server, org.token, 'mcp', 'listServers', { surprise: true });
      expect(extra.code).to.equal(-32000);
      expect(extra.message).to.include('surprise');
    });

    it('tools/list on every embedded server returns name, description and an object inputSchema', async () => {
      const expected: Record<string, string[]> = {
        mcp: ['listServers'],
        'svc-sidekick': ['capabilities_discover', 'capability_details'],
        gateway: ['capabilities_discover', 'capability_details', 'gateway_invoke'],
        'browser-automation': [
          'browser-automation_operator_run',
          'browser-automation_operator_run_continue',
          'browser-automation_playwright_run',
          'browser-automation_playwright_run_continue',
          'browser-automation_logins_list',
        ],
      };
      for (const [path, names] of Object.entries(expected)) {
        const res = await rpc(server, org.token, path, 'tools/list', {});
        const tools = res.body.result.tools as {
          name: string;
          description: string;
          inputSchema: { type: string; properties?: unknown; required?: unknown };
        }[];
        expect(
          tools.map((t) => t.name),
          path,
        ).to.have.members(names);
        for (const t of tools) {
          expect(t.description, t.name).to.be.a('string').and.not.equal('');
          expect(t.inputSchema.type, t.name).to.equal('object');
          // spec "Tool server and tool": type, properties and required are always there
          expect(t.inputSchema, t.name).to.have.property('properties').that.is.an('object');
          expect(t.inputSchema, t.name).to.have.property('required').that.is.an('array');
        }
      }
      const agents = await rpc(server, org.token, 'agent-management', 'tools/list', {});
      expect(agents.body.result.tools).to.have.length(11);
      expect(agents.body.result.tools.every((t: { name: string }) => t.name.startsWith('agent-management_'))).to.equal(
        true,
      );
    });

    it('embedded tools validate their arguments before they run: -32000 with the fields', async () => {
      const invalid = await callTool(server, org.token, 'browser-automation', 'browser-automation_operator_run', {
        task: 'x',
        cacheKey: 'short',
      });
      expect(invalid.code).to.equal(-32000);
      expect(invalid.data.errors.map((e: { field: string }) => e.field)).to.deep.equal(['cacheKey']);
    });
  });

  describe('listServers and isolation', () => {
    it("listServers lists the embedded servers and only this organisation's application servers", async () => {
      const reg = await call(server.baseUrl, 'POST', '/v1/servers', {
        token: other.token,
        body: {
          path: 'other-api',
          name: 'Other API',
          service_key: 'other-api',
          upstream: {
            type: 'openapi',
            baseUrl: 'http://127.0.0.1:9',
            document: { openapi: '3.1.0', info: { title: 'x', version: '1' }, paths: {} },
          },
          auth: { scheme: 'none' },
        },
      });
      expect(reg.status).to.equal(201);
      const mine = await callTool(server, org.token, 'mcp', 'listServers', {});
      const paths = (mine.structuredContent.servers as { path: string }[]).map((s) => s.path);
      expect(paths).to.include.members(['mcp', 'svc-sidekick', 'gateway', 'agent-management', 'browser-automation']);
      expect(paths).to.not.include('other-api');
      expect(JSON.parse(mine.content[0].text)).to.deep.equal(mine.structuredContent);
      const theirs = await callTool(server, other.token, 'mcp', 'listServers', {});
      const entry = (theirs.structuredContent.servers as { path: string; embedded: boolean }[]).find(
        (s) => s.path === 'other-api',
      );
      expect(entry).to.deep.include({ name: 'Other API', embedded: false, tools: [] });
      // Another organisation's application server path is unknown here.
      expect((await rpc(server, org.token, 'other-api', 'tools/list')).status).to.equal(404);
    });
  });

  describe('MCP SDK client (StreamableHTTPClientTransport, stateless)', () => {
    it('connects, lists and calls tools on svc-sidekick and gateway', async () => {
      const sidekick = await sdkClient(server, org, 'svc-sidekick');
      try {
        const { tools } = await sidekick.listTools();
        expect(tools.map((t) => t.name)).to.have.members(['capabilities_discover', 'capability_details']);
        const found = await sidekick.callTool({
          name: 'capabilities_discover',
          arguments: { request: 'list the tool servers', types: ['tool'] },
        });
        const names = (found.structuredContent as { tools: { name: string }[] }).tools.map((t) => t.name);
        expect(names).to.include('listServers');
      } finally {
        await sidekick.close();
      }
      const gateway = await sdkClient(server, org, 'gateway');
      try {
        const { tools } = await gateway.listTools();
        expect(tools.map((t) => t.name)).to.have.members([
          'capabilities_discover',
          'capability_details',
          'gateway_invoke',
        ]);
        const res = await gateway.callTool({
          name: 'gateway_invoke',
          arguments: { server: 'mcp', tool: 'listServers', arguments: '{}' },
        });
        expect(res.isError).to.not.equal(true);
        expect((res.structuredContent as { servers: unknown[] }).servers.length).to.be.at.least(5);
      } finally {
        await gateway.close();
      }
    });

    it('the SDK client sees JSON-RPC errors as errors and tool failures as isError', async () => {
      const gateway = await sdkClient(server, org, 'gateway');
      try {
        let caught: unknown;
        try {
          await gateway.callTool({
            name: 'gateway_invoke',
            arguments: { server: 'mcp', tool: 'listServers', arguments: '{not json}' },
          });
        } catch (e) {
          caught = e;
        }
        expect(String(caught))
          .to.match(/-32000/)
          .and.match(/not valid JSON/);
      } finally {
        await gateway.close();
      }
    });
  });

  describe('gateway_invoke', () => {
    it('accepts arguments as an object or as a JSON string; rejects JSON that is not an object', async () => {
      const obj = await callTool(server, org.token, 'gateway', 'gateway_invoke', {
        server: 'svc-sidekick',
        tool: 'capability_details',
        arguments: { items: ['listServers'] },
      });
      const str = await callTool(server, org.token, 'gateway', 'gateway_invoke', {
        server: 'svc-sidekick',
        tool: 'capability_details',
        arguments: '{"items":["listServers"]}',
      });
      expect(str.structuredContent).to.deep.equal(obj.structuredContent);
      const arr = await callTool(server, org.token, 'gateway', 'gateway_invoke', {
        server: 'mcp',
        tool: 'listServers',
        arguments: '[1,2]',
      });
      expect(arr.code).to.equal(-32000);
      const omitted = await callTool(server, org.token, 'gateway', 'gateway_invoke', {
        server: 'mcp',
        tool: 'listServers',
      });
      expect(omitted.structuredContent.servers).to.be.an('array');
    });

    it("an unknown server or a call of itself is -32000; the target tool's validation errors come through", async () => {
      const unknown = await callTool(server, org.token, 'gateway', 'gateway_invoke', {
        server: 'nope',
        tool: 'x',
        arguments: {},
      });
      expect(unknown.code).to.equal(-32000);
      expect(unknown.message).to.include('nope');
      const self = await callTool(server, org.token, 'gateway', 'gateway_invoke', {
        server: 'gateway',
        tool: 'gateway_invoke',
        arguments: {},
      });
      expect(self.code).to.equal(-32000);
      const invalid = await callTool(server, org.token, 'gateway', 'gateway_invoke', {
        server: 'svc-sidekick',
        tool: 'capabilities_discover',
        arguments: { request: 5 },
      });
      expect(invalid.code).to.equal(-32000);
      const missing = await callTool(server, org.token, 'gateway', 'gateway_invoke', { tool: 'x' });
      expect(missing.code).to.equal(-32000);
    });
  });
});
