/**
 * The outbound policy (src/kernel/outbound.ts): allow-list parsing, the refused ranges (IPv4,
 * IPv6 and IPv4-mapped IPv6), the check after DNS, the time limit and the response size cap,
 * for event calls (outboundRequest) and workflow http steps (policyFetch), redirects included.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import {
  loopbackSelfOrigins,
  OutboundError,
  OutboundPolicy,
  outboundRequest,
  parseOutboundAllowlist,
  policyFetch,
} from '../../../src/kernel/outbound.js';

const policy = (allow = '', origins: string[] = []) => new OutboundPolicy(parseOutboundAllowlist(allow), origins);
const refusal = (p: OutboundPolicy, address: string): string | undefined => {
  try {
    p.check(address);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
};

describe('outbound policy: OUTBOUND_ALLOWLIST parsing', () => {
  it('accepts CIDRs, bare addresses and host names, trimmed, empty entries ignored', () => {
    const list = parseOutboundAllowlist(' 127.0.0.0/8, ::1/128 ,10.1.2.3,,Internal.Example.com ');
    expect(list.entries).to.deep.equal(['127.0.0.0/8', '::1/128', '10.1.2.3', 'Internal.Example.com']);
    expect([...list.hosts]).to.deep.equal(['internal.example.com']);
    expect(list.ranges.has('127.9.9.9')).to.equal(true);
    expect(list.ranges.has('10.1.2.3')).to.equal(true);
    expect(list.ranges.has('10.1.2.4')).to.equal(false);
    expect(parseOutboundAllowlist(undefined).entries).to.deep.equal([]);
  });

  it('rejects malformed entries, naming them', () => {
    for (const bad of [
      '10.0.0.0/33',
      '::1/129',
      '10.0.0.0/x',
      '10.0.0.0/8/1',
      'not a host',
      'under_score.example',
      'host/24',
      '-lead.example',
    ]) {
      expect(() => parseOutboundAllowlist(bad), bad).to.throw(new RegExp(bad.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')));
    }
  });
});

describe('outbound policy: refused ranges', () => {
  const p = policy();
  it('refuses loopback, private, link-local (cloud metadata), CGNAT, unspecified, multicast and reserved addresses', () => {
    const cases: Array<[string, RegExp]> = [
      ['127.0.0.1', /loopback/],
      ['127.255.0.9', /loopback/],
      ['10.0.0.5', /private/],
      ['172.16.0.1', /private/],
      ['172.31.255.255', /private/],
      ['192.168.1.1', /private/],
      ['169.254.169.254', /cloud metadata/],
      ['100.64.0.1', /carrier-grade NAT/],
      ['0.0.0.0', /unspecified/],
      ['224.0.0.1', /multicast/],
      ['198.18.0.1', /benchmarking/],
      ['::1', /loopback/],
      ['::', /unspecified/],
      ['fe80::1', /link-local/],
      ['fd12:3456::1', /private/],
      ['ff02::1', /multicast/],
      ['::7f00:1', /IPv4-compatible/],
      ['::a00:5', /IPv4-compatible/],
      ['64:ff9b::a00:1', /NAT64/],
      ['64:ff9b::7f00:1', /NAT64/],
    ];
    for (const [address, why] of cases)
      expect(refusal(p, address), address)
        .to.match(why)
        .and.match(/OUTBOUND_ALLOWLIST/);
  });

  it('checks the IPv4 address an IPv4-mapped IPv6 address carries', () => {
    expect(refusal(p, '::ffff:127.0.0.1')).to.match(/127\.0\.0\.1.*loopback/);
    expect(refusal(p, '::FFFF:169.254.169.254')).to.match(/cloud metadata/);
    expect(refusal(p, '::ffff:8.8.8.8')).to.equal(undefined);
  });

  it('lets public addresses through', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2001:4860:4860::8888'])
      expect(refusal(p, address), address).to.equal(undefined);
  });

  it('lets exactly what the allow-list names through', () => {
    const allowed = policy('127.0.0.0/8,fd00::/8');
    expect(refusal(allowed, '127.0.0.1')).to.equal(undefined);
    expect(refusal(allowed, '::ffff:127.0.0.1')).to.equal(undefined);
    expect(refusal(allowed, 'fd00::7')).to.equal(undefined);
    expect(refusal(allowed, '10.0.0.1')).to.match(/private/);
    expect(refusal(allowed, '::1')).to.match(/loopback/);
    expect(refusal(allowed, '169.254.169.254')).to.match(/metadata/);
  });
});

describe('outbound policy: requests', () => {
  let server: http.Server;
  let port = 0;
  let hits: string[] = [];
  before(async () => {
    server = http.createServer((req, res) => {
      hits.push(req.url!);
      if (req.url === '/hang') return; // never answers
      if (req.url === '/big') return res.end(Buffer.alloc(4096, 'x'));
      if (req.url === '/bounce') return res.writeHead(302, { location: `http://127.0.0.1:${port}/ok` }).end();
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  beforeEach(() => {
    hits = [];
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const request = (url: string, p: OutboundPolicy, extra: { timeoutMs?: number; maxResponseBytes?: number } = {}) =>
    outboundRequest(
      url,
      {
        orgId: 'org_a',
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
        timeoutMs: extra.timeoutMs ?? 2000,
        maxResponseBytes: extra.maxResponseBytes ?? 1024,
      },
      p,
    );
  const kindOf = async (promise: Promise<unknown>) => {
    try {
      await promise;
      return 'ok';
    } catch (err) {
      expect(err).to.be.instanceOf(OutboundError);
      return (err as OutboundError).kind;
    }
  };

  it('refuses an IP literal before connecting, and a name after DNS on the address it resolves to', async () => {
    expect(await kindOf(request(`http://127.0.0.1:${port}/ok`, policy()))).to.equal('refused');
    expect(await kindOf(request(`http://localhost:${port}/ok`, policy()))).to.equal('refused');
    expect(hits).to.deep.equal([]);
  });

  it('calls allow-listed addresses and the always-allowed origins, and answers status, body and duration', async () => {
    const res = await request(`http://127.0.0.1:${port}/ok`, policy('127.0.0.0/8'));
    expect([res.status, res.body.toString()]).to.deep.equal([200, '{"ok":true}']);
    expect(res.durationMs).to.be.a('number').and.at.least(0);
    expect((await request(`http://127.0.0.1:${port}/ok`, policy('', [`http://127.0.0.1:${port}`]))).status).to.equal(
      200,
    );
    // Another port on the same address is not the allowed origin.
    expect(await kindOf(request(`http://127.0.0.1:${port + 1}/ok`, policy('', [`http://127.0.0.1:${port}`])))).to.equal(
      'refused',
    );
  });

  it('gives up after the time limit and past the response size cap', async () => {
    const p = policy('127.0.0.0/8');
    const started = Date.now();
    expect(await kindOf(request(`http://127.0.0.1:${port}/hang`, p, { timeoutMs: 200 }))).to.equal('timeout');
    expect(Date.now() - started).to.be.below(2000);
    expect(await kindOf(request(`http://127.0.0.1:${port}/big`, p, { maxResponseBytes: 1024 }))).to.equal('too_large');
    expect((await request(`http://127.0.0.1:${port}/big`, p, { maxResponseBytes: 8192 })).body.length).to.equal(4096);
  });

  it('policyFetch (http steps) refuses literals and names alike, and checks every redirect hop', async () => {
    const refusedCause = async (url: string, p: OutboundPolicy) => {
      const err = (await policyFetch(p)(url).then(
        () => null,
        (e: unknown) => e,
      )) as { cause?: Error } | null;
      return err?.cause?.message;
    };
    expect(await refusedCause(`http://127.0.0.1:${port}/ok`, policy())).to.match(/loopback/);
    expect(await refusedCause(`http://localhost:${port}/ok`, policy())).to.match(/loopback/);
    expect(hits).to.deep.equal([]);
    const ok = await policyFetch(policy('127.0.0.0/8'))(`http://127.0.0.1:${port}/bounce`);
    expect([ok.status, await ok.json()]).to.deep.equal([200, { ok: true }]);
    // `localhost` is trusted by name; the hop it redirects to (127.0.0.1) is not.
    hits = [];
    expect(await refusedCause(`http://localhost:${port}/bounce`, policy('localhost'))).to.match(
      /127\.0\.0\.1.*loopback/,
    );
    expect(hits).to.deep.equal(['/bounce']);
  });
});

describe('outbound policy: loopback names of the service itself', () => {
  const origins = (host: string, port = 8080) => Object.fromEntries(loopbackSelfOrigins({ host, port }));

  it('follow the listening address: IPv4 wildcard, dual stack, loopback, another interface, port 0', () => {
    expect(origins('0.0.0.0')).to.deep.equal({ 'http://127.0.0.1:8080': 4, 'http://localhost:8080': 4 });
    expect(origins('::')).to.deep.equal({
      'http://127.0.0.1:8080': 4,
      'http://[::1]:8080': 6,
      'http://localhost:8080': 0,
    });
    expect(origins('127.0.0.1')).to.deep.equal({ 'http://127.0.0.1:8080': 4, 'http://localhost:8080': 4 });
    expect(origins('[::1]')).to.deep.equal({ 'http://[::1]:8080': 6, 'http://localhost:8080': 6 });
    expect(origins('localhost')).to.deep.equal({ 'http://localhost:8080': 0 });
    expect(origins('10.1.2.3')).to.deep.equal({});
    expect(origins('0.0.0.0', 0)).to.deep.equal({});
    expect(origins('0.0.0.0', 80)).to.deep.equal({ 'http://127.0.0.1': 4, 'http://localhost': 4 });
  });

  it('are allowed on the listening port only, and reached over the family that is the service', async () => {
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      seen.push(req.socket.localAddress ?? '');
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    try {
      const p = new OutboundPolicy(parseOutboundAllowlist(''), [], { listener: { host: '127.0.0.1', port } });
      const opts = { orgId: 'org_a', method: 'GET', headers: {}, timeoutMs: 2000, maxResponseBytes: 1024 };
      expect(p.allowsOrigin(new URL(`http://127.0.0.1:${port}/x`))).to.equal(true);
      expect(p.allowsOrigin(new URL(`http://[::1]:${port}/x`))).to.equal(false);
      expect(p.allowsOrigin(new URL(`http://127.0.0.1:${port === 65535 ? 1 : port + 1}/x`))).to.equal(false);
      expect((await outboundRequest(`http://localhost:${port}/x`, opts, p)).status).to.equal(200);
      expect((await outboundRequest(`http://127.0.0.1:${port}/x`, opts, p)).status).to.equal(200);
      expect(seen).to.deep.equal(['127.0.0.1', '127.0.0.1']);
      const other = await outboundRequest(`http://[::1]:${port}/x`, opts, p).catch((e: OutboundError) => e);
      expect(other).to.be.instanceOf(OutboundError).and.to.have.property('kind', 'refused');
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
