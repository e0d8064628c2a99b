/**
 * The outbound policy's positive rule (src/kernel/address-rule.ts, special-addresses.ts): an
 * address inside every entry of IANA's IPv4 and IPv6 Special-Purpose Address Registries (and
 * multicast, the deprecated forms, all that is outside 2000::/3) is judged by that entry's
 * "Globally Reachable"; IPv4-mapped, NAT64 and 6to4 addresses by the IPv4 address they carry;
 * this machine's own addresses are refused; OUTBOUND_ALLOWLIST allows what it names. The
 * machine's addresses here are a list the test controls (outbound-machine.test.ts uses the
 * real ones).
 */
import os from 'node:os';
import { expect } from 'chai';
import { MachineAddresses } from '../../../src/kernel/address-rule.js';
import { OutboundPolicy, parseOutboundAllowlist } from '../../../src/kernel/outbound.js';
import { SPECIAL_IPV4, SPECIAL_IPV6 } from '../../../src/kernel/special-addresses.js';

const noMachine = () => new MachineAddresses(() => []);
const policy = (allow = '', machine = noMachine()) =>
  new OutboundPolicy(parseOutboundAllowlist(allow), [], { machine });
const verdict = (p: OutboundPolicy, address: string): string => {
  try {
    p.check(address);
    return 'allowed';
  } catch (err) {
    return (err as Error).message;
  }
};
const ALLOWED = 'allowed';

/** [registry entry, an address it is the most specific entry of, the verdict]. */
const ENTRIES: Array<[string, string, RegExp | typeof ALLOWED]> = [
  ['0.0.0.0/8', '0.1.2.3', /this-network address \(RFC 791\)/],
  ['0.0.0.0/32', '0.0.0.0', /unspecified address \(RFC 1122\)/],
  ['10.0.0.0/8', '10.20.30.40', /private address \(RFC 1918\)/],
  ['100.64.0.0/10', '100.100.1.1', /carrier-grade NAT address \(RFC 6598\)/],
  ['127.0.0.0/8', '127.1.2.3', /loopback address \(RFC 1122\)/],
  ['169.254.0.0/16', '169.254.169.254', /link-local or cloud metadata address \(RFC 3927\)/],
  ['172.16.0.0/12', '172.20.0.1', /private address \(RFC 1918\)/],
  ['192.0.0.0/24', '192.0.0.100', /IETF protocol assignment address \(RFC 6890\)/],
  ['192.0.0.0/29', '192.0.0.5', /IPv4 service continuity address \(RFC 7335\)/],
  ['192.0.0.8/32', '192.0.0.8', /IPv4 dummy address \(RFC 7600\)/],
  ['192.0.0.9/32', '192.0.0.9', ALLOWED],
  ['192.0.0.10/32', '192.0.0.10', ALLOWED],
  ['192.0.0.170/32', '192.0.0.170', /NAT64\/DNS64 discovery address \(RFC 8880\)/],
  ['192.0.0.171/32', '192.0.0.171', /NAT64\/DNS64 discovery address \(RFC 8880\)/],
  ['192.0.2.0/24', '192.0.2.200', /documentation address \(RFC 5737\)/],
  ['192.31.196.0/24', '192.31.196.1', ALLOWED],
  ['192.52.193.0/24', '192.52.193.7', ALLOWED],
  ['192.88.99.0/24', '192.88.99.1', /deprecated 6to4 relay anycast address \(RFC 7526\)/],
  ['192.88.99.2/32', '192.88.99.2', /6a44 relay anycast address \(RFC 6751\)/],
  ['192.168.0.0/16', '192.168.1.1', /private address \(RFC 1918\)/],
  ['192.175.48.0/24', '192.175.48.1', ALLOWED],
  ['198.18.0.0/15', '198.19.255.1', /benchmarking address \(RFC 2544\)/],
  ['198.51.100.0/24', '198.51.100.7', /documentation address \(RFC 5737\)/],
  ['203.0.113.0/24', '203.0.113.9', /documentation address \(RFC 5737\)/],
  ['240.0.0.0/4', '250.1.2.3', /reserved address \(RFC 1112\)/],
  ['255.255.255.255/32', '255.255.255.255', /limited broadcast address \(RFC 919\)/],
  ['224.0.0.0/4', '239.255.255.250', /multicast address \(RFC 5771\)/],
  ['::1/128', '::1', /loopback address \(RFC 4291\)/],
  ['::/128', '::', /unspecified address \(RFC 4291\)/],
  ['::ffff:0:0/96', '::ffff:10.1.2.3', /IPv4-mapped address embedding 10\.1\.2\.3 \(private address\)/],
  ['64:ff9b::/96', '64:ff9b::c0a8:101', /NAT64 address embedding 192\.168\.1\.1 \(private address\)/],
  ['64:ff9b:1::/48', '64:ff9b:1::808:808', /local-use NAT64 address \(RFC 8215\)/],
  ['100::/64', '100::1', /discard-only address \(RFC 6666\)/],
  ['100:0:0:1::/64', '100:0:0:1::7', /dummy IPv6 address \(RFC 9780\)/],
  ['2001::/23', '2001:100::1', /IETF protocol assignment address \(RFC 2928\)/],
  ['2001::/32', '2001:0:4136:e378:8000:63bf:3fff:fdd2', /Teredo address \(RFC 4380\)/],
  ['2001:1::1/128', '2001:1::1', ALLOWED],
  ['2001:1::2/128', '2001:1::2', ALLOWED],
  ['2001:1::3/128', '2001:1::3', ALLOWED],
  ['2001:2::/48', '2001:2::5', /benchmarking address \(RFC 5180\)/],
  ['2001:3::/32', '2001:3::1', ALLOWED],
  ['2001:4:112::/48', '2001:4:112::1', ALLOWED],
  ['2001:10::/28', '2001:10::1', /deprecated ORCHID address \(RFC 4843\)/],
  ['2001:20::/28', '2001:20::1', ALLOWED],
  ['2001:30::/28', '2001:30::1', ALLOWED],
  ['2001:db8::/32', '2001:db8::1', /documentation address \(RFC 3849\)/],
  ['2002::/16', '2002:a00:1::1', /6to4 address embedding 10\.0\.0\.1 \(private address\)/],
  ['2620:4f:8000::/48', '2620:4f:8000::1', ALLOWED],
  ['3fff::/20', '3fff:fff::1', /documentation address \(RFC 9637\)/],
  ['5f00::/16', '5f00:1::1', /SRv6 SID address \(RFC 9602\)/],
  ['fc00::/7', 'fd12:3456::1', /private address \(RFC 4193\)/],
  ['fe80::/10', 'fe80::1', /link-local address \(RFC 4291\)/],
  ['ff00::/8', 'ff02::1', /multicast address \(RFC 4291\)/],
  ['::/96', '::10.0.0.1', /IPv4-compatible address \(RFC 4291\)/],
  ['fec0::/10', 'fec0::1', /site-local address \(RFC 3879\)/],
  ['::/3', '1::1', /address outside global unicast \(RFC 4291\)/],
  ['4000::/2', '4000::1', /address outside global unicast \(RFC 4291\)/],
  ['8000::/1', '8000::1', /address outside global unicast \(RFC 4291\)/],
];

describe('outbound policy: the IANA special-purpose registries, entry by entry', () => {
  const p = policy();

  it('has a case for every entry of the table, and the table has every entry of both registries', () => {
    const table = [...SPECIAL_IPV4, ...SPECIAL_IPV6].map((b) => b.block);
    expect(ENTRIES.map(([block]) => block)).to.have.members(table);
    for (const required of [
      '192.0.0.9/32',
      '192.0.0.10/32',
      '192.31.196.0/24',
      '192.52.193.0/24',
      '192.175.48.0/24',
      '198.51.100.0/24',
      '203.0.113.0/24',
      '2001:1::3/128',
      '2001:30::/28',
      '2620:4f:8000::/48',
      '3fff::/20',
      '5f00::/16',
      '100:0:0:1::/64',
    ])
      expect(table, required).to.include(required);
  });

  for (const [block, address, expected] of ENTRIES) {
    it(`${block}: ${address} is ${expected === ALLOWED ? 'allowed' : 'refused'}`, () => {
      const got = verdict(p, address);
      if (expected === ALLOWED) expect(got).to.equal(ALLOWED);
      else
        expect(got)
          .to.match(expected)
          .and.to.match(
            new RegExp(
              `^Outbound request to ${address.replace(/\./g, '\\.')} refused: .* \\(allow it with OUTBOUND_ALLOWLIST\\)$`,
            ),
          );
    });
  }

  it('lets public unicast through, both families, and the edges of special blocks', () => {
    for (const address of [
      '8.8.8.8',
      '1.1.1.1',
      '2606:4700:4700::1111',
      '2001:4860:4860::8888',
      '192.0.1.255',
      '192.0.3.0',
      '198.20.0.1',
      '100.128.0.1',
      '172.32.0.1',
      '223.255.255.255',
      '2001:200::1',
      '3fff:1000::1',
      '2000::1',
      '3fff:ffff::1',
    ])
      expect(verdict(p, address), address).to.equal(ALLOWED);
    for (const address of ['1fff:ffff::1', '2001:1ff::1', '224.0.0.0', '0.255.255.255', '192.0.0.7'])
      expect(verdict(p, address), address).to.not.equal(ALLOWED);
  });
});

describe('outbound policy: addresses that carry an IPv4 address', () => {
  const p = policy();

  it('judge 6to4, NAT64 and IPv4-mapped addresses by the IPv4 address they carry, however spelled', () => {
    const cases: Array<[string, RegExp | typeof ALLOWED]> = [
      ['2002:7f00:1::1', /refused: 6to4 address embedding 127\.0\.0\.1 \(loopback address\) \(allow it/],
      ['2002:7F00:0001:0:0:0:0:1', /6to4 address embedding 127\.0\.0\.1 \(loopback address\)/],
      ['2002:c000:201::', /6to4 address embedding 192\.0\.2\.1 \(documentation address\)/],
      ['2002:a9fe:a9fe::1', /6to4 address embedding 169\.254\.169\.254 \(link-local or cloud metadata address\)/],
      ['2002:808:808::1', ALLOWED],
      ['64:ff9b::a00:1', /NAT64 address embedding 10\.0\.0\.1 \(private address\)/],
      ['64:ff9b::10.0.0.1', /NAT64 address embedding 10\.0\.0\.1 \(private address\)/],
      ['64:ff9b::7f00:1', /NAT64 address embedding 127\.0\.0\.1 \(loopback address\)/],
      ['64:ff9b::101:101', ALLOWED],
      ['64:ff9b::1.1.1.1', ALLOWED],
      ['::ffff:127.0.0.1', /IPv4-mapped address embedding 127\.0\.0\.1 \(loopback address\)/],
      ['::ffff:7f00:1', /IPv4-mapped address embedding 127\.0\.0\.1 \(loopback address\)/],
      ['0:0:0:0:0:ffff:a9fe:a9fe', /IPv4-mapped address embedding 169\.254\.169\.254/],
      ['::ffff:8.8.8.8', ALLOWED],
    ];
    for (const [address, expected] of cases) {
      if (expected === ALLOWED) expect(verdict(p, address), address).to.equal(ALLOWED);
      else expect(verdict(p, address), address).to.match(expected);
    }
  });

  it('refuse IPv4-compatible, local-use NAT64 and Teredo addresses whatever they carry', () => {
    for (const address of ['::127.0.0.1', '::8.8.8.8', '::808:808'])
      expect(verdict(p, address), address).to.match(/IPv4-compatible address \(RFC 4291\)/);
    for (const address of ['64:ff9b:1::a00:1', '64:ff9b:1::808:808'])
      expect(verdict(p, address), address).to.match(/local-use NAT64 address \(RFC 8215\)/);
    expect(verdict(p, '2001:0:808:808::1')).to.match(/Teredo address \(RFC 4380\)/);
  });

  it('refuse what is not an IP address', () => {
    expect(verdict(p, 'example.com')).to.match(/refused: not an IP address/);
  });
});

describe('outbound policy: OUTBOUND_ALLOWLIST overrides the rule for what it names', () => {
  it('allows a named special block, a named embedding address, or the IPv4 address it embeds', () => {
    const p = policy('192.0.2.0/24,2001:db8::/32,127.0.0.0/8,2002:a00:1::/48');
    for (const address of ['192.0.2.9', '2001:db8::9', '2002:7f00:1::1', '64:ff9b::7f00:1', '2002:a00:1::5'])
      expect(verdict(p, address), address).to.equal(ALLOWED);
    expect(verdict(p, '198.51.100.1')).to.match(/documentation address/);
    expect(verdict(p, '2002:a00:2::5')).to.match(/6to4 address embedding 10\.0\.0\.2/);
  });
});

describe("outbound policy: this machine's own addresses", () => {
  it('are refused although globally reachable, also when carried by a 6to4 or NAT64 address, unless allow-listed', () => {
    const machine = new MachineAddresses(() => ['8.8.4.4', '2606:4700:4700::1001', '127.0.0.1', '::1']);
    const p = policy('', machine);
    expect(verdict(p, '8.8.4.4')).to.equal(
      'Outbound request to 8.8.4.4 refused: an address of this machine (allow it with OUTBOUND_ALLOWLIST)',
    );
    expect(verdict(p, '2606:4700:4700:0:0:0:0:1001')).to.match(/an address of this machine/);
    expect(verdict(p, '::ffff:8.8.4.4')).to.match(
      /IPv4-mapped address embedding 8\.8\.4\.4 \(an address of this machine\)/,
    );
    expect(verdict(p, '2002:808:404::1')).to.match(/6to4 address embedding 8\.8\.4\.4 \(an address of this machine\)/);
    expect(verdict(p, '64:ff9b::808:404')).to.match(
      /NAT64 address embedding 8\.8\.4\.4 \(an address of this machine\)/,
    );
    // Loopback keeps its registry reason.
    expect(verdict(p, '127.0.0.1')).to.match(/loopback address \(RFC 1122\)/);
    expect(verdict(p, '8.8.8.8')).to.equal(ALLOWED);
    expect(verdict(policy('8.8.4.4,2606:4700:4700::1001', machine), '8.8.4.4')).to.equal(ALLOWED);
    expect(verdict(policy('8.8.4.4,2606:4700:4700::1001', machine), '2606:4700:4700::1001')).to.equal(ALLOWED);
  });

  it('are read again after 30 s, or at once on demand, and kept when the interfaces cannot be read', () => {
    let now = 1_000_000;
    let list: string[] | Error = ['8.8.4.4'];
    let reads = 0;
    const machine = new MachineAddresses(
      () => {
        reads++;
        if (list instanceof Error) throw list;
        return list;
      },
      { now: () => now },
    );
    const p = policy('', machine);
    expect(verdict(p, '8.8.4.4')).to.match(/an address of this machine/);
    for (let i = 0; i < 100; i++) verdict(p, '9.9.9.9');
    expect(reads, 'read once, not per check').to.equal(1);
    list = ['9.9.9.9'];
    now += 29_999;
    expect(verdict(p, '9.9.9.9')).to.equal(ALLOWED);
    now += 1;
    expect(verdict(p, '9.9.9.9')).to.match(/an address of this machine/);
    expect(verdict(p, '8.8.4.4')).to.equal(ALLOWED);
    list = ['1.0.0.1'];
    p.refreshMachineAddresses();
    expect(verdict(p, '1.0.0.1')).to.match(/an address of this machine/);
    list = new Error('uv_interface_addresses failed');
    now += 30_000;
    expect(verdict(p, '1.0.0.1')).to.match(/an address of this machine/);
    expect(reads).to.equal(4);
  });

  it('by default are the addresses os.networkInterfaces() lists, every one refused without OUTBOUND_ALLOWLIST', function () {
    const own = Object.values(os.networkInterfaces())
      .flatMap((list) => list ?? [])
      .map((i) => i.address)
      .filter((a) => !/^(127\.|::1$)/.test(a));
    if (own.length === 0) this.skip(); // this machine has no address but loopback
    const p = new OutboundPolicy(parseOutboundAllowlist(''));
    for (const address of own) expect(verdict(p, address), address).to.match(/an address of this machine/);
    expect(verdict(new OutboundPolicy(parseOutboundAllowlist(own.join(','))), own[0]!)).to.equal(ALLOWED);
  });
});
