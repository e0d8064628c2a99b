/**
 * `health` of the application server resource (openapi/management.yaml `AppServerHealth`): a
 * healthy upstream and one on a closed port start `unknown`; after a listServers call the
 * healthy one is `fresh` with its listing time and the broken one `failing` with its error, in
 * GET /v1/servers and GET /v1/servers/{serverId}; a new registration version starts `unknown`.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { startTestServer, createTestOrg, call, type TestServer, type TestOrg } from '../../helpers/server.js';
import { startMcpFixture, type McpFixture } from '../../fixtures/upstreams/mcp-server.js';
import { callTool, createConnection, registerServer } from './helpers.js';

async function closedPortUrl(): Promise<string> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return `http://127.0.0.1:${port}/mcp`;
}

describe('gateway: upstream health on the server resource', function () {
  this.timeout(60_000);
  let server: TestServer;
  let org: TestOrg;
  let healthy: McpFixture;
  const ids: Record<string, string> = {};

  before(async () => {
    healthy = await startMcpFixture();
    server = await startTestServer('sqlite');
    org = await createTestOrg(server, 'Health org');
    for (const [name, url] of [
      ['healthy', healthy.url],
      ['closed', await closedPortUrl()],
    ] as const) {
      ids[name] = (
        await registerServer(server, org, {
          path: name,
          name: `${name} server`,
          service_key: name,
          upstream: { type: 'mcp', url, transport: 'streamable-http' },
          auth: { scheme: 'none' },
        })
      ).serverId;
      await createConnection(server, org, { name: `${name} conn`, service_key: name });
    }
  });
  after(async () => {
    await server?.close();
    await healthy?.close();
  });
  afterEach(() => server.assertResponsesValid());

  const healthOf = async () => {
    const res = await call(server.baseUrl, 'GET', '/v1/servers', { token: org.token });
    expect(res.status, res.text).to.equal(200);
    return Object.fromEntries(res.body.items.map((s: any) => [s.path, s.health]));
  };

  it('op:listAppServers and op:getAppServer carry health: unknown, then fresh or failing after a listing', async () => {
    const before = await healthOf();
    expect(before.healthy).to.deep.equal({ status: 'unknown', lastListedAt: null, lastError: null });
    expect(before.closed.status).to.equal('unknown');

    const t0 = Date.now();
    const deadline = t0 + 20_000;
    let after = before;
    while (Date.now() < deadline) {
      await callTool(server, org.token, 'mcp', 'listServers', {});
      after = await healthOf();
      if (after.healthy.status === 'fresh' && after.closed.status === 'failing') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(after.healthy.status).to.equal('fresh');
    expect(Date.parse(after.healthy.lastListedAt)).to.be.at.least(t0 - 1000);
    expect(after.healthy.lastError).to.equal(null);
    expect(after.closed).to.include({ status: 'failing', lastListedAt: null });
    expect(after.closed.lastError).to.be.a('string').and.not.equal('');

    const one = await call(server.baseUrl, 'GET', `/v1/servers/${ids.closed}`, { token: org.token });
    expect(one.body.health.status).to.equal('failing');
  });

  it('op:updateAppServer: a new registration version starts unknown', async () => {
    const got = await call(server.baseUrl, 'GET', `/v1/servers/${ids.healthy}`, { token: org.token });
    const updated = await call(server.baseUrl, 'PATCH', `/v1/servers/${ids.healthy}`, {
      token: org.token,
      headers: { 'if-match': `"${got.body.version}"` },
      body: { description: 'Changed.' },
    });
    expect(updated.status, updated.text).to.equal(200);
    expect(updated.body.health.status).to.equal('unknown');
  });
});
