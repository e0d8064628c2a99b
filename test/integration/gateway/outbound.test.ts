/**
 * Application server upstreams go through the outbound policy (OUTBOUND_ALLOWLIST,
 * src/kernel/outbound.ts), like workflow `http` steps and event calls; decisions in
 * openapi/management.yaml (createAppServer, AppServerUpstream):
 * - at registration (op:createAppServer, op:updateAppServer), an upstream whose host is an IP
 *   literal in a refused range, `localhost`, or a name whose addresses include a refused one is
 *   answered 400 with the reason; a name that does not resolve is accepted;
 * - at connect time (op:postMcpMessage), on the address actually connected to: a registration
 *   made while its name was allowed is refused once the policy refuses it (two service starts on
 *   one store: the first allow-lists the host name `localhost`, the second allows nothing), and
 *   a redirect from an allowed upstream to a loopback address is not followed. Loopback
 *   listeners count the connections they receive: every refusal leaves them at 0.
 * With the allow-list, loopback upstreams of both kinds are proxied.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { storeKinds, createTestStore, type TestStore } from '../../helpers/store.js';
import { startTestServer, createTestOrg, call, type TestServer, type TestOrg } from '../../helpers/server.js';
import { startMcpFixture, type McpFixture } from '../../fixtures/upstreams/mcp-server.js';
import { petDocument, startPetApi, type HttpFixture } from '../../fixtures/upstreams/http-api.js';
import { callTool, createConnection, rpc } from './helpers.js';
import { counter } from '../upstream/setup.js';

const kinds = await storeKinds();

/** A loopback listener that counts the connections it receives and pipes them to `to` (127.0.0.1), if given. */

/** A runtime token of `org` issued by `server` (tokens name the issuing service's URL). */
async function tokenFrom(server: TestServer, org: TestOrg): Promise<string> {
  const res = await call<{ access_token: string }>(server.baseUrl, 'POST', '/oauth/token', {
    raw: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: org.clientId,
      client_secret: org.clientSecret,
      scope: `org:${org.orgId}`,
    }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  expect(res.status, res.text).to.equal(200);
  return res.body.access_token;
}

const mcpBody = (path: string, url: string, transport = 'streamable-http') => ({
  path,
  name: path,
  service_key: path,
  upstream: { type: 'mcp', url, transport },
  auth: { scheme: 'bearer' },
});
const openapiBody = (path: string, baseUrl: string) => ({
  path,
  name: path,
  service_key: path,
  upstream: { type: 'openapi', baseUrl, document: petDocument },
  auth: { scheme: 'bearer' },
});
const codingAgentBody = (path: string, baseUrl: string) => ({
  path,
  name: path,
  service_key: path,
  upstream: { type: 'coding-agent', baseUrl },
  auth: { scheme: 'bearer' },
});

/** Hosts (with a port where a listener could be) the policy refuses without OUTBOUND_ALLOWLIST, and the reason each names. */
function refusedHosts(port: number): Array<[string, RegExp]> {
  return [
    [`127.0.0.1:${port}`, /loopback address/],
    [`[::1]:${port}`, /loopback address/],
    [`localhost:${port}`, /loopback address/],
    [`[::ffff:127.0.0.1]:${port}`, /loopback address/],
    [`2130706433:${port}`, /loopback address/],
    ['10.1.2.3', /private address/],
    ['192.168.1.20:8080', /private address/],
    ['169.254.169.254', /link-local or cloud metadata address/],
    ['[fe80::1]', /link-local address/],
    [`0.0.0.0:${port}`, /unspecified address/],
  ];
}

for (const kind of kinds) {
  describe(`gateway: application server upstreams and the outbound policy (${kind})`, function () {
    this.timeout(60_000);
    let guarded: TestServer;
    let open: TestServer;
    let fixture: McpFixture;
    let pets: HttpFixture;

    before(async () => {
      fixture = await startMcpFixture();
      pets = await startPetApi();
      guarded = await startTestServer(kind, { OUTBOUND_ALLOWLIST: '' });
      open = await startTestServer(kind, {
        OUTBOUND_ALLOWLIST: '127.0.0.0/8,::1/128,10.0.0.0/8,192.168.0.0/16,169.254.0.0/16,fe80::/10,0.0.0.0/32',
      });
    });
    after(async () => {
      await guarded?.close();
      await open?.close();
      await fixture?.close();
      await pets?.close();
    });
    afterEach(() => {
      guarded.assertResponsesValid();
      open.assertResponsesValid();
    });

    const register = (server: TestServer, org: TestOrg, body: Record<string, unknown>) =>
      call(server.baseUrl, 'POST', '/v1/servers', { token: org.token, body });

    /** Every refused host, for one upstream kind: 400 with the reason without the allow-list (0 connections), 201 with it. */
    async function refusedThenAllowed(
      makeBody: (path: string, url: string) => Record<string, unknown>,
      field: 'url' | 'baseUrl',
      urlOf: (host: string) => string,
    ): Promise<void> {
      const listener = await counter('127.0.0.1');
      try {
        const guardedOrg = await createTestOrg(guarded);
        const openOrg = await createTestOrg(open);
        for (const [i, [host, reason]] of refusedHosts(listener.port).entries()) {
          const url = urlOf(host);
          const res = await register(guarded, guardedOrg, makeBody(`refused-${i}`, url));
          expect(res.status, `${url}: ${res.text}`).to.equal(400);
          expect(res.body.error, url).to.equal('invalid_request');
          expect(res.body.message, url)
            .to.match(reason)
            .and.to.match(/OUTBOUND_ALLOWLIST/)
            .and.to.match(new RegExp(`^upstream\\.${field} `));
          expect(res.body.details, url).to.deep.equal([
            { where: 'body', path: `/upstream/${field}`, message: res.body.message },
          ]);
          const allowed = await register(open, openOrg, makeBody(`allowed-${i}`, url));
          expect(allowed.status, `${url}: ${allowed.text}`).to.equal(201);
        }
        expect(listener.connections, 'connections made by registration').to.equal(0);
      } finally {
        await listener.close();
      }
    }

    it('refuses loopback, private, link-local and metadata remote MCP upstreams at registration (400 with the reason) unless OUTBOUND_ALLOWLIST allows them', async () => {
      await refusedThenAllowed(mcpBody, 'url', (host) => `http://${host}/mcp`);
    });

    it('refuses the same OpenAPI and coding-agent base URLs at registration unless OUTBOUND_ALLOWLIST allows them', async () => {
      await refusedThenAllowed(openapiBody, 'baseUrl', (host) => `http://${host}/api`);
      await refusedThenAllowed(codingAgentBody, 'baseUrl', (host) => `http://${host}`);
    });

    it("refuses an update to a refused upstream and keeps the stored one; accepts a name that does not resolve (checked at connect) and the service's own origin", async () => {
      const org = await createTestOrg(guarded);
      const created = await register(guarded, org, mcpBody('later', 'http://upstream.invalid/mcp'));
      expect(created.status, created.text).to.equal(201);
      const patch = (body: unknown) =>
        call(guarded.baseUrl, 'PATCH', `/v1/servers/${created.body.serverId}`, {
          token: org.token,
          body,
          headers: { 'if-match': '"1"' },
        });
      const refused = await patch({
        upstream: { type: 'openapi', baseUrl: 'http://169.254.169.254/latest', document: petDocument },
      });
      expect(refused.status, refused.text).to.equal(400);
      expect(refused.body.message).to.match(/^upstream\.baseUrl .*link-local or cloud metadata address/);
      const kept = await call(guarded.baseUrl, 'GET', `/v1/servers/${created.body.serverId}`, { token: org.token });
      expect(kept.body.upstream).to.deep.equal({
        type: 'mcp',
        url: 'http://upstream.invalid/mcp',
        transport: 'streamable-http',
      });
      expect((await patch({ name: 'renamed' })).status, 'a patch without upstream is not checked').to.equal(200);
      // The name that did not resolve fails at connect time with a clear JSON-RPC error.
      await createConnection(guarded, org, { name: 'Later', service_key: 'later' });
      const unresolved = await rpc(guarded, org.token, 'later', 'tools/list');
      expect(unresolved.status).to.equal(200);
      expect(unresolved.body.error.code).to.equal(-32000);
      expect(unresolved.body.error.message).to.match(/^upstream later tools\/list failed: the upstream is unreachable/);
      // The service's own origin stays allowed, as for http steps: the gateway proxies its own svc-sidekick.
      const own = await register(guarded, org, mcpBody('own', `${guarded.baseUrl}/mcp/svc-sidekick`));
      expect(own.status, own.text).to.equal(201);
      await createConnection(guarded, org, { name: 'Own', service_key: 'own', secret: org.token });
      const tools = await rpc(guarded, org.token, 'own', 'tools/list');
      expect(tools.body.result.tools.map((t: { name: string }) => t.name)).to.include('capabilities_discover');
    });

    it('with OUTBOUND_ALLOWLIST, proxies loopback upstreams of both kinds by address and by name; without it the same upstreams cannot be registered', async () => {
      const org = await createTestOrg(open);
      const guardedOrg = await createTestOrg(guarded);
      const mcp4 = await counter('127.0.0.1', Number(new URL(fixture.url).port));
      const mcp6 = await counter('::1', Number(new URL(fixture.url).port));
      const api = await counter('127.0.0.1', Number(new URL(pets.baseUrl).port));
      try {
        const upstreams = [
          mcpBody('mcp-v4', `http://127.0.0.1:${mcp4.port}/mcp`),
          mcpBody('mcp-v6', `http://[::1]:${mcp6.port}/mcp`),
          mcpBody('mcp-name', `http://localhost:${mcp4.port}/mcp`),
          mcpBody('mcp-sse', `http://localhost:${mcp4.port}/sse`, 'sse'),
          openapiBody('pets-name', `http://localhost:${api.port}/api`),
        ];
        for (const body of upstreams) {
          expect((await register(guarded, guardedOrg, body)).status, `${body.path} without the allow-list`).to.equal(
            400,
          );
          const res = await register(open, org, body);
          expect(res.status, res.text).to.equal(201);
          await createConnection(open, org, { name: body.path, service_key: body.service_key });
        }
        for (const path of ['mcp-v4', 'mcp-v6', 'mcp-name', 'mcp-sse']) {
          const list = await rpc(open, org.token, path, 'tools/list');
          expect(
            list.body.result?.tools?.map((t: { name: string }) => t.name),
            `${path}: ${list.text}`,
          ).to.include('echo');
          // Twice: the second call of a Streamable HTTP session takes the lean path on the pool's checked agent.
          for (const message of ['one', 'two']) {
            const echoed = await callTool(open, org.token, path, 'echo', { message });
            expect(echoed.structuredContent, `${path}: ${JSON.stringify(echoed)}`).to.deep.equal({ echo: message });
          }
        }
        const pet = await callTool(open, org.token, 'pets-name', 'pets_get', { petId: '1', 'X-Trace-Tag': 't' });
        expect(pet.structuredContent, JSON.stringify(pet)).to.deep.include({ id: '1', name: 'Rex' });
        expect(mcp4.connections).to.be.greaterThan(0);
        expect(mcp6.connections).to.be.greaterThan(0);
        expect(api.connections).to.be.greaterThan(0);
      } finally {
        await mcp4.close();
        await mcp6.close();
        await api.close();
      }
    });

    it('refuses at connect time a host name that passed registration and resolves to loopback (0 connections), with a clear JSON-RPC error', async () => {
      const store: TestStore = await createTestStore(kind);
      const mcp = await counter('127.0.0.1', Number(new URL(fixture.url).port));
      const api = await counter('127.0.0.1', Number(new URL(pets.baseUrl).port));
      let first: TestServer | undefined;
      let second: TestServer | undefined;
      try {
        // First start: the host name `localhost` is allow-listed, so these registrations are accepted.
        first = await startTestServer(kind, { OUTBOUND_ALLOWLIST: 'localhost' }, store);
        const org = await createTestOrg(first);
        for (const body of [
          mcpBody('named', `http://localhost:${mcp.port}/mcp?token=query-secret`),
          mcpBody('named-sse', `http://localhost:${mcp.port}/sse`, 'sse'),
          openapiBody('named-api', `http://localhost:${api.port}/api`),
          codingAgentBody('named-agent', `http://localhost:${api.port}`),
        ]) {
          const res = await register(first, org, body);
          expect(res.status, res.text).to.equal(201);
          await createConnection(first, org, {
            name: body.path,
            service_key: body.service_key,
            secret: 'connection-secret',
          });
        }
        await first.close();
        first = undefined;
        // Second start on the same store: nothing is allow-listed; `localhost` resolves to 127.0.0.1 at connect time.
        second = await startTestServer(kind, { OUTBOUND_ALLOWLIST: '' }, store);
        org.token = await tokenFrom(second, org);
        const calls: Array<[string, string, Record<string, unknown>]> = [
          ['named', 'echo', { message: 'x' }],
          ['named-sse', 'echo', { message: 'x' }],
          ['named-api', 'pets_get', { petId: '1', 'X-Trace-Tag': 't' }],
          [
            'named-agent',
            'coding-agent_launch',
            { prompt: { text: 'hi' }, repos: [{ url: 'https://github.com/acme/app' }] },
          ],
        ];
        for (const [path, tool, args] of calls) {
          const list = await rpc(second, org.token, path, 'tools/list');
          if (path === 'named' || path === 'named-sse') {
            expect(list.status).to.equal(200);
            expect(list.body.error, `${path}: ${list.text}`).to.deep.include({ code: -32000 });
            expect(list.body.error.message).to.equal(
              `upstream ${path} tools/list failed: the outbound policy refuses the upstream's address (loopback address (RFC 1122); allow it with OUTBOUND_ALLOWLIST)`,
            );
          }
          const res = await rpc(second, org.token, path, 'tools/call', { name: tool, arguments: args });
          expect(res.status).to.equal(200);
          expect(res.body.error, `${path}: ${res.text}`).to.deep.include({ code: -32000 });
          expect(res.body.error.message).to.equal(
            `upstream ${path} tools/call ${tool} failed: the outbound policy refuses the upstream's address (loopback address (RFC 1122); allow it with OUTBOUND_ALLOWLIST)`,
          );
          expect(res.text).to.not.match(/query-secret|connection-secret|localhost|127\.0\.0\.1/);
        }
        // listServers (the listing cache) shows the servers stale with the reason, and nothing crashed.
        const servers = await callTool(second, org.token, 'mcp', 'listServers', {});
        const named = (
          servers.structuredContent.servers as Array<{ path: string; tools: string[]; stale?: boolean; error?: string }>
        ).find((s) => s.path === 'named');
        expect(named?.tools, JSON.stringify(named)).to.deep.equal([]);
        expect(mcp.connections, 'connections to the MCP listener').to.equal(0);
        expect(api.connections, 'connections to the HTTP API listener').to.equal(0);
      } finally {
        await first?.close();
        await second?.close();
        await store.close();
        await mcp.close();
        await api.close();
      }
    });

    it('does not follow a redirect from an allowed upstream to a loopback address (0 connections at the loopback listener)', async () => {
      const store: TestStore = await createTestStore(kind);
      const target = await counter('127.0.0.1');
      const loopbackUrl = `http://127.0.0.1:${target.port}/mcp`;
      // The allowed upstream (127.0.0.2, allow-listed alone) answers every request with a redirect to the loopback listener.
      const redirector = http.createServer((req, res) => {
        req.resume();
        res.writeHead(req.method === 'GET' ? 302 : 307, { location: loopbackUrl });
        res.end();
      });
      await new Promise<void>((resolve) => redirector.listen(0, '127.0.0.2', resolve));
      const from = `http://127.0.0.2:${(redirector.address() as AddressInfo).port}`;
      let server: TestServer | undefined;
      try {
        server = await startTestServer(kind, { OUTBOUND_ALLOWLIST: '127.0.0.2/32' }, store);
        const org = await createTestOrg(server);
        expect(
          (await register(server, org, mcpBody('loopback', loopbackUrl))).status,
          'the loopback target itself',
        ).to.equal(400);
        for (const body of [
          mcpBody('hop', `${from}/mcp`),
          mcpBody('hop-sse', `${from}/sse`, 'sse'),
          openapiBody('hop-api', `${from}/api`),
        ]) {
          const res = await register(server, org, body);
          expect(res.status, res.text).to.equal(201);
          await createConnection(server, org, { name: body.path, service_key: body.service_key });
        }
        for (const path of ['hop', 'hop-sse']) {
          const res = await callTool(server, org.token, path, 'echo', { message: 'x' });
          expect(res.code, `${path}: ${JSON.stringify(res)}`).to.equal(-32000);
          expect(res.message).to.match(new RegExp(`^upstream ${path} tools/call echo failed`));
        }
        const api = await callTool(server, org.token, 'hop-api', 'pets_get', { petId: '1', 'X-Trace-Tag': 't' });
        expect(api.isError, JSON.stringify(api)).to.equal(true);
        expect(api.structuredContent.status).to.equal(302);
        expect(target.connections, 'connections to the loopback listener').to.equal(0);
        server.assertResponsesValid();
      } finally {
        await server?.close();
        await store.close();
        redirector.closeAllConnections();
        await new Promise((resolve) => redirector.close(resolve));
        await target.close();
      }
    });
  });
}
