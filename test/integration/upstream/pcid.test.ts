/**
 * PCID rules of application tools (spec sections 7, "Connection" and Authentication 5): the
 * connection must belong to the organisation, match the service key (a child server uses its
 * parent's), and be connected; a missing PCID is filled in only when it is unambiguous.
 */
import { expect } from 'chai';
import { updateConnection } from '../../../src/connections/index.js';
import type { AppServer } from '../../../src/gateway/registry.js';
import { createAppToolServer, resolvePcid, UpstreamPool } from '../../../src/gateway/upstream/index.js';
import { startMcpFixture, type McpFixture } from '../../fixtures/upstreams/mcp-server.js';
import { gatewayError, setup, LOOPBACK, type Env } from './setup.js';

describe('upstream: PCID rules', function () {
  this.timeout(30_000);
  let env: Env;
  let fx: McpFixture;
  let pool: UpstreamPool;
  let reg: AppServer;

  beforeEach(async () => {
    env = await setup();
    fx = await startMcpFixture();
    // TTL 0: every lookup reads the store, so status changes show at once in these tests.
    pool = new UpstreamPool({ outbound: LOOPBACK, timeoutMs: 5_000, connectionTtlMs: 0 });
    reg = await env.server({
      path: 'github',
      name: 'GitHub',
      service_key: 'github',
      auth: { scheme: 'bearer' },
      upstream: { type: 'mcp', url: fx.url, transport: 'streamable-http' },
    });
  });
  afterEach(async () => {
    await pool.close();
    await fx.close();
    await env.close();
  });

  const echo = (pcid: unknown, server = reg, parent?: AppServer) =>
    createAppToolServer(server, parent, pool).callTool(
      env.ctx(),
      'echo',
      pcid === undefined ? { message: 'm' } : { PCID: pcid, message: 'm' },
    );

  it('accepts a connected connection of the organisation for the service', async () => {
    const pcid = await env.connection({ service_key: 'github', name: 'Work GitHub' });
    expect((await echo(pcid)).structuredContent).to.deep.equal({ echo: 'm' });
  });

  it('refuses a PCID of another organisation exactly like an unknown one', async () => {
    const foreign = await env.connection({ service_key: 'github', name: 'Their GitHub' }, env.otherOrgId);
    const a = await gatewayError(echo(foreign));
    expect(a.message).to.equal(`unknown PCID "${foreign}": no such connection in this organisation`);
    expect(a.message).to.not.include('Their GitHub');
    const b = await gatewayError(echo('pcid_00000000000000000000000000000000'));
    expect(b.message).to.equal(
      'unknown PCID "pcid_00000000000000000000000000000000": no such connection in this organisation',
    );
    expect(fx.requests).to.have.length(0);
  });

  it('refuses a non-string PCID', async () => {
    expect((await gatewayError(echo(42))).message).to.equal('PCID must be a string (the connection id)');
  });

  it('refuses a connection of another service', async () => {
    const slack = await env.connection({ service_key: 'slack', name: 'Slack' });
    const err = await gatewayError(echo(slack));
    expect(err.message).to.equal(`PCID ${slack} is a connection for service "slack", not "github"`);
  });

  it('refuses connections in status error or disconnected, naming the status', async () => {
    for (const status of ['error', 'disconnected'] as const) {
      const pcid = await env.connection({ service_key: 'github', name: `GH ${status}`, status });
      const err = await gatewayError(echo(pcid));
      expect(err.message).to.equal(`connection GH ${status} (${pcid}) is ${status}, not connected`);
    }
  });

  it('honours a status change (revocation) at once with TTL 0 and within the TTL otherwise', async () => {
    const pcid = await env.connection({ service_key: 'github' });
    await echo(pcid);
    await updateConnection(env.store.db, env.orgId, pcid, {
      expectedVersion: 1,
      patch: { status: 'disconnected' },
      config: env.config,
    });
    expect((await gatewayError(echo(pcid))).message).to.match(/is disconnected, not connected/);

    const cached = new UpstreamPool({ outbound: LOOPBACK, connectionTtlMs: 200 });
    try {
      const other = await env.connection({ service_key: 'github' });
      await resolvePcid(env.ctx(), ['github'], other, cached.connections);
      await updateConnection(env.store.db, env.orgId, other, {
        expectedVersion: 1,
        patch: { status: 'error' },
        config: env.config,
      });
      await new Promise((r) => setTimeout(r, 250));
      expect((await gatewayError(resolvePcid(env.ctx(), ['github'], other, cached.connections))).message).to.match(
        /is error, not connected/,
      );
    } finally {
      await cached.close();
    }
  });

  describe('missing PCID', () => {
    it('with no connected connection: says none exists for the service', async () => {
      await env.connection({ service_key: 'github', status: 'disconnected' });
      await env.connection({ service_key: 'slack' });
      const err = await gatewayError(echo(undefined));
      expect(err.message).to.equal(
        'PCID is required: no connected connection exists for service "github" in this organisation',
      );
      expect((await gatewayError(echo(''))).message).to.equal(err.message);
    });

    it('with exactly one connected connection: uses it', async () => {
      await env.connection({ service_key: 'github', status: 'error' });
      await env.connection({ service_key: 'github', secret: 'only-one' });
      await env.connection({ service_key: 'github', secret: 'foreign' }, env.otherOrgId);
      const r = await createAppToolServer(reg, undefined, pool).callTool(env.ctx(), 'whoami', {});
      expect((r.structuredContent as { headers: Record<string, string> }).headers.authorization).to.equal(
        'Bearer only-one',
      );
    });

    it('with several: lists their names and ids', async () => {
      const a = await env.connection({ service_key: 'github', name: 'Work' });
      const b = await env.connection({ service_key: 'github', name: 'Personal' });
      const err = await gatewayError(echo(undefined));
      expect(err.message).to.equal(
        `PCID is required: several connected connections exist for service "github": Work (${a}), Personal (${b}); pass one as PCID`,
      );
    });
  });

  describe('child servers', () => {
    let child: AppServer;
    beforeEach(async () => {
      child = await env.server({
        path: 'github-issues',
        name: 'GitHub Issues',
        service_key: 'github-issues',
        parentPath: 'github',
        auth: { scheme: 'bearer' },
        upstream: { type: 'mcp', url: fx.url, transport: 'streamable-http' },
      });
    });

    it('use the parent PCID; the server reports the parent service key', async () => {
      const pcid = await env.connection({ service_key: 'github', secret: 'parent-secret' });
      const server = createAppToolServer(child, reg, pool);
      expect(server.serviceKey).to.equal('github');
      const r = await server.callTool(env.ctx(), 'whoami', { PCID: pcid });
      expect((r.structuredContent as { headers: Record<string, string> }).headers.authorization).to.equal(
        'Bearer parent-secret',
      );
      expect((await server.listTools(env.ctx())).map((t) => t.name)).to.include('whoami');
    });

    it('inject the single parent connection and name the parent service', async () => {
      const none = await gatewayError(echo(undefined, child, reg));
      expect(none.message).to.match(/no connected connection exists for service "github"/);
      await env.connection({ service_key: 'github' });
      expect((await echo(undefined, child, reg)).structuredContent).to.deep.equal({ echo: 'm' });
    });

    it('refuse connections of unrelated services', async () => {
      const other = await env.connection({ service_key: 'gitlab' });
      const err = await gatewayError(echo(other, child, reg));
      expect(err.message).to.equal(`PCID ${other} is a connection for service "gitlab", not "github"`);
    });
  });
});
