/**
 * Remote MCP upstreams against our own SDK fixture server (spec sections 5, 7 and
 * Authentication 5): the credential the upstream sees, pass-through of results, session
 * caching and re-initialisation, timeouts, unreachable upstreams and the legacy SSE transport.
 */
import { expect } from 'chai';
import { createAppToolServer, listAppServerTools, UpstreamPool } from '../../../src/gateway/upstream/index.js';
import type { AppServer } from '../../../src/gateway/registry.js';
import type { UpstreamAuth } from '../../../src/gateway/registry-validate.js';
import { startMcpFixture, type McpFixture } from '../../fixtures/upstreams/mcp-server.js';
import { freePort, gatewayError, setup, LOOPBACK, type Env } from './setup.js';

describe('upstream: remote MCP server (fixture)', function () {
  this.timeout(30_000);
  let env: Env;
  let fx: McpFixture;
  let pool: UpstreamPool;
  let n = 0;

  beforeEach(async () => {
    env = await setup();
    fx = await startMcpFixture();
    pool = new UpstreamPool({ outbound: LOOPBACK, timeoutMs: 5_000 });
  });
  afterEach(async () => {
    await pool.close();
    await fx.close();
    await env.close();
  });

  async function register(
    auth: UpstreamAuth = { scheme: 'bearer' },
    transport: 'streamable-http' | 'sse' = 'streamable-http',
  ): Promise<AppServer> {
    n++;
    return env.server({
      path: `fixture-${n}`,
      name: 'Fixture',
      service_key: 'fixture',
      auth,
      upstream: { type: 'mcp', url: transport === 'sse' ? fx.sseUrl : fx.url, transport },
    });
  }

  const whoami = async (reg: AppServer, pcid: string, forwarded: Record<string, string> = {}) => {
    const r = await createAppToolServer(reg, undefined, pool).callTool(
      env.ctx({ forwardedHeaders: forwarded }),
      'whoami',
      { PCID: pcid },
    );
    return (r.structuredContent as { headers: Record<string, string> }).headers;
  };

  describe('credentials (spec Authentication 5)', () => {
    it('bearer: Authorization carries the connection secret, on every request', async () => {
      const reg = await register({ scheme: 'bearer' });
      const pcid = await env.connection({ service_key: 'fixture', secret: 'tok-123' });
      const h = await whoami(reg, pcid, { authorization: 'Bearer caller-token' });
      expect(h.authorization).to.equal('Bearer tok-123');
      expect(fx.requests.length).to.be.greaterThan(1);
      for (const r of fx.requests) expect(r.headers.authorization).to.equal('Bearer tok-123');
    });

    it('bearer with a secret object uses its token field', async () => {
      const reg = await register({ scheme: 'bearer' });
      const pcid = await env.connection({ service_key: 'fixture', secret: { token: 'obj-tok', other: 'x' } });
      expect((await whoami(reg, pcid)).authorization).to.equal('Bearer obj-tok');
      const pcid2 = await env.connection({ service_key: 'fixture', secret: { apiKey: 'api-key-1' } });
      expect((await whoami(reg, pcid2)).authorization).to.equal('Bearer api-key-1');
    });

    it('header: the secret in the named header and no Authorization', async () => {
      const reg = await register({ scheme: 'header', headerName: 'X-Api-Key' });
      const pcid = await env.connection({ service_key: 'fixture', secret: 'hdr-secret' });
      const h = await whoami(reg, pcid, { 'x-api-key': 'forged' });
      expect(h['x-api-key']).to.equal('hdr-secret');
      expect(h).to.not.have.property('authorization');
    });

    it('basic: {username, password} and "user:pass" become Basic credentials', async () => {
      const reg = await register({ scheme: 'basic' });
      const a = await env.connection({ service_key: 'fixture', secret: { username: 'ann', password: 'pw:1' } });
      expect((await whoami(reg, a)).authorization).to.equal(`Basic ${Buffer.from('ann:pw:1').toString('base64')}`);
      const b = await env.connection({ service_key: 'fixture', secret: 'bob:secret' });
      expect((await whoami(reg, b)).authorization).to.equal(`Basic ${Buffer.from('bob:secret').toString('base64')}`);
    });

    it('none: no credential at all', async () => {
      const reg = await register({ scheme: 'none' });
      const pcid = await env.connection({ service_key: 'fixture', secret: 'unused' });
      const h = await whoami(reg, pcid);
      expect(h).to.not.have.property('authorization');
      for (const r of fx.requests) expect(JSON.stringify(r.headers)).to.not.include('unused');
    });

    it('a secret that does not fit the scheme fails without showing it', async () => {
      const reg = await register({ scheme: 'basic' });
      const pcid = await env.connection({ service_key: 'fixture', secret: 'no-colon-secret' });
      const err = await gatewayError(
        createAppToolServer(reg, undefined, pool).callTool(env.ctx(), 'whoami', { PCID: pcid }),
      );
      expect(err.message).to.match(/no usable secret for auth scheme basic/);
      expect(err.message).to.not.include('no-colon-secret');
    });
  });

  describe('pass-through', () => {
    it('structuredContent, content and _meta unchanged; PCID stripped', async () => {
      const reg = await register();
      const pcid = await env.connection({ service_key: 'fixture' });
      const s = createAppToolServer(reg, undefined, pool);
      expect(await s.callTool(env.ctx(), 'echo', { PCID: pcid, message: 'hi' })).to.deep.equal({
        content: [{ type: 'text', text: 'echo: hi' }],
        structuredContent: { echo: 'hi' },
        _meta: { fixture: 'yes' },
      });
      expect(await s.callTool(env.ctx(), 'fail', { PCID: pcid })).to.deep.equal({
        content: [{ type: 'text', text: 'it went wrong' }],
        isError: true,
      });
      const args = await s.callTool(env.ctx(), 'args', { PCID: pcid, x: 1 });
      expect(args.structuredContent).to.deep.equal({ args: { x: 1 } });
    });

    it('tools/list adds PCID; listAppServerTools gives [] without a connection', async () => {
      const reg = await register();
      const s = createAppToolServer(reg, undefined, pool);
      expect(await s.listTools(env.ctx())).to.deep.equal([]);
      expect(await listAppServerTools(env.ctx(), reg, undefined, pool)).to.deep.equal([]);
      expect(fx.requests).to.have.length(0);
      await env.connection({ service_key: 'fixture' });
      // The "none" answer is cached for 2 s; the process that changes a connection forgets it.
      expect(await s.listTools(env.ctx())).to.deep.equal([]);
      pool.connections.forgetOrg(env.orgId);
      const tools = await listAppServerTools(env.ctx(), reg, undefined, pool);
      expect(tools.map((t) => t.name)).to.have.members(['whoami', 'echo', 'fail', 'args', 'slow']);
      const echo = tools.find((t) => t.name === 'echo')!;
      expect(echo.inputSchema.required).to.deep.equal(['message', 'PCID']);
      expect(echo.inputSchema.properties).to.have.keys(['message', 'PCID']);
    });
  });

  describe('sessions', () => {
    it('concurrent first calls share one connect; later calls reuse the session', async () => {
      const reg = await register();
      const pcid = await env.connection({ service_key: 'fixture' });
      const s = createAppToolServer(reg, undefined, pool);
      await Promise.all([1, 2, 3, 4, 5].map((i) => s.callTool(env.ctx(), 'echo', { PCID: pcid, message: String(i) })));
      await s.callTool(env.ctx(), 'echo', { PCID: pcid, message: 'again' });
      expect(fx.sessionsOpened).to.equal(1);
      expect(pool.size).to.equal(1);
    });

    it('different forwarded values, connections or servers never share a session', async () => {
      const reg = await register();
      const reg2 = await register();
      const a = await env.connection({ service_key: 'fixture', secret: 'a' });
      const b = await env.connection({ service_key: 'fixture', secret: 'b' });
      await whoami(reg, a, { 'x-tenant': 'one' });
      await whoami(reg, a, { 'x-tenant': 'one' });
      expect(fx.sessionsOpened).to.equal(1);
      expect((await whoami(reg, a, { 'x-tenant': 'two' }))['x-tenant']).to.equal('two');
      expect(fx.sessionsOpened).to.equal(2);
      await whoami(reg, a);
      expect(fx.sessionsOpened).to.equal(3);
      await whoami(reg, b, { 'x-tenant': 'one' });
      expect(fx.sessionsOpened).to.equal(4);
      await whoami(reg2, a, { 'x-tenant': 'one' });
      expect(fx.sessionsOpened).to.equal(5);
      expect(pool.size).to.equal(5);
    });

    it('re-initialises once when the upstream answers 404 for the session', async () => {
      const reg = await register();
      const pcid = await env.connection({ service_key: 'fixture' });
      const s = createAppToolServer(reg, undefined, pool);
      await s.callTool(env.ctx(), 'echo', { PCID: pcid, message: 'one' });
      const oldIds = fx.sessionIds();
      fx.dropSessions();
      const r = await s.callTool(env.ctx(), 'echo', { PCID: pcid, message: 'two' });
      expect(r.structuredContent).to.deep.equal({ echo: 'two' });
      expect(fx.sessionsOpened).to.equal(2);
      const newIds = fx.sessionIds();
      expect(newIds).to.have.length(1);
      expect(oldIds).to.not.include(newIds[0]);
      const statuses = fx.requests.filter((q) => q.method === 'POST').map((q) => q.headers['mcp-session-id']);
      expect(statuses).to.include(oldIds[0]);
    });

    it('closes idle sessions and keeps at most maxSessions', async () => {
      await pool.close();
      pool = new UpstreamPool({ outbound: LOOPBACK, idleMs: 150, maxSessions: 2, timeoutMs: 5_000 });
      const reg = await register();
      const pcid = await env.connection({ service_key: 'fixture' });
      const s = createAppToolServer(reg, undefined, pool);
      for (const tenant of ['a', 'b', 'c']) {
        await s.callTool(env.ctx({ forwardedHeaders: { 'x-tenant': tenant } }), 'echo', {
          PCID: pcid,
          message: tenant,
        });
      }
      expect(pool.size).to.equal(2);
      await new Promise((r) => setTimeout(r, 500));
      expect(pool.size).to.equal(0);
      // Closing a session ends it upstream too (HTTP DELETE).
      expect(fx.requests.filter((q) => q.method === 'DELETE').length).to.equal(3);
    });

    it('a new connection secret opens a new session with the new credential', async () => {
      await pool.close();
      pool = new UpstreamPool({ outbound: LOOPBACK, timeoutMs: 5_000, connectionTtlMs: 0 });
      const reg = await register();
      const pcid = await env.connection({ service_key: 'fixture', secret: 'old' });
      expect((await whoami(reg, pcid)).authorization).to.equal('Bearer old');
      const { updateConnection } = await import('../../../src/connections/index.js');
      await updateConnection(env.store.db, env.orgId, pcid, {
        expectedVersion: 1,
        patch: { secret: 'new' },
        config: env.config,
      });
      expect((await whoami(reg, pcid)).authorization).to.equal('Bearer new');
    });
  });

  describe('failures', () => {
    it('an upstream slower than the timeout answers -32000 naming what timed out', async () => {
      await pool.close();
      pool = new UpstreamPool({ outbound: LOOPBACK, timeoutMs: 300 });
      const reg = await register();
      const pcid = await env.connection({ service_key: 'fixture' });
      const s = createAppToolServer(reg, undefined, pool);
      const started = Date.now();
      const err = await gatewayError(s.callTool(env.ctx(), 'slow', { PCID: pcid, ms: 3_000 }));
      expect(err.message).to.equal(`upstream ${reg.path} tools/call slow timed out after 300 ms`);
      expect(Date.now() - started).to.be.lessThan(1_500);
      // The session survives a timeout.
      expect((await s.callTool(env.ctx(), 'slow', { PCID: pcid, ms: 1 })).structuredContent).to.deep.equal({
        slept: 1,
      });
    });

    it('the call signal aborts the upstream call', async () => {
      const reg = await register();
      const pcid = await env.connection({ service_key: 'fixture' });
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 100);
      const err = await gatewayError(
        createAppToolServer(reg, undefined, pool).callTool(env.ctx({ signal: ac.signal }), 'slow', {
          PCID: pcid,
          ms: 3_000,
        }),
      );
      expect(err.message).to.match(/tools\/call slow was cancelled/);
    });

    it('an unreachable upstream answers -32000 without URL, stack or secret', async () => {
      const port = await freePort();
      const reg = await env.server({
        path: 'gone',
        name: 'Gone',
        service_key: 'fixture',
        auth: { scheme: 'bearer' },
        upstream: { type: 'mcp', url: `http://127.0.0.1:${port}/mcp?key=url-secret`, transport: 'streamable-http' },
      });
      const pcid = await env.connection({ service_key: 'fixture', secret: 'conn-secret' });
      const err = await gatewayError(
        createAppToolServer(reg, undefined, pool).callTool(env.ctx(), 'echo', { PCID: pcid, message: 'x' }),
      );
      expect(err.message).to.equal('upstream gone tools/call echo failed: the upstream is unreachable (ECONNREFUSED)');
      expect(err.stack ?? '').to.not.include('conn-secret');
      const list = await gatewayError(createAppToolServer(reg, undefined, pool).listTools(env.ctx()));
      expect(list.message).to.equal('upstream gone tools/list failed: the upstream is unreachable (ECONNREFUSED)');
      expect(await listAppServerTools(env.ctx(), reg, undefined, pool)).to.deep.equal([]);
    });

    it('an upstream that refuses the credential answers -32000 saying so', async () => {
      const reg = await env.server({
        path: 'refuses',
        name: 'Refuses',
        service_key: 'fixture',
        auth: { scheme: 'bearer' },
        upstream: { type: 'mcp', url: fx.url.replace('/mcp', '/nothing-here'), transport: 'streamable-http' },
      });
      const pcid = await env.connection({ service_key: 'fixture' });
      const err = await gatewayError(
        createAppToolServer(reg, undefined, pool).callTool(env.ctx(), 'echo', { PCID: pcid, message: 'x' }),
      );
      expect(err.message).to.equal('upstream refuses tools/call echo failed: the upstream answered HTTP 404');
      // A failed connect is not retried as a "gone session".
      expect(fx.requests.filter((q) => q.path === '/nothing-here')).to.have.length(1);
    });

    it('an upstream that answers 401 says the credential was refused, without showing it', async () => {
      const reg = await register();
      const pcid = await env.connection({ service_key: 'fixture', secret: 'revoked' });
      const err = await gatewayError(
        createAppToolServer(reg, undefined, pool).callTool(env.ctx(), 'echo', { PCID: pcid, message: 'x' }),
      );
      expect(err.message).to.equal(
        `upstream ${reg.path} tools/call echo failed: the upstream refused the connection's credential (HTTP 401)`,
      );
    });

    it('an unknown upstream tool comes back as the upstream reports it', async () => {
      const reg = await register();
      const pcid = await env.connection({ service_key: 'fixture' });
      // The SDK server reports an unknown tool as a tool error result, which passes through.
      const r = await createAppToolServer(reg, undefined, pool).callTool(env.ctx(), 'no-such-tool', { PCID: pcid });
      expect(r.isError).to.equal(true);
      expect(r.content[0]!.text).to.include('no-such-tool');
    });

    it('an upstream JSON-RPC error keeps its code and message', async () => {
      const reg = await register();
      const pcid = await env.connection({ service_key: 'fixture' });
      const err = await gatewayError(
        createAppToolServer(reg, undefined, pool).callTool(env.ctx(), 'rpc-error', { PCID: pcid }),
        -32602,
      );
      expect(err.message).to.equal(`upstream ${reg.path} tools/call rpc-error: bad params here`);
    });
  });

  describe('legacy SSE transport', () => {
    it('lists, calls and forwards over SSE with the connection credential', async () => {
      const reg = await register({ scheme: 'bearer' }, 'sse');
      const pcid = await env.connection({ service_key: 'fixture', secret: 'sse-tok' });
      const s = createAppToolServer(reg, undefined, pool);
      const tools = await s.listTools(env.ctx());
      expect(tools.map((t) => t.name)).to.include('echo');
      expect(await s.callTool(env.ctx(), 'echo', { PCID: pcid, message: 'over sse' })).to.deep.include({
        structuredContent: { echo: 'over sse' },
      });
      const h = await whoami(reg, pcid, { 'x-tenant': 't1' });
      expect(h.authorization).to.equal('Bearer sse-tok');
      expect(h['x-tenant']).to.equal('t1');
      const get = fx.requests.find((q) => q.method === 'GET' && q.path === '/sse')!;
      expect(get.headers.authorization).to.equal('Bearer sse-tok');
    });

    it('an unreachable SSE upstream answers -32000', async () => {
      const port = await freePort();
      const reg = await env.server({
        path: 'sse-gone',
        name: 'Gone',
        service_key: 'fixture',
        auth: { scheme: 'none' },
        upstream: { type: 'mcp', url: `http://127.0.0.1:${port}/sse`, transport: 'sse' },
      });
      const pcid = await env.connection({ service_key: 'fixture' });
      const err = await gatewayError(
        createAppToolServer(reg, undefined, pool).callTool(env.ctx(), 'echo', { PCID: pcid, message: 'x' }),
      );
      expect(err.message).to.equal(
        'upstream sse-gone tools/call echo failed: the upstream is unreachable (ECONNREFUSED)',
      );
    });

    it('re-opens the SSE session once when the upstream forgot it', async () => {
      const reg = await register({ scheme: 'bearer' }, 'sse');
      const pcid = await env.connection({ service_key: 'fixture' });
      const s = createAppToolServer(reg, undefined, pool);
      await s.callTool(env.ctx(), 'echo', { PCID: pcid, message: 'one' });
      fx.dropSessions();
      expect((await s.callTool(env.ctx(), 'echo', { PCID: pcid, message: 'two' })).structuredContent).to.deep.equal({
        echo: 'two',
      });
      expect(fx.sessionsOpened).to.equal(2);
    });
  });
});
