/**
 * The outbound policy's rule for one destination address (src/kernel/outbound.ts check()): an
 * address may be connected to only when it is globally reachable unicast and not an address of
 * this machine, unless OUTBOUND_ALLOWLIST names it. Globally reachable is what IANA's
 * special-purpose registries say (special-addresses.ts, most specific block first); an
 * IPv4-mapped, NAT64 or 6to4 address is judged by the IPv4 address it carries, allow-list
 * included. An address is parsed once into numbers and matched against blocks computed at
 * load, most specific first: a check costs one pass over the table and allocates only the
 * parsed address.
 */
import os from 'node:os';
import { isIP } from 'node:net';
import { SPECIAL_IPV4, SPECIAL_IPV6, type SpecialBlock } from './special-addresses.js';

/** An IP address as numbers: IPv4 as one unsigned 32-bit value, IPv6 as eight 16-bit groups. */
export type Ip =
  { readonly family: 4; readonly v4: number } | { readonly family: 6; readonly groups: readonly number[] };

function parseV4(text: string): number {
  const [a, b, c, d] = text.split('.').map(Number);
  return ((a! << 24) | (b! << 16) | (c! << 8) | d!) >>> 0;
}

/** `text` as groups; `text` is a valid IPv6 address (isIP), a zone (`%eth0`) ignored. */
function parseV6(text: string): number[] {
  const zone = text.indexOf('%');
  let s = zone >= 0 ? text.slice(0, zone) : text;
  const lastColon = s.lastIndexOf(':');
  if (s.includes('.', lastColon)) {
    const v4 = parseV4(s.slice(lastColon + 1));
    s = `${s.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const gap = s.indexOf('::');
  const head = gap >= 0 ? s.slice(0, gap) : s;
  const tail = gap >= 0 ? s.slice(gap + 2) : '';
  const first = head ? head.split(':') : [];
  const last = tail ? tail.split(':') : [];
  const groups = new Array<number>(8).fill(0);
  first.forEach((g, i) => (groups[i] = parseInt(g, 16)));
  last.forEach((g, i) => (groups[8 - last.length + i] = parseInt(g, 16)));
  return groups;
}

/** The address `text` spells, or undefined when it is not an IP address. */
export function parseIp(text: string): Ip | undefined {
  const family = isIP(text);
  if (family === 4) return { family: 4, v4: parseV4(text) };
  if (family === 6) return { family: 6, groups: parseV6(text) };
  return undefined;
}

function formatIpv4(v4: number): string {
  return `${v4 >>> 24}.${(v4 >>> 16) & 0xff}.${(v4 >>> 8) & 0xff}.${v4 & 0xff}`;
}

/** A CIDR block, precomputed for matching. */
interface Block {
  family: 4 | 6;
  bits: number;
  /** IPv4: the network and its mask. */
  net4: number;
  mask4: number;
  /** IPv6: the network's groups. */
  net6: number[];
}

export class CidrError extends Error {}

/** `10.0.0.0/8`, `::1/128` or a bare address (a host block) as a Block; throws CidrError when malformed. */
function block(cidr: string): Block {
  const [addr, bitsText, extra] = cidr.split('/');
  const ip = parseIp(addr ?? '');
  if (!ip || extra !== undefined) throw new CidrError(`"${cidr}" is not a CIDR or an address`);
  const max = ip.family === 4 ? 32 : 128;
  if (bitsText !== undefined && !/^\d{1,3}$/.test(bitsText))
    throw new CidrError(`"${cidr}" has an invalid prefix length`);
  const bits = bitsText === undefined ? max : Number(bitsText);
  if (bits > max) throw new CidrError(`"${cidr}" has an invalid prefix length`);
  if (ip.family === 4) {
    const mask4 = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
    return { family: 4, bits, net4: (ip.v4 & mask4) >>> 0, mask4, net6: [] };
  }
  const net6 = ip.groups.map((g, i) => g & groupMask(bits, i));
  return { family: 6, bits, net4: 0, mask4: 0, net6 };
}

/** The mask of group `i` (16 bits each) under a prefix of `bits`. */
function groupMask(bits: number, i: number): number {
  const inGroup = Math.min(16, Math.max(0, bits - 16 * i));
  return inGroup === 0 ? 0 : (0xffff << (16 - inGroup)) & 0xffff;
}

function contains(b: Block, ip: Ip): boolean {
  if (ip.family === 4) return b.family === 4 && (ip.v4 & b.mask4) >>> 0 === b.net4;
  if (b.family !== 6) return false;
  let bits = b.bits;
  for (let i = 0; bits > 0; i++, bits -= 16) {
    const mask = bits >= 16 ? 0xffff : (0xffff << (16 - bits)) & 0xffff;
    if ((ip.groups[i]! & mask) !== b.net6[i]) return false;
  }
  return true;
}

/** A set of CIDR blocks (the allow-list's addresses). */
export class AddressRanges {
  private readonly blocks: Block[] = [];

  /** Adds `cidr` (`10.0.0.0/8`, `::1/128`, `10.1.2.3`); throws CidrError when malformed. */
  add(cidr: string): void {
    this.blocks.push(block(cidr));
  }

  has(address: Ip | string): boolean {
    const ip = typeof address === 'string' ? parseIp(address) : address;
    return ip !== undefined && this.blocks.some((b) => contains(b, ip));
  }
}

/** The special blocks, most specific first: the first that holds an address judges it. */
const SPECIAL = [...SPECIAL_IPV4, ...SPECIAL_IPV6]
  .map((special) => ({ special, at: block(special.block) }))
  .sort((x, y) => y.at.bits - x.at.bits);

/** The most specific special block holding `ip`, or undefined for public unicast. */
export function specialBlockOf(ip: Ip): SpecialBlock | undefined {
  for (const { special, at } of SPECIAL) if (contains(at, ip)) return special;
  return undefined;
}

function key(ip: Ip): string {
  return ip.family === 4 ? String(ip.v4) : ip.groups.join(':');
}

function isLoopback(ip: Ip): boolean {
  return ip.family === 4 ? ip.v4 >>> 24 === 127 : key(ip) === '0:0:0:0:0:0:0:1';
}

/** How often the machine's own addresses are read again. */
export const MACHINE_ADDRESSES_MAX_AGE_MS = 30_000;

/** Every address of the machine's network interfaces, all families. */
function interfaceAddresses(): string[] {
  return Object.values(os.networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));
}

/**
 * The machine's own addresses, read again when older than `maxAgeMs` or on refresh(), not on
 * every check: os.networkInterfaces() asks the kernel for every interface each time, far
 * dearer than the check itself. Loopback addresses are left out: the registry rule refuses
 * them, naming them loopback.
 */
export class MachineAddresses {
  private keys = new Set<string>();
  private readAt = -Infinity;

  constructor(
    private readonly source: () => Iterable<string> = interfaceAddresses,
    private readonly opts: { maxAgeMs?: number; now?: () => number } = {},
  ) {}

  refresh(): void {
    const now = (this.opts.now ?? Date.now)();
    let addresses: Iterable<string>;
    try {
      addresses = this.source();
    } catch {
      // A platform that cannot list its interfaces keeps the addresses it last read.
      this.readAt = now;
      return;
    }
    const keys = new Set<string>();
    for (const address of addresses) {
      const ip = parseIp(address);
      if (ip && !isLoopback(ip)) keys.add(key(ip));
    }
    this.keys = keys;
    this.readAt = now;
  }

  has(ip: Ip): boolean {
    if ((this.opts.now ?? Date.now)() - this.readAt >= (this.opts.maxAgeMs ?? MACHINE_ADDRESSES_MAX_AGE_MS))
      this.refresh();
    return this.keys.has(key(ip));
  }
}

/** One set per process: every policy refuses the same machine. */
export const machineAddresses = new MachineAddresses();

/** Why an address is refused: `reason` for messages, `label` when another reason embeds it. */
export interface Refusal {
  reason: string;
  label: string;
}

const MACHINE: Refusal = { reason: 'an address of this machine', label: 'an address of this machine' };

/** The IPv4 address `ip` (IPv6) carries at bit `offset` (a multiple of 16). */
function embedded(ip: Ip & { family: 6 }, offset: number): Ip & { family: 4 } {
  const i = offset / 16;
  return { family: 4, v4: ((ip.groups[i]! << 16) | ip.groups[i + 1]!) >>> 0 };
}

/**
 * The refusal of `ip`, or undefined when it may be connected to: allowed when `allow` holds it;
 * refused when it is an address of this machine; else judged by its special block (an
 * embedding block by the IPv4 address it carries); public unicast is allowed.
 */
export function judgeAddress(ip: Ip, allow: AddressRanges, machine: MachineAddresses): Refusal | undefined {
  if (allow.has(ip)) return undefined;
  if (machine.has(ip)) return MACHINE;
  const special = specialBlockOf(ip);
  if (!special) return undefined;
  if (special.embedsIpv4 && ip.family === 6) {
    const inner = embedded(ip, special.embedsIpv4.offset);
    const refused = judgeAddress(inner, allow, machine);
    if (!refused) return undefined;
    const label = `${special.embedsIpv4.form} embedding ${formatIpv4(inner.v4)}`;
    return { reason: `${label} (${refused.label})`, label };
  }
  if (special.globallyReachable === true) return undefined;
  return { reason: `${special.label} (${special.rfc})`, label: special.label };
}
