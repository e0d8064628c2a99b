/**
 * The outbound policy (src/kernel/outbound.ts) for destinations an organisation registers
 * (application server upstreams, openapi/management.yaml createAppServer): registrationRefusal
 * judges a URL before it is stored; the checked `lookup` lets an allowed host name connect when
 * node:net asks for every address (autoSelectFamily, the default), on policyFetch and on
 * keep-alive agents alike, and refuses a name with a refused address.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import {
  OutboundPolicy,
  OutboundRefusedError,
  parseOutboundAllowlist,
  policyFetch,
} from '../../../src/kernel/outbound.js';

const policy = (allow = '', origins: string[] = []) => new OutboundPolicy(parseOutboundAllowlist(allow), origins);
const judge = (p: OutboundPolicy, url: string) => p.registrationRefusal(new URL(url));

describe('outbound policy: registrationRefusal', () => {
  it('refuses IP literals in refused ranges however the URL spells them, naming the range', async () => {
    const p = policy();
    const cases: Array<[string, RegExp]> = [
      [
        'http://127.0.0.1:8080/mcp',
        /^127\.0\.0\.1 is an address the outbound policy refuses \(loopback address \(RFC 1122\); allow it with OUTBOUND_ALLOWLIST\)$/,
      ],
      ['http://2130706433/', /^127\.0\.0\.1 is an address the outbound policy refuses \(loopback address/],
      ['http://0x7f.1/', /^127\.0\.0\.1 is an address the outbound policy refuses \(loopback address/],
      ['http://[::1]:9/', /^::1 is an address the outbound policy refuses \(loopback address/],
      ['http://[::ffff:127.0.0.1]/', /loopback address/],
      ['http://0.0.0.0/', /unspecified address/],
      ['http://10.20.30.40/', /private address/],
      ['http://172.16.5.4/', /private address/],
      ['http://192.168.0.10/', /private address/],
      ['http://100.64.1.1/', /carrier-grade NAT address/],
      ['https://169.254.169.254/latest/meta-data/', /link-local or cloud metadata address/],
      ['http://[fe80::1]/', /link-local address/],
      ['http://[fd00::1]/', /private address/],
    ];
    for (const [url, reason] of cases) expect(await judge(p, url), url).to.match(reason);
  });

  it('refuses a name whose addresses are refused after DNS (localhost), and accepts a name that does not resolve', async () => {
    const p = policy();
    expect(await judge(p, 'http://localhost:3000/mcp')).to.match(
      /^localhost resolves to an address the outbound policy refuses \(loopback address \(RFC 1122\); allow it with OUTBOUND_ALLOWLIST\)$/,
    );
    expect(await judge(p, 'https://upstream.invalid/mcp'), 'checked at connect time instead').to.equal(undefined);
  });

  it("accepts public literals, what the allow-list names, and the service's own origins", async () => {
    expect(await judge(policy(), 'https://93.184.215.14/')).to.equal(undefined);
    expect(await judge(policy(), 'https://[2606:4700::6810:84e5]/')).to.equal(undefined);
    expect(await judge(policy('127.0.0.0/8,::1/128'), 'http://127.0.0.1:1/')).to.equal(undefined);
    expect(await judge(policy('127.0.0.0/8,::1/128'), 'http://localhost:1/')).to.equal(undefined);
    expect(await judge(policy('10.1.2.3'), 'http://10.1.2.3/')).to.equal(undefined);
    expect(await judge(policy('10.1.2.3'), 'http://10.1.2.4/')).to.match(/private address/);
    expect(await judge(policy('localhost'), 'http://localhost:1/'), 'an allow-listed host name').to.equal(undefined);
    expect(
      await judge(policy('', ['http://127.0.0.1:4000']), 'http://127.0.0.1:4000/mcp/gateway'),
      'own origin',
    ).to.equal(undefined);
    expect(await judge(policy('', ['http://127.0.0.1:4000']), 'http://127.0.0.1:4001/'), 'another port').to.match(
      /loopback address/,
    );
  });
});

describe('outbound policy: the checked lookup when node:net asks for every address', () => {
  let server: http.Server;
  let port = 0;
  before(async () => {
    server = http.createServer((_req, res) => res.end('reached'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const viaAgent = (p: OutboundPolicy): Promise<string> => {
    const agent = new http.Agent({ lookup: p.lookup() } as http.AgentOptions);
    return new Promise<string>((resolve, reject) => {
      http
        .get({ hostname: 'localhost', port, path: '/', agent }, (res) => {
          let text = '';
          res.on('data', (c: Buffer) => {
            text += c.toString();
          });
          res.on('end', () => resolve(text));
        })
        .on('error', reject);
    }).finally(() => agent.destroy());
  };

  it('connects to an allowed host name (policyFetch and agents) and refuses it when its address is refused', async () => {
    const open = policy('127.0.0.0/8,::1/128');
    expect(await (await policyFetch(open)(`http://localhost:${port}/`)).text()).to.equal('reached');
    expect(await viaAgent(open)).to.equal('reached');
    const closed = policy();
    const fetchErr = await policyFetch(closed)(`http://localhost:${port}/`).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(fetchErr?.cause).to.be.instanceOf(OutboundRefusedError);
    const agentErr = await viaAgent(closed).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(agentErr).to.be.instanceOf(OutboundRefusedError);
    expect((agentErr as OutboundRefusedError).detail).to.deep.equal({
      address: '127.0.0.1',
      reason: 'loopback address (RFC 1122)',
    });
  });

  it('answers every address to a lookup asked for all of them, and refuses the name when one is refused', async () => {
    const lookup = (p: OutboundPolicy) =>
      new Promise<{ err: Error | null; addresses: unknown }>((resolve) => {
        p.lookup()('localhost', { all: true }, (err, addresses) => resolve({ err, addresses }));
      });
    const allowed = await lookup(policy('127.0.0.0/8,::1/128'));
    expect(allowed.err).to.equal(null);
    expect(allowed.addresses).to.be.an('array').that.deep.includes({ address: '127.0.0.1', family: 4 });
    const refused = await lookup(policy('::1/128'));
    expect(refused.err).to.be.instanceOf(OutboundRefusedError);
  });
});
