/**
 * Limits on failed client authentications at the token endpoints (spec section 6; the spec
 * names no request rate limits, so these are ours: openapi/auth.yaml, README "Token endpoint
 * limits"). Two rolling windows:
 *
 * - per source address: an address with `perAddress` failures in the window is refused (429
 *   `too_many_requests`) before its credentials are read, whatever client it names. This is
 *   the brake on guessing: each address gets `perAddress` wrong guesses per window.
 * - per account (the client id of /oauth/token, the X-Selected-Org organisation of the legacy
 *   /auth/token, which names no client): once it has `perAccount` failures in the window,
 *   further wrong secrets for it answer 429 `invalid_client` instead of 401, but a correct
 *   secret still gets its token at once. An attacker can name any client id, so a limit that
 *   refused the right secret would let anyone lock a client out; the secret is checked as
 *   before, so nothing about its existence shows either.
 *
 * A correct authentication is therefore never slowed nor refused by others' failures, only by
 * failures from its own address (a shared NAT address shares its window). Only failed client
 * authentications count (401 or 429 `invalid_client`); requests refused by the address limit
 * are not failures, so an address that keeps hammering gets `perAddress` guesses a window.
 */
import { isIP } from 'node:net';
import type { Config } from '../config/index.js';
import type { Logger } from '../config/logger.js';
import type { RedisClient } from '../storage/redis.js';
import { RedisAddressBlocks, type AddressBlocks } from './address-blocks.js';
import { MemoryFailureWindows, redisFailureWindows, type FailureWindows, type WindowRule } from './failure-windows.js';

export interface ClientAuthLimits {
  windowMs: number;
  /** Failures per client id (or organisation, legacy exchange) per window; 0: no limit. */
  perAccount: number;
  /** Failures per source address per window; 0: no limit. */
  perAddress: number;
}

/** Who attempted a client authentication. */
export interface ClientAttempt {
  /** Window key of the source address (`addressKey`). */
  address: string;
  /** `client:<client id>` or `org:<organisation id>`, when the request named a well-formed one. */
  account?: string | undefined;
}

/** What to answer: go on, or 429 with Retry-After (whole seconds, RFC 9110 section 10.2.3). */
export type LimitVerdict = ({ limited: false } | { limited: true; by: 'address' | 'account'; retryAfterS: number }) & {
  /**
   * The limit this failure reached, worth one log line: the address's window is now full (its
   * next attempts are refused), or the account has just passed its limit.
   */
  reached?: 'address' | 'account';
};

const GO: LimitVerdict = { limited: false };

export interface ClientAuthLimiterOptions {
  now?: () => number;
  /**
   * The blocked addresses this process knows of (with Redis windows): an address not blocked
   * is then admitted without reading its window in the store.
   */
  blocks?: AddressBlocks | undefined;
}

export class ClientAuthLimiter {
  private readonly now: () => number;
  private readonly blocks: AddressBlocks | undefined;

  constructor(
    private readonly windows: FailureWindows,
    private readonly limits: ClientAuthLimits,
    opts: ClientAuthLimiterOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.blocks = opts.blocks;
  }

  /**
   * Before the credentials are read: is the source address over its limit? Answered from the
   * process's map of blocks when it can tell (no store read), else from the address's window.
   */
  async beforeAttempt(address: string): Promise<LimitVerdict> {
    const rule = this.rule('address');
    if (!rule) return GO;
    const key = `addr:${address}`;
    const nowMs = this.now();
    const known = this.blocks?.retryAfterMs(key, nowMs);
    if (known === 0) return GO;
    if (known !== undefined) return { limited: true, by: 'address', retryAfterS: seconds(known) };
    const state = await this.windows.peek(key, rule, nowMs);
    if (state.count < rule.limit) return GO;
    this.blocks?.note(key, nowMs + state.retryAfterMs, nowMs);
    return { limited: true, by: 'address', retryAfterS: seconds(state.retryAfterMs) };
  }

  /**
   * Whether an address this process knows no block for is admitted without a store read (with
   * Redis windows: while subscribed to the blocks of every process).
   */
  get listening(): boolean {
    return this.blocks?.listening ?? false;
  }

  /** Subscribes to the blocks of other processes (with Redis windows); never rejects. */
  async start(): Promise<void> {
    if (this.blocks instanceof RedisAddressBlocks) await this.blocks.start();
  }

  async close(): Promise<void> {
    if (this.blocks instanceof RedisAddressBlocks) await this.blocks.close();
  }

  /**
   * After a failed client authentication: records it against the address and the account. A
   * failure beyond either limit answers 429 (the address's verdict first: it refuses
   * everything from there).
   */
  async failed(attempt: ClientAttempt): Promise<LimitVerdict> {
    const nowMs = this.now();
    const addressRule = this.rule('address');
    const accountRule = attempt.account ? this.rule('account') : undefined;
    const [address, account] = await Promise.all([
      addressRule ? this.windows.record(`addr:${attempt.address}`, addressRule, nowMs) : undefined,
      accountRule && attempt.account ? this.windows.record(attempt.account, accountRule, nowMs) : undefined,
    ]);
    const addressOver = address && addressRule ? address.count - addressRule.limit : -1;
    // The address's window is full: refused before its credentials from now on, here at once.
    if (address && addressOver >= 0) {
      this.blocks?.note(`addr:${attempt.address}`, nowMs + address.retryAfterMs, nowMs);
    }
    // Windows count up to limit + 2, so limit + 1 is the one failure that passed the limit.
    const accountOver = account && accountRule ? account.count - accountRule.limit : -1;
    const reached = addressOver === 0 ? 'address' : accountOver === 1 ? 'account' : undefined;
    const note: Pick<LimitVerdict, 'reached'> = reached ? { reached } : {};
    if (address && addressOver > 0) {
      return { limited: true, by: 'address', retryAfterS: seconds(address.retryAfterMs), ...note };
    }
    if (account && accountOver > 0) {
      return { limited: true, by: 'account', retryAfterS: seconds(account.retryAfterMs), ...note };
    }
    return { limited: false, ...note };
  }

  private rule(kind: 'address' | 'account'): WindowRule | undefined {
    if (kind === 'account') {
      const limit = this.limits.perAccount;
      return limit > 0 ? { limit, windowMs: this.limits.windowMs } : undefined;
    }
    const limit = this.limits.perAddress;
    return limit > 0 ? { limit, windowMs: this.limits.windowMs, announce: true } : undefined;
  }
}

/**
 * The limiter of a process, from the configuration: its windows in Redis when REDIS_URL is set
 * (shared by every process on the same REDIS_PREFIX, with the blocked addresses known in each:
 * `start` subscribes to them), else in this process.
 */
export function createClientAuthLimiter(deps: {
  config: Pick<Config, 'tokenFailureLimits' | 'redisPrefix'>;
  redis?: RedisClient | undefined;
  log: Logger;
  now?: () => number;
}): ClientAuthLimiter {
  const { windowMs, perClient, perAddress, trackedKeys } = deps.config.tokenFailureLimits;
  const limits = { windowMs, perAccount: perClient, perAddress };
  const now = deps.now ?? Date.now;
  if (!deps.redis) return new ClientAuthLimiter(new MemoryFailureWindows(trackedKeys), limits, { now });
  const prefix = `${deps.config.redisPrefix}:authfail:`;
  const announced = { key: `${prefix}blocked`, channel: `${prefix}blocked` };
  const windows = redisFailureWindows(deps.redis, { prefix, log: deps.log, blocks: announced });
  const blocks = new RedisAddressBlocks(deps.redis, { ...announced, maxKeys: trackedKeys, log: deps.log, now });
  return new ClientAuthLimiter(windows, limits, { now, blocks });
}

function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/**
 * The window key of a peer address (the socket's; no proxy header is trusted): an IPv4
 * address as it is (an IPv4-mapped IPv6 one unwrapped), an IPv6 address by its /64 prefix,
 * since one host or network is commonly given a whole /64 to draw addresses from.
 */
export function addressKey(remote: string | undefined): string {
  if (!remote) return 'unknown';
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(remote);
  if (mapped?.[1]) return mapped[1];
  if (isIP(remote) !== 6) return remote;
  const [head = '', tail] = (remote.split('%')[0] ?? '').split('::');
  const groups = (part: string | undefined) =>
    part ? part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])) : [];
  const front = groups(head);
  const back = groups(tail);
  const full =
    tail === undefined ? front : [...front, ...new Array<string>(8 - front.length - back.length).fill('0'), ...back];
  return `${full
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
