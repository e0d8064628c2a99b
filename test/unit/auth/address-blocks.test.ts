/**
 * The blocked addresses every process knows of (src/auth/address-blocks.ts) with the failure
 * windows in Redis: limiters on one prefix, each with connections of its own as separate
 * processes would have, observed through Redis's MONITOR, on a clock the tests move.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { createClient } from 'redis';
import { createClientAuthLimiter, AddressBlocks, type ClientAuthLimiter } from '../../../src/auth/index.js';
import { connectRedis, type RedisClient } from '../../../src/storage/redis.js';
import { monitorRedis, type RedisMonitor } from '../../helpers/redis-monitor.js';
import { dropRedisKeys } from '../../helpers/store.js';
import { silentLog, testClock } from './helpers.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const limits = { windowMs: 60_000, perClient: 2, perAddress: 3, trackedKeys: 100 };

/** Polls `check` every 10 ms until it holds, for at most `ms`. */
async function until(check: () => boolean | Promise<boolean>, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`still not ${what} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('auth: blocked addresses shared through Redis pub/sub', function () {
  const prefix = `sy-authblock-${process.pid}-${Date.now()}`;
  const clients: RedisClient[] = [];
  const limiters: ClientAuthLimiter[] = [];
  let clock: ReturnType<typeof testClock>;
  let monitor: RedisMonitor;

  /** A limiter as one process builds it, over a connection of its own (`url`: another Redis user). */
  async function instance(url = REDIS_URL): Promise<ClientAuthLimiter> {
    const redis = url === REDIS_URL ? await connectRedis(url, silentLog) : (createClient({ url }) as RedisClient);
    if (!redis.isOpen) await redis.connect();
    clients.push(redis);
    const limiter = createClientAuthLimiter({
      config: { tokenFailureLimits: limits, redisPrefix: prefix },
      redis,
      log: silentLog,
      now: clock.now,
    });
    limiters.push(limiter);
    await limiter.start();
    return limiter;
  }
  const blockAt = async (limiter: ClientAuthLimiter, address: string) => {
    for (let i = 0; i < limits.perAddress; i++) await limiter.failed({ address });
  };

  beforeEach(async () => {
    clock = testClock(Date.now());
    monitor = await monitorRedis(REDIS_URL, prefix);
  });
  afterEach(async () => {
    for (const l of limiters.splice(0)) await l.close();
    for (const c of clients.splice(0)) await c.close();
    await monitor.close();
  });
  after(() => dropRedisKeys(REDIS_URL, prefix));

  it("one instance's failures block the address at another that saw none (pub/sub) and at one started later (loaded), with no Redis command", async () => {
    const a = await instance();
    const b = await instance();
    expect(b.listening).to.equal(true);
    await blockAt(a, '10.9.0.1');
    await until(async () => (await b.beforeAttempt('10.9.0.1')).limited, 'refused at b');
    await monitor.take();

    clock.advance(10_000);
    expect(await b.beforeAttempt('10.9.0.1')).to.deep.equal({ limited: true, by: 'address', retryAfterS: 50 });
    expect(await a.beforeAttempt('10.9.0.1')).to.deep.equal({ limited: true, by: 'address', retryAfterS: 50 });
    expect(await b.beforeAttempt('10.9.0.2')).to.deep.equal({ limited: false });
    expect(await monitor.take(), 'Redis commands of the checks').to.deep.equal([]);

    const c = await instance();
    expect(c.listening).to.equal(true);
    await monitor.take();
    expect(await c.beforeAttempt('10.9.0.1')).to.deep.equal({ limited: true, by: 'address', retryAfterS: 50 });
    expect(await c.beforeAttempt('10.9.0.2')).to.deep.equal({ limited: false });
    expect(await monitor.take(), 'Redis commands of the checks').to.deep.equal([]);
  });

  it('a block ends at the time announced, in every instance, without asking Redis', async () => {
    const a = await instance();
    const b = await instance();
    await blockAt(a, '10.9.1.1');
    clock.advance(1_000);
    await blockAt(a, '10.9.1.2');
    await until(async () => (await b.beforeAttempt('10.9.1.2')).limited, 'refused at b');
    await monitor.take();

    // The first address's window admits it again 60 s after its first failure; the second's 1 s later.
    clock.advance(58_999);
    expect(await b.beforeAttempt('10.9.1.1')).to.deep.include({ limited: true, retryAfterS: 1 });
    clock.advance(1);
    expect(await b.beforeAttempt('10.9.1.1')).to.deep.equal({ limited: false });
    expect(await a.beforeAttempt('10.9.1.1')).to.deep.equal({ limited: false });
    expect(await b.beforeAttempt('10.9.1.2')).to.deep.include({ limited: true, retryAfterS: 1 });
    expect(await monitor.take(), 'Redis commands of the checks').to.deep.equal([]);

    // An instance started now loads only the block still running.
    const c = await instance();
    await monitor.take();
    expect(await c.beforeAttempt('10.9.1.1')).to.deep.equal({ limited: false });
    expect(await c.beforeAttempt('10.9.1.2')).to.deep.include({ limited: true, retryAfterS: 1 });
    clock.advance(1_000);
    expect(await c.beforeAttempt('10.9.1.2')).to.deep.equal({ limited: false });
    expect(await monitor.take(), 'Redis commands of the checks').to.deep.equal([]);
  });

  it('a dropped subscription: each request reads its address in Redis until resubscribed, then the blocks missed meanwhile are loaded', async () => {
    // b connects as a Redis user of its own, so its subscription can be kept down for a while.
    const user = `${prefix}-b`;
    const password = randomBytes(12).toString('hex');
    const admin = await connectRedis(REDIS_URL, silentLog);
    await admin.sendCommand(['ACL', 'SETUSER', user, 'on', `>${password}`, '~*', '&*', '+@all']);
    try {
      const a = await instance();
      const b = await instance(`redis://${encodeURIComponent(user)}:${password}@127.0.0.1:6379`);
      expect(b.listening).to.equal(true);
      const list = String(await admin.sendCommand(['CLIENT', 'LIST', 'TYPE', 'pubsub']));
      const subscriber = list.split('\n').find((line) => line.includes(` user=${user} `));
      const id = /^id=(\d+) /.exec(subscriber ?? '')?.[1];
      expect(id, 'b subscriber connection').to.be.a('string');
      await admin.sendCommand(['ACL', 'SETUSER', user, 'off']);
      await admin.sendCommand(['CLIENT', 'KILL', 'ID', id!]);
      await until(() => !b.listening, 'down at b');

      // Announced while b cannot hear it.
      await blockAt(a, '10.9.2.1');
      await blockAt(a, '10.9.2.2');
      await monitor.take();
      expect(await b.beforeAttempt('10.9.2.1')).to.deep.include({ limited: true, by: 'address' });
      expect(await b.beforeAttempt('10.9.2.3')).to.deep.equal({ limited: false });
      const reads = await monitor.take();
      expect(reads.filter((line) => /"zrangebyscore" "[^"]*:authfail:addr:10\.9\.2\.[13]"/i.test(line))).to.have.length(
        2,
      );

      await admin.sendCommand(['ACL', 'SETUSER', user, 'on']);
      await until(() => b.listening, 'listening again at b', 10_000);
      await monitor.take();
      // 10.9.2.2 was never asked of Redis by b: it was loaded with the blocked set.
      expect(await b.beforeAttempt('10.9.2.2')).to.deep.include({ limited: true, by: 'address' });
      expect(await b.beforeAttempt('10.9.2.3')).to.deep.equal({ limited: false });
      expect(await monitor.take(), 'Redis commands of the checks').to.deep.equal([]);
    } finally {
      for (const l of limiters.splice(0)) await l.close();
      for (const c of clients.splice(0)) await c.close();
      await admin.sendCommand(['ACL', 'DELUSER', user]);
      await admin.close();
    }
  });
});

describe('auth: AddressBlocks is bounded', () => {
  it('forgets the least recently blocked beyond its bound, and asks Redis about any address until their blocks would have ended', () => {
    class Listening extends AddressBlocks {
      constructor() {
        super(100);
        this.complete = true;
      }
    }
    const blocks = new Listening();
    const t0 = 1_700_000_000_000;
    for (let i = 0; i < 1000; i++) blocks.note(`addr:10.0.${i >> 8}.${i & 255}`, t0 + 60_000 + i, t0);
    expect(blocks.size).to.equal(100);
    expect(blocks.retryAfterMs('addr:10.0.3.231', t0)).to.equal(60_999);
    // Evicted, or never blocked: this process cannot tell until the evicted blocks are over.
    expect(blocks.retryAfterMs('addr:10.0.0.0', t0)).to.equal(undefined);
    expect(blocks.retryAfterMs('addr:192.0.2.1', t0 + 60_898)).to.equal(undefined);
    expect(blocks.retryAfterMs('addr:192.0.2.1', t0 + 60_899)).to.equal(0);
  });
});
