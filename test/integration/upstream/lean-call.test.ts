/**
 * The lean path of Streamable HTTP sessions (src/gateway/upstream/mcp-post.ts): tools/call and
 * tools/list as plain POSTs on the pool's keep-alive agent once the SDK client has opened the
 * session. Against the SDK fixture server, with its SSE and JSON answer modes and the broken
 * answers it can give (MCP Streamable HTTP spec, "Sending Messages to the Server").
 */
import { getEventListeners } from 'node:events';
import { expect } from 'chai';
import { createAppToolServer, UpstreamPool } from '../../../src/gateway/upstream/index.js';
import type { AppServer } from '../../../src/gateway/registry.js';
import type { ToolServer } from '../../../src/gateway/types.js';
import {
  startMcpFixture,
  type McpFixture,
  type McpFixtureOptions,
  type RecordedRequest,
} from '../../fixtures/upstreams/mcp-server.js';
import { gatewayError, setup, LOOPBACK, type Env } from './setup.js';

/** The lean path numbers its requests from here (mcp-session.ts); the SDK client from 0. */
const LEAN_FIRST_ID = 1_000_000;
const isLean = (q: RecordedRequest) => typeof q.rpc?.id === 'number' && q.rpc.id >= LEAN_FIRST_ID;
const posts = (fx: McpFixture, method: string) => fx.requests.filter((q) => q.rpc?.method === method);

describe('upstream: lean Streamable HTTP calls', function () {
  this.timeout(30_000);
  let env: Env;
  let fx: McpFixture | undefined;
  let pool: UpstreamPool;
  let n = 0;

  beforeEach(async () => {
    env = await setup();
    pool = new UpstreamPool({ outbound: LOOPBACK, timeoutMs: 5_000 });
  });
  afterEach(async () => {
    await pool.close();
    await fx?.close();
    fx = undefined;
    await env.close();
  });

  /** A fixture, a registration for it and a connection: the tool server and the PCID. */
  async function start(
    options: McpFixtureOptions = {},
  ): Promise<{ fx: McpFixture; reg: AppServer; s: ToolServer; pcid: string }> {
    fx = await startMcpFixture({ extras: true, ...options });
    n++;
    const reg = await env.server({
      path: `lean-${n}`,
      name: 'Lean',
      service_key: 'lean',
      auth: { scheme: 'bearer' },
      upstream: { type: 'mcp', url: fx.url, transport: 'streamable-http' },
    });
    const pcid = await env.connection({ service_key: 'lean', secret: 'lean-secret' });
    return { fx, reg, s: createAppToolServer(reg, undefined, pool), pcid };
  }

  describe('answers', () => {
    it('SSE: a notification before the response is handled, the result passes through', async () => {
      const { fx, s, pcid } = await start();
      await s.listTools(env.ctx());
      await s.listTools(env.ctx());
      expect(posts(fx, 'tools/list')).to.have.length(1); // cached
      const r = await s.callTool(env.ctx(), 'notify', { PCID: pcid, message: 'hi' });
      expect(r).to.deep.equal({
        content: [{ type: 'text', text: 'after notice: hi' }],
        structuredContent: { echo: 'hi' },
      });
      // notifications/tools/list_changed on the call's stream dropped the cached list.
      const tools = await s.listTools(env.ctx());
      expect(tools.map((t) => t.name)).to.include.members(['notify', 'echo']);
      expect(posts(fx, 'tools/list')).to.have.length(2);
      const calls = [...posts(fx, 'tools/call'), ...posts(fx, 'tools/list')];
      expect(calls.every(isLean), 'requests went the lean way').to.equal(true);
      for (const q of calls) {
        expect(q.headers).to.include({
          authorization: 'Bearer lean-secret',
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        });
        expect(q.headers['mcp-session-id']).to.equal(fx.sessionIds()[0]);
        expect(q.headers['mcp-protocol-version']).to.be.a('string').and.not.be.empty;
      }
    });

    it('SSE: a request from the server on the answer stream is answered (ping)', async () => {
      const { s, pcid } = await start();
      const r = await s.callTool(env.ctx(), 'ping-client', { PCID: pcid });
      expect(r).to.deep.equal({ content: [{ type: 'text', text: 'pong received' }] });
    });

    it('SSE: skips events of another type, malformed data and responses to other ids', async () => {
      const { s, pcid } = await start();
      expect(await s.callTool(env.ctx(), 'odd-events', { PCID: pcid })).to.deep.equal({
        content: [{ type: 'text', text: 'right' }],
        _meta: { odd: true },
      });
    });

    it('JSON: results, tool errors, tool lists and JSON-RPC errors', async () => {
      const { fx, reg, s, pcid } = await start({ jsonResponse: true });
      expect(await s.callTool(env.ctx(), 'echo', { PCID: pcid, message: 'json' })).to.deep.equal({
        content: [{ type: 'text', text: 'echo: json' }],
        structuredContent: { echo: 'json' },
        _meta: { fixture: 'yes' },
      });
      expect(await s.callTool(env.ctx(), 'fail', { PCID: pcid })).to.deep.equal({
        content: [{ type: 'text', text: 'it went wrong' }],
        isError: true,
      });
      expect((await s.listTools(env.ctx())).map((t) => t.name)).to.include.members(['echo', 'notify']);
      const err = await gatewayError(s.callTool(env.ctx(), 'rpc-error', { PCID: pcid }), -32602);
      expect(err.message).to.equal(`upstream ${reg.path} tools/call rpc-error: bad params here`);
      expect(posts(fx, 'tools/call').every(isLean)).to.equal(true);
    });
  });

  describe('sessions', () => {
    it('re-initialises once when the upstream answers a lean call with 404', async () => {
      const { fx, s, pcid } = await start({ jsonResponse: true });
      await s.callTool(env.ctx(), 'echo', { PCID: pcid, message: 'one' });
      const [oldId] = fx.sessionIds();
      fx.dropSessions();
      expect((await s.callTool(env.ctx(), 'echo', { PCID: pcid, message: 'two' })).structuredContent).to.deep.equal({
        echo: 'two',
      });
      expect(fx.sessionsOpened).to.equal(2);
      const refused = posts(fx, 'tools/call').filter((q) => q.headers['mcp-session-id'] === oldId);
      expect(refused).to.have.length(2); // 'one', then 'two' answered 404
      expect(refused.every(isLean)).to.equal(true);
      const retried = posts(fx, 'tools/call').at(-1)!;
      expect(retried.headers['mcp-session-id']).to.equal(fx.sessionIds()[0]);
    });

    it('a redirected call is left to the SDK client, which follows it within the origin', async () => {
      const { fx, s, pcid } = await start();
      const r = await s.callTool(env.ctx(), 'redirected', { PCID: pcid });
      // Behind the redirect the SDK server does not know the tool: its error result comes back.
      expect(r.isError).to.equal(true);
      expect(r.content[0]!.text).to.include('redirected');
      const calls = posts(fx, 'tools/call');
      expect(calls.map((q) => [q.path, isLean(q)])).to.deep.equal([
        ['/mcp', true],
        ['/mcp', false],
        ['/mcp', false],
      ]);
      // The session stays on the SDK path.
      await s.callTool(env.ctx(), 'echo', { PCID: pcid, message: 'x' });
      expect(isLean(posts(fx, 'tools/call').at(-1)!)).to.equal(false);
    });
  });

  describe('failures', () => {
    for (const tool of ['cut-off-sse', 'cut-off-json']) {
      it(`an upstream closing the socket mid-answer (${tool}): -32000, the session survives`, async () => {
        const { fx, reg, s, pcid } = await start();
        const err = await gatewayError(s.callTool(env.ctx(), tool, { PCID: pcid }));
        expect(err.message).to.equal(
          `upstream ${reg.path} tools/call ${tool} failed: the upstream closed the connection`,
        );
        expect((await s.callTool(env.ctx(), 'echo', { PCID: pcid, message: 'after' })).structuredContent).to.deep.equal(
          { echo: 'after' },
        );
        expect(fx.sessionsOpened).to.equal(1);
      });
    }

    for (const tool of ['huge', 'huge-declared']) {
      it(`an answer above 16 MiB (${tool}): -32000, the session survives`, async () => {
        const { reg, s, pcid } = await start();
        const err = await gatewayError(s.callTool(env.ctx(), tool, { PCID: pcid }));
        expect(err.message).to.equal(
          `upstream ${reg.path} tools/call ${tool} failed: the upstream answer is larger than 16777216 bytes`,
        );
        expect((await s.callTool(env.ctx(), 'echo', { PCID: pcid, message: 'after' })).structuredContent).to.deep.equal(
          { echo: 'after' },
        );
      });
    }

    it('403 on a call: the credential was refused, without showing it', async () => {
      const { reg, s, pcid } = await start();
      const err = await gatewayError(s.callTool(env.ctx(), 'forbidden', { PCID: pcid }));
      expect(err.message).to.equal(
        `upstream ${reg.path} tools/call forbidden failed: the upstream refused the connection's credential (HTTP 403)`,
      );
      expect(err.message + (err.stack ?? '')).to.not.include('lean-secret');
    });

    it('a timeout aborts the request and cancels it upstream (notifications/cancelled)', async () => {
      await pool.close();
      pool = new UpstreamPool({ outbound: LOOPBACK, timeoutMs: 300 });
      const { fx, reg, s, pcid } = await start();
      const err = await gatewayError(s.callTool(env.ctx(), 'slow', { PCID: pcid, ms: 5_000 }));
      expect(err.message).to.equal(`upstream ${reg.path} tools/call slow timed out after 300 ms`);
      const until = Date.now() + 2_000;
      while (posts(fx, 'notifications/cancelled').length === 0 && Date.now() < until)
        await new Promise((r) => setTimeout(r, 20));
      expect(posts(fx, 'notifications/cancelled')).to.have.length(1);
    });

    it('an upstream gone after the session opened is unreachable (ECONNREFUSED)', async () => {
      const { fx, reg, s, pcid } = await start();
      await s.callTool(env.ctx(), 'echo', { PCID: pcid, message: 'one' });
      await fx.close();
      const err = await gatewayError(s.callTool(env.ctx(), 'echo', { PCID: pcid, message: 'two' }));
      expect(err.message).to.equal(
        `upstream ${reg.path} tools/call echo failed: the upstream is unreachable (ECONNREFUSED)`,
      );
    });
  });

  it('no abort listener piles up on any long-lived signal (no MaxListenersExceededWarning)', async () => {
    const { s, pcid } = await start({ jsonResponse: true });
    const warnings: string[] = [];
    const onWarning = (w: Error) => {
      if (w.name === 'MaxListenersExceededWarning') warnings.push(w.message);
    };
    process.on('warning', onWarning);
    try {
      // One caller signal for many calls in turn, as a long-lived connection's would be.
      const caller = new AbortController();
      const ctx = env.ctx({ signal: caller.signal });
      for (let i = 0; i < 100; i++) await s.callTool(ctx, 'echo', { PCID: pcid, message: String(i) });
      // Concurrent calls, each with its own signal (as HTTP requests have), on one session:
      // more than the 1500 listeners undici allows a signal before warning.
      for (let batch = 0; batch < 20; batch++) {
        await Promise.all(
          Array.from({ length: 100 }, (_, i) => s.callTool(env.ctx(), 'echo', { PCID: pcid, message: `c${i}` })),
        );
      }
      await new Promise((r) => setTimeout(r, 50)); // warnings are emitted on a later tick
      expect(getEventListeners(caller.signal, 'abort')).to.have.length(0);
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).to.deep.equal([]);
  });
});
