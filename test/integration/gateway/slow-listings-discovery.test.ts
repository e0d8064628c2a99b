/**
 * Discovery indexes an application server's tools as soon as its first listing arrives
 * (src/gateway/catalog.ts fingerprint, src/gateway/upstream/listings.ts generation): several
 * upstreams that answer `tools/list` only after the listing budget are registered together;
 * the first capabilities_discover answers within the budget without their tools, and once
 * their listings have arrived the next lookups find every one of them, with no registration,
 * connection or collection change and long before the periodic refresh.
 */
import { expect } from 'chai';
import { startTestServer, createTestOrg, type TestServer, type TestOrg } from '../../helpers/server.js';
import { startMcpFixture, type McpFixture } from '../../fixtures/upstreams/mcp-server.js';
import { callTool, createConnection, registerServer } from './helpers.js';

const SLOW = 6;
const LIST_DELAY_MS = 4_000;

describe('gateway: discovery finds slow upstreams once their first listing arrives', function () {
  this.timeout(60_000);
  let server: TestServer;
  let org: TestOrg;
  const upstreams: McpFixture[] = [];

  before(async () => {
    server = await startTestServer('sqlite');
    org = await createTestOrg(server, 'Slow listings org');
    for (let i = 0; i < SLOW; i++) {
      const upstream = await startMcpFixture({ listDelayMs: LIST_DELAY_MS });
      upstreams.push(upstream);
      await registerServer(server, org, {
        path: `slow-${i}`,
        name: `Slow ${i}`,
        description: `Slow upstream number ${i}.`,
        service_key: `slow-${i}`,
        upstream: { type: 'mcp', url: upstream.url, transport: 'streamable-http' },
        auth: { scheme: 'none' },
      });
      await createConnection(server, org, { name: `slow ${i} conn`, service_key: `slow-${i}` });
    }
  });
  after(async () => {
    await server?.close();
    for (const u of upstreams) await u.close();
  });

  const echoServers = async (): Promise<Set<string>> => {
    const found = await callTool(server, org.token, 'svc-sidekick', 'capabilities_discover', {
      request: 'echo a message back',
      types: ['tool'],
      limit: 50,
    });
    const tools = found.structuredContent.tools as Array<{ name: string; serverName: string }>;
    return new Set(tools.filter((t) => t.name === 'echo').map((t) => t.serverName));
  };

  it('the first lookup answers within the budget without them; after their listings arrive every one is found', async () => {
    const t0 = performance.now();
    const first = await echoServers();
    expect(performance.now() - t0, 'the first lookup does not wait for the listings (1 s listing budget)').to.be.below(
      LIST_DELAY_MS,
    );
    expect(first.size, 'no slow upstream has listed yet').to.equal(0);

    // The listings land about LIST_DELAY_MS after they were asked; the periodic refresh is minutes away.
    const deadline = performance.now() + LIST_DELAY_MS + 8_000;
    let seen = new Set<string>();
    while (performance.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      seen = await echoServers();
      if (seen.size === SLOW) break;
    }
    expect([...seen].sort()).to.deep.equal(Array.from({ length: SLOW }, (_, i) => `slow-${i}`).sort());
    // Once indexed, a lookup is served from the index (no wait on an upstream).
    const t1 = performance.now();
    expect((await echoServers()).size).to.equal(SLOW);
    expect(performance.now() - t1).to.be.below(500);
    server.assertResponsesValid();
  });
});
