/**
 * Header forwarding (spec section 5 table), end to end: headers as node parses them from a
 * real request, through forwardedHeaders, to what a remote MCP upstream receives.
 */
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { AppServer } from '../../../src/gateway/registry.js';
import { createAppToolServer, forwardedHeaders, UpstreamPool } from '../../../src/gateway/upstream/index.js';
import { startMcpFixture, type McpFixture } from '../../fixtures/upstreams/mcp-server.js';
import { gatewayError, setup, LOOPBACK, type Env } from './setup.js';

/** The headers node gives a server for a request sent with `headers`. */
async function received(headers: Record<string, string>): Promise<IncomingHttpHeaders> {
  let seen: IncomingHttpHeaders = {};
  const srv = http.createServer((req, res) => {
    seen = req.headers;
    res.end();
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  try {
    await fetch(`http://127.0.0.1:${(srv.address() as AddressInfo).port}/`, { method: 'POST', headers, body: '{}' });
  } finally {
    await new Promise<void>((r) => srv.close(() => r()));
  }
  return seen;
}

describe('upstream: header forwarding (spec section 5)', function () {
  this.timeout(30_000);

  describe('forwardedHeaders', () => {
    it('X-Pf-Forward-<Name> arrives as <name> in lower case', async () => {
      const h = await received({ 'X-Pf-Forward-Tenant-Id': 'acme', 'x-pf-forward-Locale': 'de-CH' });
      expect(forwardedHeaders(h)).to.deep.equal({ 'tenant-id': 'acme', locale: 'de-CH' });
    });

    it('a header without the prefix is not forwarded', async () => {
      const h = await received({
        'X-Tenant-Id': 'acme',
        'X-Pf-Run-Id': 'r',
        'Pf-Forward-X': 'y',
        'X-Pf-Forwarded-Y': 'z',
      });
      expect(forwardedHeaders(h)).to.deep.equal({});
    });

    it('authorization, content-type, accept and mcp-session-id are dropped even when prefixed', async () => {
      const h = await received({
        'X-Pf-Forward-Authorization': 'Bearer stolen',
        'X-Pf-Forward-Content-Type': 'text/plain',
        'X-Pf-Forward-Accept': 'text/html',
        'X-Pf-Forward-Mcp-Session-Id': 'abc',
        'X-Pf-Forward-Ok': '1',
      });
      expect(forwardedHeaders(h)).to.deep.equal({ ok: '1' });
    });

    it('also drops transport, hop-by-hop and credential headers (our additions)', () => {
      const names = [
        'mcp-protocol-version',
        'last-event-id',
        'host',
        'connection',
        'keep-alive',
        'transfer-encoding',
        'te',
        'trailer',
        'upgrade',
        'content-length',
        'expect',
        'accept-encoding',
        'proxy-connection',
        'cookie',
        'proxy-authorization',
      ];
      const h: IncomingHttpHeaders = Object.fromEntries(names.map((n) => [`x-pf-forward-${n}`, 'v']));
      h['x-pf-forward-'] = 'empty name';
      h['x-pf-forward-list'] = ['a', 'b'];
      expect(forwardedHeaders(h)).to.deep.equal({ list: 'a, b' });
    });
  });

  describe('delivery to a remote MCP upstream', () => {
    let env: Env;
    let fx: McpFixture;
    let pool: UpstreamPool;
    let reg: AppServer;

    beforeEach(async () => {
      env = await setup();
      fx = await startMcpFixture();
      pool = new UpstreamPool({ outbound: LOOPBACK, timeoutMs: 5_000 });
      reg = await env.server({
        path: 'remote',
        name: 'Remote',
        service_key: 'remote',
        auth: { scheme: 'bearer' },
        upstream: { type: 'mcp', url: fx.url, transport: 'streamable-http' },
      });
    });
    afterEach(async () => {
      await pool.close();
      await fx.close();
      await env.close();
    });

    it('every table row, as the upstream sees it, on every request of the session', async () => {
      const pcid = await env.connection({ service_key: 'remote', secret: 'conn-secret' });
      const incoming = await received({
        'X-Pf-Forward-Tenant-Id': 'acme',
        'X-Tenant-Plain': 'not forwarded',
        'X-Pf-Forward-Authorization': 'Bearer stolen',
        'X-Pf-Forward-Content-Type': 'text/plain',
        'X-Pf-Forward-Accept': 'text/html',
        'X-Pf-Forward-Mcp-Session-Id': 'forged-session',
      });
      const ctx = env.ctx({ forwardedHeaders: forwardedHeaders(incoming) });
      const r = await createAppToolServer(reg, undefined, pool).callTool(ctx, 'whoami', { PCID: pcid });
      const h = (r.structuredContent as { headers: Record<string, string> }).headers;
      expect(h['tenant-id']).to.equal('acme');
      expect(h).to.not.have.property('x-tenant-plain');
      expect(h.authorization).to.equal('Bearer conn-secret');
      expect(h['content-type']).to.equal('application/json');
      expect(h.accept).to.equal('application/json, text/event-stream');
      expect(h['mcp-session-id']).to.not.equal('forged-session');
      for (const req of fx.requests) {
        expect(req.headers['tenant-id']).to.equal('acme');
        expect(req.headers.authorization).to.equal('Bearer conn-secret');
        expect(req.headers['mcp-session-id'] ?? '').to.not.equal('forged-session');
      }
    });

    it('nothing reaches the upstream without a matching connection', async () => {
      const ctx = env.ctx({ forwardedHeaders: { 'tenant-id': 'acme' } });
      const s = createAppToolServer(reg, undefined, pool);
      expect(await s.listTools(ctx)).to.deep.equal([]);
      const wrong = await env.connection({ service_key: 'other' });
      await gatewayError(s.callTool(ctx, 'whoami', { PCID: wrong }));
      expect(fx.requests).to.have.length(0);
    });
  });
});
