/**
 * Addresses of this machine's own network interfaces that a test can listen on and call: not
 * loopback, and not link-local (those need a zone to connect to). The outbound policy refuses
 * them (src/kernel/address-rule.ts); a machine that has none skips the tests that need one,
 * with a note saying so.
 */
import os from 'node:os';

export function ownAddresses(): Array<{ address: string; family: 4 | 6 }> {
  return Object.values(os.networkInterfaces())
    .flatMap((list) => list ?? [])
    .filter((i) => !i.internal && !/^fe[89ab]/i.test(i.address))
    .map((i) => ({ address: i.address, family: i.family === 'IPv4' ? (4 as const) : (6 as const) }));
}

/** The first own address of each family; skips the suite (with a note) when there is none. */
export function requireOwnAddresses(ctx: Mocha.Context): Array<{ address: string; family: 4 | 6 }> {
  const all = ownAddresses();
  const picked = [all.find((a) => a.family === 4), all.find((a) => a.family === 6)].filter(
    (a): a is { address: string; family: 4 | 6 } => a !== undefined,
  );
  if (picked.length > 0) return picked;
  process.stderr.write(
    "\nNOTE: this machine has no network interface address but loopback and link-local; the tests of the outbound policy's own-address rule are skipped.\n",
  );
  ctx.skip();
}

/** `address` as the host part of a URL. */
export function urlHost(address: string): string {
  return address.includes(':') ? `[${address}]` : address;
}
