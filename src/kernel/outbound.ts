/**
 * Outbound HTTP to user-given URLs (event trigger URLs, workflow `http` steps, application
 * server upstreams, browser pages), guarded against SSRF by a positive rule (address-rule.ts):
 * a destination address is allowed only when it is globally reachable unicast according to
 * IANA's special-purpose address registries (special-addresses.ts) and is not one of this
 * machine's own interface addresses; IPv4-mapped, NAT64 and 6to4 addresses are judged by the
 * IPv4 address they carry. OUTBOUND_ALLOWLIST (CIDRs, addresses or host names) allows what it
 * names. The check runs in the socket's own `lookup`, on the address actually connected to,
 * after DNS (a name that resolves to 10.0.0.5 is refused however it is spelled); IP literals
 * are checked before connecting. URLs on the service's own origins are always allowed. Event
 * calls use outboundRequest(); workflow `http` steps and application server upstreams use
 * policyFetch(), whose every connection (redirect hops included) passes the same check. URLs
 * an organisation registers are judged up front by registrationRefusal(). Both keep each
 * organisation's connections in pools of its own (org-pools.ts, orgFetches), so no call reuses a
 * connection another organisation's calls opened.
 */
import http from 'node:http';
import https from 'node:https';
import dns from 'node:dns';
import type net from 'node:net';
import { isIP } from 'node:net';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { AddressRanges, judgeAddress, machineAddresses, parseIp, type MachineAddresses } from './address-rule.js';
import { agentPair, OrgPools, releaseDispatcher, type AgentPair } from './org-pools.js';

export interface OutboundAllowlist {
  ranges: AddressRanges;
  hosts: ReadonlySet<string>;
  entries: readonly string[];
}

export class OutboundAllowlistError extends Error {}

/** `127.0.0.0/8,::1/128,internal.example.com` → the allow-list; a bad entry throws naming it. */
export function parseOutboundAllowlist(value: string | undefined): OutboundAllowlist {
  const ranges = new AddressRanges();
  const hosts = new Set<string>();
  const entries = (value ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e.length > 0);
  for (const entry of entries) {
    const [addr, bits, extra] = entry.split('/');
    const family = isIP(addr ?? '');
    if (extra !== undefined)
      throw new OutboundAllowlistError(`OUTBOUND_ALLOWLIST: "${entry}" is not a CIDR, an address or a host name`);
    if (family !== 0) {
      const max = family === 4 ? 32 : 128;
      const prefix = bits === undefined ? max : Number(bits);
      if (!/^\d+$/.test(bits ?? String(max)) || prefix > max)
        throw new OutboundAllowlistError(`OUTBOUND_ALLOWLIST: "${entry}" has an invalid prefix length`);
      ranges.add(`${addr}/${prefix}`);
    } else if (
      bits === undefined &&
      /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/i.test(entry)
    ) {
      hosts.add(entry.toLowerCase());
    } else {
      throw new OutboundAllowlistError(`OUTBOUND_ALLOWLIST: "${entry}" is not a CIDR, an address or a host name`);
    }
  }
  return { ranges, hosts, entries };
}

/** A refused destination; `address` and `reason` (e.g. "loopback address (RFC 1122)") say which and why. */
export class OutboundRefusedError extends Error {
  constructor(
    message: string,
    readonly detail?: { address: string; reason: string },
  ) {
    super(message);
  }
}

/** How long registrationRefusal() waits for DNS before leaving the name to the connect-time check. */
export const REGISTRATION_RESOLVE_MS = 2_000;

/** Every address of `host`, or undefined when it does not resolve within `ms`. */
function resolveAll(host: string, ms: number): Promise<dns.LookupAddress[] | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    dns.lookup(host, { all: true }, (err, addresses) => {
      clearTimeout(timer);
      resolve(err || addresses.length === 0 ? undefined : addresses);
    });
  });
}

/** Where the service listens: `host` as given to listen() (HOST) and its port. */
export interface ServiceListener {
  host: string;
  port: number;
}

/**
 * The loopback origins that reach the service itself through `listener`, each with the address
 * family to connect with (0: any). A service on 0.0.0.0 or 127.0.0.1 is `127.0.0.1` and
 * `localhost` (connected over IPv4, so a name that also resolves to ::1 cannot reach another
 * process on ::1 at the same port); on `::` (dual stack) also `[::1]`; on ::1 `[::1]` and
 * `localhost` over IPv6. A service listening on another interface only, or on port 0 (chosen at
 * listen time), has none: loopback on its port is some other process.
 */
export function loopbackSelfOrigins({ host, port }: ServiceListener): Map<string, 0 | 4 | 6> {
  const origins = new Map<string, 0 | 4 | 6>();
  if (port <= 0) return origins;
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  const dualStack = isIP(h) === 6 && /^[0:]+$/.test(h);
  const v4 = dualStack || h === '0.0.0.0' ? '127.0.0.1' : isIP(h) === 4 && h.startsWith('127.') ? h : undefined;
  const v6 = dualStack || h === '::1';
  const add = (hostPart: string, family: 0 | 4 | 6) =>
    origins.set(new URL(`http://${hostPart}:${port}`).origin, family);
  if (v4) add(v4, 4);
  if (v6) add('[::1]', 6);
  if (v4 === '127.0.0.1' || v6 || h === 'localhost')
    add('localhost', v4 === '127.0.0.1' && !v6 ? 4 : v6 && !v4 ? 6 : 0);
  return origins;
}

export class OutboundPolicy {
  private readonly origins: ReadonlySet<string>;
  /** Loopback origins that are the service itself, with the address family that reaches it. */
  private readonly selfLoopback: ReadonlyMap<string, 0 | 4 | 6>;
  /**
   * Keep-alive pools per organisation (kernel/org-pools.ts): `checked` ones whose new
   * connections go through the checked lookup, and `trusted` ones for the service's own origins
   * and allow-listed host names (no address check).
   */
  private readonly orgAgents: OrgPools<{ checked: AgentPair; trusted: AgentPair }>;

  /** This machine's own addresses (the process-wide set unless a test gives its own). */
  private readonly machine: MachineAddresses;

  /**
   * `alwaysAllowOrigins`: the service's public origins. `listener`: where the service listens,
   * whose loopback names on its port are the service too (loopbackSelfOrigins).
   */
  constructor(
    private readonly allowlist: OutboundAllowlist,
    alwaysAllowOrigins: readonly string[] = [],
    opts: { listener?: ServiceListener | undefined; machine?: MachineAddresses } = {},
  ) {
    this.machine = opts.machine ?? machineAddresses;
    this.origins = new Set(alwaysAllowOrigins.map((o) => new URL(o).origin));
    this.selfLoopback = opts.listener ? loopbackSelfOrigins(opts.listener) : new Map();
    const lookup = this.lookup();
    this.orgAgents = new OrgPools(() => ({ checked: agentPair({ lookup }), trusted: agentPair() }));
  }

  /** The keep-alive agent for `url` of an organisation's calls (checked unless the origin is trusted). */
  agentFor(orgId: string, url: URL): http.Agent {
    const pools = this.orgAgents.of(orgId);
    const pair = this.allowsOrigin(url) ? pools.trusted : pools.checked;
    return url.protocol === 'https:' ? pair.https : pair.http;
  }

  allowsOrigin(url: URL): boolean {
    return (
      this.origins.has(url.origin) ||
      this.selfLoopback.has(url.origin) ||
      this.allowlist.hosts.has(url.hostname.toLowerCase())
    );
  }

  /** The address family to connect to `url` with when it is a loopback name of the service itself. */
  selfFamily(url: URL): 4 | 6 | undefined {
    return this.selfLoopback.get(url.origin) || undefined;
  }

  /** Throws OutboundRefusedError when `address` (an IP) may not be connected to. */
  check(address: string): void {
    const ip = parseIp(address);
    const refusal = ip ? judgeAddress(ip, this.allowlist.ranges, this.machine) : { reason: 'not an IP address' };
    if (refusal)
      throw new OutboundRefusedError(
        `Outbound request to ${address} refused: ${refusal.reason} (allow it with OUTBOUND_ALLOWLIST)`,
        { address, reason: refusal.reason },
      );
  }

  /** Reads this machine's addresses again now (they are also read again every 30 s). */
  refreshMachineAddresses(): void {
    this.machine.refresh();
  }

  /** The reason check() gives for `address`, or undefined when it may be connected to. */
  private reasonFor(address: string): string | undefined {
    try {
      this.check(address);
      return undefined;
    } catch (err) {
      return (err as OutboundRefusedError).detail?.reason;
    }
  }

  /**
   * Why an organisation may not register `url` as a destination, or undefined when it may.
   * The service's own origins and allow-listed host names pass. An IP literal is refused when
   * check() refuses it. A name is refused when any address it resolves to now is refused
   * (`localhost` included): every connection to it would be, as lookup() checks each address.
   * A name that does not resolve within `resolveMs` passes: DNS answers change, and every
   * connection is checked after DNS anyway.
   */
  async registrationRefusal(url: URL, resolveMs = REGISTRATION_RESOLVE_MS): Promise<string | undefined> {
    if (this.allowsOrigin(url)) return undefined;
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host)) {
      const reason = this.reasonFor(host);
      return (
        reason && `${host} is an address the outbound policy refuses (${reason}; allow it with OUTBOUND_ALLOWLIST)`
      );
    }
    const addresses = await resolveAll(host, resolveMs);
    const reasons = new Set(
      (addresses ?? []).map((a) => this.reasonFor(a.address)).filter((r): r is string => r !== undefined),
    );
    if (reasons.size === 0) return undefined;
    return `${host} resolves to an address the outbound policy refuses (${[...reasons].join(', ')}; allow it with OUTBOUND_ALLOWLIST)`;
  }

  /**
   * A `lookup` for node:net that resolves, then refuses what check() refuses. node:net asks for
   * every address (`all`) when it tries them in turn (autoSelectFamily, on by default): then
   * each one is checked and any refused one refuses the name, so no attempt reaches it.
   */
  lookup(): net.LookupFunction {
    return (hostname, options, callback) => {
      if (options.all) {
        dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
          if (err) return callback(err, [], 0);
          try {
            for (const a of addresses) this.check(a.address);
          } catch (refused) {
            return callback(refused as NodeJS.ErrnoException, [], 0);
          }
          callback(null, addresses);
        });
        return;
      }
      dns.lookup(hostname, { ...options, all: false }, (err, address, family) => {
        if (err) return callback(err, '', 0);
        try {
          this.check(address);
        } catch (refused) {
          return callback(refused as NodeJS.ErrnoException, '', 0);
        }
        callback(null, address, family);
      });
    };
  }
}

export type OutboundErrorKind = 'refused' | 'timeout' | 'too_large' | 'network';

export class OutboundError extends Error {
  constructor(
    readonly kind: OutboundErrorKind,
    message: string,
  ) {
    super(message);
  }
}

export interface OutboundOptions {
  /** The organisation the call is made for: its connections are kept in its own pool (kernel/org-pools.ts). */
  orgId: string;
  method: string;
  headers: Record<string, string>;
  body?: string | Buffer | undefined;
  timeoutMs: number;
  maxResponseBytes: number;
  /** Event calls follow no redirects: a 3xx is the answer. */
  followRedirects?: false;
}

export interface OutboundResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  durationMs: number;
}

/** One request through the policy; never leaks the URL's query (keys) into messages. */
export function outboundRequest(
  target: string,
  opts: OutboundOptions,
  policy: OutboundPolicy,
): Promise<OutboundResponse> {
  const started = performance.now();
  const url = new URL(target);
  const where = `${url.protocol}//${url.host}`;
  return new Promise<OutboundResponse>((resolve, reject) => {
    let settled = false;
    const fail = (err: OutboundError) => {
      if (settled) return;
      settled = true;
      reject(err);
    };
    const trusted = policy.allowsOrigin(url);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!trusted && isIP(host)) {
      try {
        policy.check(host);
      } catch (err) {
        return fail(new OutboundError('refused', (err as Error).message));
      }
    }
    const mod = url.protocol === 'https:' ? https : http;
    const req = mod.request(
      url,
      {
        method: opts.method,
        headers: {
          ...opts.headers,
          ...(opts.body !== undefined ? { 'content-length': String(Buffer.byteLength(opts.body)) } : {}),
        },
        agent: policy.agentFor(opts.orgId, url),
        family: policy.selfFamily(url),
        timeout: opts.timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > opts.maxResponseBytes) {
            // Settle first: the socket is thrown away, whatever it emits next is ignored.
            fail(new OutboundError('too_large', `The answer of ${where} exceeds ${opts.maxResponseBytes} bytes`));
            res.destroy();
            req.destroy();
            return;
          }
          chunks.push(c);
        });
        res.on('end', () => {
          if (settled) return;
          settled = true;
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
            durationMs: performance.now() - started,
          });
        });
        res.on('error', (err) =>
          fail(err instanceof OutboundError ? err : new OutboundError('network', `${where}: ${err.message}`)),
        );
      },
    );
    const deadline = setTimeout(() => {
      fail(new OutboundError('timeout', `${where} did not answer within ${opts.timeoutMs} ms`));
      req.destroy();
    }, opts.timeoutMs);
    req.on('close', () => clearTimeout(deadline));
    req.on('error', (err: Error) => {
      if (err instanceof OutboundError) return fail(err);
      if (err instanceof OutboundRefusedError) return fail(new OutboundError('refused', err.message));
      fail(new OutboundError('network', `${where}: ${err.message}`));
    });
    req.end(opts.body);
  });
}

/**
 * A fetch (undici's, matching the Response the http step reads) whose every new connection,
 * redirect hops included, goes through the policy: IP literals are checked before connecting,
 * names after DNS on the address connected to. The service's own origins and allow-listed
 * host names connect unchecked. Its connections are kept in `dispatcher` (one per organisation
 * where organisations call: orgFetches).
 */
export function policyFetch(policy: OutboundPolicy, dispatcher: Agent = policyDispatcher(policy)): typeof fetch {
  const guarded = (input: Parameters<typeof undiciFetch>[0], init?: Parameters<typeof undiciFetch>[1]) =>
    undiciFetch(input, { ...init, dispatcher });
  return guarded as unknown as typeof fetch;
}

/** An undici dispatcher whose new connections pass the policy (see policyFetch). */
export function policyDispatcher(policy: OutboundPolicy): Agent {
  const checked = buildConnector({ lookup: policy.lookup() } as buildConnector.BuildOptions);
  const plain = buildConnector({});
  const connect: buildConnector.connector = (opts, callback) => {
    const url = new URL(`${opts.protocol}//${opts.host}`);
    if (policy.allowsOrigin(url)) return plain(opts, callback);
    const host = opts.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host)) {
      try {
        policy.check(host);
      } catch (err) {
        return callback(err as Error, null);
      }
    }
    return checked(opts, callback);
  };
  return new Agent({ connect });
}

/** policyFetch per organisation: each organisation's connections in a dispatcher of its own. */
export interface OrgFetches {
  of(orgId: string): typeof fetch;
  /** Closes every dispatcher once its calls under way have ended (shutdown). */
  close(): void;
}

export function orgFetches(policy: OutboundPolicy, wrap: (f: typeof fetch) => typeof fetch = (f) => f): OrgFetches {
  const pools = new OrgPools<{ dispatcher: Agent; fetch: typeof fetch }>(
    () => {
      const dispatcher = policyDispatcher(policy);
      return { dispatcher, fetch: wrap(policyFetch(policy, dispatcher)) };
    },
    { release: (p) => releaseDispatcher(p.dispatcher) },
  );
  return { of: (orgId) => pools.of(orgId).fetch, close: () => pools.clear() };
}
