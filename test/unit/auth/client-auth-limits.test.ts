/**
 * The failure windows of the token endpoints (src/auth/failure-windows.ts) in this process and
 * in Redis, and the limiter's policy over them (src/auth/client-auth-limits.ts), on a clock the
 * tests move.
 */
import { randomBytes } from 'node:crypto';
import querystring from 'node:querystring';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { expect } from 'chai';
import {
  ClientAuthLimiter,
  MemoryFailureWindows,
  addressKey,
  redisFailureWindows,
  type FailureWindows,
} from '../../../src/auth/index.js';
import { connectRedis, type RedisClient } from '../../../src/storage/redis.js';
import { dropRedisKeys } from '../../helpers/store.js';
import { silentLog, testClock } from './helpers.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const rule = { limit: 3, windowMs: 60_000 };

/** The same window semantics, whichever store holds them. */
function windowContract(name: string, make: () => FailureWindows) {
  describe(`auth: failure windows (${name})`, () => {
    let windows: FailureWindows;
    let key: string;
    const t0 = 1_700_000_000_000;
    beforeEach(() => {
      windows = make();
      key = `client:cli_${randomBytes(16).toString('hex')}`;
    });

    it('counts failures in the rolling window and says when it falls below the limit', async () => {
      expect(await windows.peek(key, rule, t0)).to.deep.equal({ count: 0, retryAfterMs: 0 });
      expect(await windows.record(key, rule, t0)).to.deep.equal({ count: 1, retryAfterMs: 0 });
      expect(await windows.record(key, rule, t0 + 10_000)).to.deep.equal({ count: 2, retryAfterMs: 0 });
      // The third reaches the limit: below it again when the first leaves (t0 + 60 s).
      expect(await windows.record(key, rule, t0 + 20_000)).to.deep.equal({ count: 3, retryAfterMs: 40_000 });
      expect(await windows.peek(key, rule, t0 + 30_000)).to.deep.equal({ count: 3, retryAfterMs: 30_000 });
      // A fourth is over the limit: below it when the second leaves.
      expect(await windows.record(key, rule, t0 + 30_000)).to.deep.equal({ count: 4, retryAfterMs: 40_000 });
      // The first two have left: two remain.
      expect(await windows.peek(key, rule, t0 + 70_001)).to.deep.equal({ count: 2, retryAfterMs: 0 });
      // Everything has left.
      expect(await windows.peek(key, rule, t0 + 90_001)).to.deep.equal({ count: 0, retryAfterMs: 0 });
    });

    it('keeps limit + 2 failures per key however many are recorded', async () => {
      let last = { count: 0, retryAfterMs: 0 };
      for (let i = 0; i < 50; i++) last = await windows.record(key, rule, t0 + i);
      expect(last).to.deep.equal({ count: 5, retryAfterMs: 60_000 - 2 });
      expect(await windows.peek(key, rule, t0 + 49)).to.deep.equal({ count: 5, retryAfterMs: 60_000 - 2 });
    });

    it('keeps keys apart', async () => {
      await windows.record(key, rule, t0);
      expect((await windows.peek(`${key}x`, rule, t0)).count).to.equal(0);
    });
  });
}

windowContract('in process', () => new MemoryFailureWindows(1000));

describe('auth: failure windows in process are bounded', () => {
  it('forgets the least recently failed keys beyond maxKeys: a spray of made-up client ids cannot grow memory', async () => {
    const windows = new MemoryFailureWindows(100);
    const t0 = Date.now();
    await windows.record('client:kept', rule, t0);
    for (let i = 0; i < 10_000; i++) {
      await windows.record(`client:cli_${i}`, rule, t0 + 1);
      if (i === 50) await windows.record('client:kept', rule, t0 + 1);
    }
    expect(windows.size).to.equal(100);
    expect((await windows.peek('client:cli_9999', rule, t0 + 1)).count).to.equal(1);
    expect((await windows.peek('client:cli_0', rule, t0 + 1)).count).to.equal(0);
  });

  it('keeps no request body alive through a key parsed out of it', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const windows = new MemoryFailureWindows(1000);
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 100; i++) {
      // As src/http/body.ts parses a form: the value can be a slice of the 1 MB body.
      const form = querystring.parse(`client_id=cli_${String(i).padStart(32, '0')}&pad=${'x'.repeat(1_000_000)}${i}`);
      await windows.record(`client:${String(form.client_id)}`, rule, Date.now());
    }
    gc();
    expect(windows.size).to.equal(100);
    expect(process.memoryUsage().heapUsed - before, 'heap kept by 100 keys').to.be.below(20_000_000);
  });

  it('drops keys whose window has passed as new failures arrive', async () => {
    const windows = new MemoryFailureWindows(1000);
    const t0 = Date.now();
    for (let i = 0; i < 10; i++) await windows.record(`addr:10.0.0.${i}`, rule, t0);
    for (let i = 0; i < 5; i++) await windows.record(`addr:10.0.1.${i}`, rule, t0 + rule.windowMs + 1);
    expect(windows.size).to.equal(5);
  });
});

describe('auth: failure windows in Redis', function () {
  const prefix = `sy-authfail-unit-${process.pid}-${Date.now()}`;
  let one: RedisClient;
  let two: RedisClient;
  before(async () => {
    one = await connectRedis(REDIS_URL, silentLog);
    two = await connectRedis(REDIS_URL, silentLog);
  });
  after(async () => {
    await one?.close();
    await two?.close();
    await dropRedisKeys(REDIS_URL, prefix);
  });

  windowContract('Redis', () => redisFailureWindows(one, { prefix: `${prefix}:`, log: silentLog }));

  it('two processes on the same prefix count the same failures; keys expire with their window', async () => {
    const a = redisFailureWindows(one, { prefix: `${prefix}:`, log: silentLog });
    const b = redisFailureWindows(two, { prefix: `${prefix}:`, log: silentLog });
    const now = Date.now();
    await a.record('addr:10.1.1.1', rule, now);
    await b.record('addr:10.1.1.1', rule, now + 1);
    expect(await a.peek('addr:10.1.1.1', rule, now + 2)).to.deep.equal({ count: 2, retryAfterMs: 0 });
    expect((await b.record('addr:10.1.1.1', rule, now + 3)).count).to.equal(3);
    const ttl = await one.pTTL(`${prefix}:addr:10.1.1.1`);
    expect(ttl).to.be.within(1, rule.windowMs);
  });

  it('a Redis that does not answer skips the limits rather than failing the request', async () => {
    const gone = await connectRedis(REDIS_URL, silentLog);
    await gone.close();
    const windows = redisFailureWindows(gone, { prefix: `${prefix}:`, log: silentLog, timeoutMs: 100 });
    expect(await windows.record('addr:10.1.1.2', rule, Date.now())).to.deep.equal({ count: 0, retryAfterMs: 0 });
  });
});

describe('auth: ClientAuthLimiter', () => {
  const limits = { windowMs: 60_000, perAccount: 2, perAddress: 4 };
  let clock: ReturnType<typeof testClock>;
  let limiter: ClientAuthLimiter;
  beforeEach(() => {
    clock = testClock(1_700_000_000_000);
    limiter = new ClientAuthLimiter(new MemoryFailureWindows(1000), limits, { now: clock.now });
  });

  it('an account over its limit: the failure past it is limited (the first one noted), the address goes on', async () => {
    const attempt = { address: '10.0.0.1', account: 'client:cli_x' };
    expect(await limiter.failed(attempt)).to.deep.equal({ limited: false });
    clock.advance(5_000);
    expect(await limiter.failed(attempt)).to.deep.equal({ limited: false });
    clock.advance(5_000);
    expect(await limiter.failed(attempt)).to.deep.equal({
      limited: true,
      by: 'account',
      retryAfterS: 55,
      reached: 'account',
    });
    // The account's limit never refuses an attempt before its credentials are checked.
    expect(await limiter.beforeAttempt('10.0.0.1')).to.deep.equal({ limited: false });
    // Its fourth failure fills the address's own window (noted): that address alone is refused next.
    expect(await limiter.failed(attempt)).to.deep.equal({
      limited: true,
      by: 'account',
      retryAfterS: 60,
      reached: 'address',
    });
    expect(await limiter.beforeAttempt('10.0.0.1')).to.deep.include({ limited: true, by: 'address' });
    expect(await limiter.beforeAttempt('10.0.0.2')).to.deep.equal({ limited: false });
  });

  it('an address over its limit is refused before its credentials are read, until its window admits again', async () => {
    for (let i = 0; i < 4; i++) {
      expect(await limiter.failed({ address: '10.0.0.3', account: `client:cli_${i}` })).to.deep.equal(
        i < 3 ? { limited: false } : { limited: false, reached: 'address' },
      );
      clock.advance(1_000);
    }
    expect(await limiter.beforeAttempt('10.0.0.3')).to.deep.equal({
      limited: true,
      by: 'address',
      retryAfterS: 56,
    });
    expect(await limiter.beforeAttempt('10.0.0.4')).to.deep.equal({ limited: false });
    clock.advance(55_500);
    expect((await limiter.beforeAttempt('10.0.0.3')).limited).to.equal(true);
    clock.advance(500);
    expect(await limiter.beforeAttempt('10.0.0.3')).to.deep.equal({ limited: false });
  });

  it('a limit of 0 turns that limit off', async () => {
    const off = new ClientAuthLimiter(new MemoryFailureWindows(1000), { ...limits, perAccount: 0, perAddress: 0 });
    for (let i = 0; i < 20; i++) {
      expect(await off.failed({ address: '10.0.0.5', account: 'client:cli_y' })).to.deep.equal({ limited: false });
    }
    expect(await off.beforeAttempt('10.0.0.5')).to.deep.equal({ limited: false });
  });
});

describe('auth: addressKey', () => {
  it('keeps IPv4 (unwrapping IPv4-mapped IPv6), groups IPv6 by /64, and has a key for no address', () => {
    expect(addressKey('127.0.0.2')).to.equal('127.0.0.2');
    expect(addressKey('::ffff:192.0.2.7')).to.equal('192.0.2.7');
    expect(addressKey('2001:db8:1:2:aaaa:bbbb:cccc:dddd')).to.equal('2001:db8:1:2::/64');
    expect(addressKey('2001:db8:1:2::1')).to.equal('2001:db8:1:2::/64');
    expect(addressKey('2001:0db8:0001:0002:ffff::9')).to.equal('2001:db8:1:2::/64');
    expect(addressKey('2001:db8::1')).to.equal('2001:db8:0:0::/64');
    expect(addressKey('fe80::1%eth0')).to.equal('fe80:0:0:0::/64');
    expect(addressKey('::1')).to.equal('0:0:0:0::/64');
    expect(addressKey('64:ff9b::192.0.2.1')).to.equal('64:ff9b:0:0::/64');
    expect(addressKey(undefined)).to.equal('unknown');
  });
});
