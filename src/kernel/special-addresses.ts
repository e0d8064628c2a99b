/**
 * The address blocks the outbound policy (src/kernel/outbound.ts, address-rule.ts) judges
 * specially: every entry of IANA's IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890
 * and the RFCs that updated them, as the registries stood in 2025), plus the blocks those
 * registries leave to others: multicast (the IPv4 and IPv6 Multicast Address Space
 * registries), the deprecated IPv4-compatible and site-local IPv6 forms, and every IPv6 block
 * outside global unicast 2000::/3 (the IPv6 Address Space registry). An address outside every
 * block here is public unicast.
 *
 * An address is judged by the most specific block that holds it. `globallyReachable` is the
 * registries' "Globally Reachable" column: true allows, false refuses, and 'n/a' (the column's
 * N/A, or no value for a deprecated block) refuses. A block that embeds an IPv4 address
 * (`embedsIpv4`) is judged instead by the IPv4 address it carries, under the same rule: where
 * an IPv4-mapped, NAT64 or 6to4 address leads is where that IPv4 address leads (the registry
 * marks 6to4 N/A and NAT64 true for that reason).
 */

export type SpecialRegistry =
  | 'IANA IPv4 Special-Purpose Address Registry'
  | 'IANA IPv6 Special-Purpose Address Registry'
  | 'IANA IPv4 Multicast Address Space Registry'
  | 'IANA IPv6 Multicast Address Space Registry'
  | 'IANA IPv6 Address Space Registry';

export interface SpecialBlock {
  /** The block as a CIDR. */
  readonly block: string;
  /** The registry's name for the block. */
  readonly name: string;
  /** The RFC that defines the block, as a refusal cites it. */
  readonly rfc: string;
  readonly registry: SpecialRegistry;
  readonly globallyReachable: boolean | 'n/a';
  /** What a refusal calls an address of the block, e.g. "documentation address". */
  readonly label: string;
  /** The block carries an IPv4 address at bit `offset` (a multiple of 16); `form` names such an address. */
  readonly embedsIpv4?: { readonly offset: number; readonly form: string };
}

type Row = [block: string, name: string, rfc: string, globallyReachable: boolean | 'n/a', label: string];

const rows = (registry: SpecialRegistry, table: readonly Row[]): SpecialBlock[] =>
  table.map(([block, name, rfc, globallyReachable, label]) => ({
    block,
    name,
    rfc,
    registry,
    globallyReachable,
    label,
  }));

/** IANA IPv4 Special-Purpose Address Registry. */
// prettier-ignore
const IPV4_REGISTRY: readonly Row[] = [
  ['0.0.0.0/8',          '"This network"',                            'RFC 791',  false, 'this-network address'],
  ['0.0.0.0/32',         '"This host on this network"',               'RFC 1122', false, 'unspecified address'],
  ['10.0.0.0/8',         'Private-Use',                               'RFC 1918', false, 'private address'],
  ['100.64.0.0/10',      'Shared Address Space',                      'RFC 6598', false, 'carrier-grade NAT address'],
  ['127.0.0.0/8',        'Loopback',                                  'RFC 1122', false, 'loopback address'],
  ['169.254.0.0/16',     'Link Local',                                'RFC 3927', false, 'link-local or cloud metadata address'],
  ['172.16.0.0/12',      'Private-Use',                               'RFC 1918', false, 'private address'],
  ['192.0.0.0/24',       'IETF Protocol Assignments',                 'RFC 6890', false, 'IETF protocol assignment address'],
  ['192.0.0.0/29',       'IPv4 Service Continuity Prefix',            'RFC 7335', false, 'IPv4 service continuity address'],
  ['192.0.0.8/32',       'IPv4 dummy address',                        'RFC 7600', false, 'IPv4 dummy address'],
  ['192.0.0.9/32',       'Port Control Protocol Anycast',             'RFC 7723', true,  'PCP anycast address'],
  ['192.0.0.10/32',      'Traversal Using Relays around NAT Anycast', 'RFC 8155', true,  'TURN anycast address'],
  ['192.0.0.170/32',     'NAT64/DNS64 Discovery',                     'RFC 8880', false, 'NAT64/DNS64 discovery address'],
  ['192.0.0.171/32',     'NAT64/DNS64 Discovery',                     'RFC 8880', false, 'NAT64/DNS64 discovery address'],
  ['192.0.2.0/24',       'Documentation (TEST-NET-1)',                'RFC 5737', false, 'documentation address'],
  ['192.31.196.0/24',    'AS112-v4',                                  'RFC 7535', true,  'AS112 address'],
  ['192.52.193.0/24',    'AMT',                                       'RFC 7450', true,  'AMT address'],
  ['192.88.99.0/24',     'Deprecated (6to4 Relay Anycast)',           'RFC 7526', 'n/a', 'deprecated 6to4 relay anycast address'],
  ['192.88.99.2/32',     '6a44-relay anycast address',                'RFC 6751', false, '6a44 relay anycast address'],
  ['192.168.0.0/16',     'Private-Use',                               'RFC 1918', false, 'private address'],
  ['192.175.48.0/24',    'Direct Delegation AS112 Service',           'RFC 7534', true,  'AS112 address'],
  ['198.18.0.0/15',      'Benchmarking',                              'RFC 2544', false, 'benchmarking address'],
  ['198.51.100.0/24',    'Documentation (TEST-NET-2)',                'RFC 5737', false, 'documentation address'],
  ['203.0.113.0/24',     'Documentation (TEST-NET-3)',                'RFC 5737', false, 'documentation address'],
  ['240.0.0.0/4',        'Reserved',                                  'RFC 1112', false, 'reserved address'],
  ['255.255.255.255/32', 'Limited Broadcast',                         'RFC 919',  false, 'limited broadcast address'],
];

/** IANA IPv6 Special-Purpose Address Registry (the embedding blocks are completed below). */
// prettier-ignore
const IPV6_REGISTRY: readonly Row[] = [
  ['::1/128',           'Loopback Address',                                    'RFC 4291', false, 'loopback address'],
  ['::/128',            'Unspecified Address',                                 'RFC 4291', false, 'unspecified address'],
  ['::ffff:0:0/96',     'IPv4-mapped Address',                                 'RFC 4291', false, 'IPv4-mapped address'],
  ['64:ff9b::/96',      'IPv4-IPv6 Translat.',                                 'RFC 6052', true,  'NAT64 address'],
  ['64:ff9b:1::/48',    'IPv4-IPv6 Translat.',                                 'RFC 8215', false, 'local-use NAT64 address'],
  ['100::/64',          'Discard-Only Address Block',                          'RFC 6666', false, 'discard-only address'],
  ['100:0:0:1::/64',    'Dummy IPv6 Prefix',                                   'RFC 9780', false, 'dummy IPv6 address'],
  ['2001::/23',         'IETF Protocol Assignments',                           'RFC 2928', false, 'IETF protocol assignment address'],
  // Teredo carries its server's and (obfuscated) client's IPv4 addresses; the registry says N/A: refused.
  ['2001::/32',         'TEREDO',                                              'RFC 4380', 'n/a', 'Teredo address'],
  ['2001:1::1/128',     'Port Control Protocol Anycast',                       'RFC 7723', true,  'PCP anycast address'],
  ['2001:1::2/128',     'Traversal Using Relays around NAT Anycast',           'RFC 8155', true,  'TURN anycast address'],
  ['2001:1::3/128',     'DNS-SD Service Registration Protocol Anycast Address', 'RFC 9665', true, 'DNS-SD SRP anycast address'],
  ['2001:2::/48',       'Benchmarking',                                        'RFC 5180', false, 'benchmarking address'],
  ['2001:3::/32',       'AMT',                                                 'RFC 7450', true,  'AMT address'],
  ['2001:4:112::/48',   'AS112-v6',                                            'RFC 7535', true,  'AS112 address'],
  ['2001:10::/28',      'Deprecated (previously ORCHID)',                      'RFC 4843', 'n/a', 'deprecated ORCHID address'],
  ['2001:20::/28',      'ORCHIDv2',                                            'RFC 7343', true,  'ORCHIDv2 address'],
  ['2001:30::/28',      'Drone Remote ID Protocol Entity Tags (DETs) Prefix',  'RFC 9374', true,  'DET address'],
  ['2001:db8::/32',     'Documentation',                                       'RFC 3849', false, 'documentation address'],
  ['2002::/16',         '6to4',                                                'RFC 3056', 'n/a', '6to4 address'],
  ['2620:4f:8000::/48', 'Direct Delegation AS112 Service',                     'RFC 7534', true,  'AS112 address'],
  ['3fff::/20',         'Documentation',                                       'RFC 9637', false, 'documentation address'],
  ['5f00::/16',         'Segment Routing (SRv6) SIDs',                         'RFC 9602', false, 'SRv6 SID address'],
  ['fc00::/7',          'Unique-Local',                                        'RFC 4193', false, 'private address'],
  ['fe80::/10',         'Link-Local Unicast',                                  'RFC 4291', false, 'link-local address'],
];

/** Outside global unicast 2000::/3 (IANA IPv6 Address Space Registry), and its deprecated forms. */
// prettier-ignore
const IPV6_SPACE: readonly Row[] = [
  ['::/96',     'IPv4-compatible IPv6 address (deprecated)', 'RFC 4291', false, 'IPv4-compatible address'],
  ['fec0::/10', 'Site-local unicast (deprecated)',           'RFC 3879', false, 'site-local address'],
  ['::/3',      'Reserved by IETF',                          'RFC 4291', false, 'address outside global unicast'],
  ['4000::/2',  'Reserved by IETF',                          'RFC 4291', false, 'address outside global unicast'],
  ['8000::/1',  'Reserved by IETF',                          'RFC 4291', false, 'address outside global unicast'],
];

/** Where each embedding block carries its IPv4 address: the last 32 bits, or bits 16–47 (6to4). */
const EMBEDS: Readonly<Record<string, SpecialBlock['embedsIpv4']>> = {
  '::ffff:0:0/96': { offset: 96, form: 'IPv4-mapped address' },
  '64:ff9b::/96': { offset: 96, form: 'NAT64 address' },
  '2002::/16': { offset: 16, form: '6to4 address' },
};

export const SPECIAL_IPV4: readonly SpecialBlock[] = [
  ...rows('IANA IPv4 Special-Purpose Address Registry', IPV4_REGISTRY),
  // Multicast is never a unicast destination.
  ...rows('IANA IPv4 Multicast Address Space Registry', [
    ['224.0.0.0/4', 'Multicast', 'RFC 5771', false, 'multicast address'],
  ]),
];

export const SPECIAL_IPV6: readonly SpecialBlock[] = [
  ...rows('IANA IPv6 Special-Purpose Address Registry', IPV6_REGISTRY).map((b) =>
    EMBEDS[b.block] ? { ...b, embedsIpv4: EMBEDS[b.block] } : b,
  ),
  ...rows('IANA IPv6 Multicast Address Space Registry', [
    ['ff00::/8', 'Multicast', 'RFC 4291', false, 'multicast address'],
  ]),
  ...rows('IANA IPv6 Address Space Registry', IPV6_SPACE),
];
