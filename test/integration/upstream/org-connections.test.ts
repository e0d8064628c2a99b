/**
 * The upstream pool keeps each organisation's connections apart (src/gateway/upstream/pool.ts,
 * src/kernel/org-pools.ts; README "Caches"): an organisation's call to an upstream never travels
 * on a keep-alive connection another organisation's calls opened (the saved handshake would tell
 * it, by timing, that someone called that upstream lately), while its own repeat calls reuse
 * its own. A loopback listener in front of a real MCP upstream counts the connections.
 */
import { expect } from 'chai';
import { createAppToolServer, UpstreamPool } from '../../../src/gateway/upstream/index.js';
import { createAppServer, type AppServerCreate } from '../../../src/gateway/registry.js';
import { startMcpFixture, type McpFixture } from '../../fixtures/upstreams/mcp-server.js';
import { petDocument, startPetApi, type HttpFixture } from '../../fixtures/upstreams/http-api.js';
import { counter, setup, LOOPBACK, type Env } from './setup.js';

describe('upstream: connections per organisation', function () {
  this.timeout(30_000);
  let env: Env;
  let fixture: McpFixture;
  let pets: HttpFixture;
  let pool: UpstreamPool;

  beforeEach(async () => {
    env = await setup();
    fixture = await startMcpFixture();
    pets = await startPetApi();
  });
  afterEach(async () => {
    await pool?.close();
    await fixture.close();
    await pets.close();
    await env.close();
  });

  for (const kind of ['mcp', 'openapi'] as const) {
    it(`an organisation's ${kind} calls never reuse another organisation's connections, and reuse their own`, async () => {
      pool = new UpstreamPool({ outbound: LOOPBACK, timeoutMs: 5_000 });
      const target = kind === 'mcp' ? fixture.url : pets.baseUrl;
      const listener = await counter('127.0.0.1', Number(new URL(target).port));
      try {
        const base = `http://127.0.0.1:${listener.port}`;
        const upstream: AppServerCreate['upstream'] =
          kind === 'mcp'
            ? { type: 'mcp', url: `${base}${new URL(fixture.url).pathname}`, transport: 'streamable-http' }
            : { type: 'openapi', baseUrl: `${base}/api`, document: petDocument };
        const input: AppServerCreate = {
          path: 'echo',
          name: 'Echo',
          service_key: 'echo',
          upstream,
          auth: { scheme: 'bearer' },
        };
        const mine = createAppToolServer(await env.server(input), undefined, pool);
        const theirs = createAppToolServer(await createAppServer(env.store.db, env.otherOrgId, input), undefined, pool);
        const pcid = await env.connection({ service_key: 'echo', secret: 'first-org-secret' });
        const theirPcid = await env.connection({ service_key: 'echo', secret: 'second-org-secret' }, env.otherOrgId);
        const call = async (server: typeof mine, orgId: string, PCID: string) => {
          const ctx = env.ctx({ orgId });
          const r =
            kind === 'mcp'
              ? await server.callTool(ctx, 'echo', { PCID, message: 'hi' })
              : await server.callTool(ctx, 'listPets', { PCID });
          expect(r.isError ?? false).to.equal(false);
        };

        await call(mine, env.orgId, pcid);
        await call(mine, env.orgId, pcid);
        const afterMine = listener.connections;
        expect(afterMine).to.be.above(0);
        await call(theirs, env.otherOrgId, theirPcid);
        expect(listener.connections, 'the other organisation opens its own connection').to.be.above(afterMine);
        const afterTheirs = listener.connections;
        await call(mine, env.orgId, pcid);
        expect(listener.connections, 'the first organisation reuses its own').to.equal(afterTheirs);
        // Each connection carried one organisation's requests only (each sends its own credential).
        const carriers = (secret: string) => listener.sent.filter((s) => s.includes(`Bearer ${secret}`)).length;
        expect(carriers('first-org-secret')).to.be.above(0);
        expect(carriers('second-org-secret')).to.be.above(0);
        expect(carriers('first-org-secret') + carriers('second-org-secret')).to.equal(listener.connections);
      } finally {
        await listener.close();
      }
    });
  }
});
