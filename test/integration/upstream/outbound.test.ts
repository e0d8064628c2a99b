/**
 * Every upstream connection of the pool passes the outbound policy (src/gateway/upstream/pool.ts,
 * src/kernel/outbound.ts), on the address actually connected to: the MCP SDK client's Streamable
 * HTTP and SSE transports, the lean call path's keep-alive agents, OpenAPI and coding-agent
 * calls. Registrations are stored directly here (as a row made while the policy allowed them
 * would be), so these tests see the connect-time check alone. Loopback listeners count the
 * connections they receive; a refusal is a -32000 GatewayError with the reason and is logged
 * with the address, never with the URL or a secret.
 */
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { createLogger } from '../../../src/config/logger.js';
import { createAppToolServer, UpstreamPool } from '../../../src/gateway/upstream/index.js';
import type { AppServerCreate } from '../../../src/gateway/registry.js';
import { OutboundPolicy, parseOutboundAllowlist } from '../../../src/kernel/outbound.js';
import { startMcpFixture, type McpFixture } from '../../fixtures/upstreams/mcp-server.js';
import { petDocument } from '../../fixtures/upstreams/http-api.js';
import { counter, gatewayError, setup, LOOPBACK, type Env } from './setup.js';

const LEAN_FIRST_ID = 1_000_000;

/** A logger writing JSON lines into `lines`. */
function memoryLog(lines: string[]) {
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return createLogger('debug', sink);
}

describe('upstream: connections pass the outbound policy', function () {
  this.timeout(30_000);
  let env: Env;
  let fixture: McpFixture;
  let pool: UpstreamPool;
  let n = 0;

  beforeEach(async () => {
    env = await setup();
    fixture = await startMcpFixture();
  });
  afterEach(async () => {
    await pool?.close();
    await fixture.close();
    await env.close();
  });

  /** A stored registration, a connection with `secret`, and its tool server on `pool`. */
  async function serverFor(upstream: AppServerCreate['upstream'], secret = 'connection-secret') {
    n++;
    const reg = await env.server({
      path: `up-${n}`,
      name: 'Up',
      service_key: `up-${n}`,
      upstream,
      auth: { scheme: 'bearer' },
    });
    const pcid = await env.connection({ service_key: `up-${n}`, secret });
    return { path: reg.path, pcid, server: createAppToolServer(reg, undefined, pool) };
  }

  it('refuses a host name that resolves to loopback on every transport and call path: 0 connections, -32000 with the reason, logged without URL or secrets', async () => {
    pool = new UpstreamPool({ outbound: new OutboundPolicy(parseOutboundAllowlist('')), timeoutMs: 5_000 });
    const listener = await counter('127.0.0.1', Number(new URL(fixture.url).port));
    const lines: string[] = [];
    const ctx = env.ctx({ log: memoryLog(lines) });
    try {
      const base = `http://localhost:${listener.port}`;
      const cases: Array<[AppServerCreate['upstream'], string, Record<string, unknown>]> = [
        [{ type: 'mcp', url: `${base}/mcp?key=query-secret`, transport: 'streamable-http' }, 'echo', { message: 'x' }],
        [{ type: 'mcp', url: `${base}/sse?key=query-secret`, transport: 'sse' }, 'echo', { message: 'x' }],
        [{ type: 'openapi', baseUrl: `${base}/api?key=query-secret`, document: petDocument }, 'listPets', {}],
        [
          { type: 'coding-agent', baseUrl: `${base}/agents-query-secret` },
          'coding-agent_launch',
          { prompt: { text: 'hi' }, repos: [{ url: 'https://github.com/acme/app' }] },
        ],
      ];
      for (const [upstream, tool, args] of cases) {
        const { path, pcid, server } = await serverFor(upstream);
        const what = `upstream ${path} tools/call ${tool}`;
        const err = await gatewayError(server.callTool(ctx, tool, { PCID: pcid, ...args }));
        expect(err.message, upstream.type).to.equal(
          `${what} failed: the outbound policy refuses the upstream's address (loopback address (RFC 1122); allow it with OUTBOUND_ALLOWLIST)`,
        );
        if (upstream.type === 'mcp') {
          const listed = await gatewayError(server.listTools(ctx));
          expect(listed.message).to.match(
            new RegExp(`^upstream ${path} tools/list failed: the outbound policy refuses`),
          );
        }
        const logged = lines
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .filter((l) => l.msg === 'upstream refused by the outbound policy' && l.what === what);
        expect(logged, `log of ${what}`).to.have.length(1);
        expect(logged[0]).to.include({ level: 40, address: '127.0.0.1', reason: 'loopback address (RFC 1122)' });
      }
      expect(listener.connections, 'connections to the loopback listener').to.equal(0);
      expect(lines.join('\n')).to.not.match(/query-secret|connection-secret|localhost:/);
    } finally {
      await listener.close();
    }
  });

  it('refuses IP literals in refused ranges before connecting (loopback v4 and v6, metadata)', async () => {
    pool = new UpstreamPool({ outbound: new OutboundPolicy(parseOutboundAllowlist('')), timeoutMs: 5_000 });
    const v4 = await counter('127.0.0.1');
    const v6 = await counter('::1');
    try {
      for (const [url, reason] of [
        [`http://127.0.0.1:${v4.port}/mcp`, 'loopback address \\(RFC 1122\\)'],
        [`http://[::1]:${v6.port}/mcp`, 'loopback address \\(RFC 4291\\)'],
        ['http://169.254.169.254/mcp', 'link-local or cloud metadata address \\(RFC 3927\\)'],
      ] as const) {
        const { pcid, server } = await serverFor({ type: 'mcp', url, transport: 'streamable-http' });
        const err = await gatewayError(server.callTool(env.ctx(), 'echo', { PCID: pcid, message: 'x' }));
        expect(err.message, url).to.match(
          new RegExp(
            `the outbound policy refuses the upstream's address \\(${reason}; allow it with OUTBOUND_ALLOWLIST\\)$`,
          ),
        );
      }
      expect(v4.connections + v6.connections).to.equal(0);
    } finally {
      await v4.close();
      await v6.close();
    }
  });

  it('with the allow-list, a host name reaches the upstream and its lean calls travel on the checked agent', async () => {
    pool = new UpstreamPool({ outbound: LOOPBACK, timeoutMs: 5_000 });
    const { pcid, server } = await serverFor({
      type: 'mcp',
      url: `http://localhost:${new URL(fixture.url).port}/mcp`,
      transport: 'streamable-http',
    });
    for (const message of ['one', 'two', 'three']) {
      const r = await server.callTool(env.ctx(), 'echo', { PCID: pcid, message });
      expect(r.structuredContent).to.deep.equal({ echo: message });
    }
    const lean = fixture.requests.filter(
      (q) => q.rpc?.method === 'tools/call' && typeof q.rpc.id === 'number' && q.rpc.id >= LEAN_FIRST_ID,
    );
    expect(lean.length, 'tools/call POSTs sent by the lean path').to.be.greaterThan(0);
  });

  it("the service's own origins are reached without the allow-list", async () => {
    const origin = `http://127.0.0.1:${new URL(fixture.url).port}`;
    pool = new UpstreamPool({ outbound: new OutboundPolicy(parseOutboundAllowlist(''), [origin]), timeoutMs: 5_000 });
    const { pcid, server } = await serverFor({ type: 'mcp', url: fixture.url, transport: 'streamable-http' });
    const r = await server.callTool(env.ctx(), 'echo', { PCID: pcid, message: 'own' });
    expect(r.structuredContent).to.deep.equal({ echo: 'own' });
  });
});
