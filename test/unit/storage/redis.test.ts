// storage/redis.ts: one command with a deadline (redisCommand) and the readiness PING, on the machine's Redis.
import { expect } from 'chai';
import { pino } from 'pino';
import { connectRedis, pingRedis, redisCommand, type RedisClient } from '../../../src/storage/redis.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('storage/redis: commands with a deadline', function () {
  this.timeout(20_000);
  let client: RedisClient;
  beforeEach(async () => {
    client = await connectRedis(REDIS_URL, pino({ level: 'silent' }));
  });
  afterEach(async () => {
    if (client.isOpen) await client.close();
  });

  it('answers with the value; says why when there is none (the command failed, no answer in time, not connected); never rejects', async () => {
    const key = `sy-redis-test-${process.pid}-${Date.now()}`;
    expect(await redisCommand(client, 1_000, () => client.set(key, 'v', { PX: 5_000 }))).to.deep.equal({
      ok: true,
      value: 'OK',
    });
    expect(await redisCommand(client, 1_000, () => client.getDel(key))).to.deep.equal({ ok: true, value: 'v' });
    expect(await pingRedis(client)).to.equal(true);

    const failed = await redisCommand(client, 1_000, () => client.sendCommand(['NO-SUCH-COMMAND']));
    expect(failed.ok).to.equal(false);
    expect(failed)
      .to.have.property('reason')
      .that.matches(/unknown command/i);

    const started = Date.now();
    const slow = await redisCommand(
      client,
      100,
      () => new Promise<string>((resolve) => setTimeout(() => resolve('late'), 1_000)),
    );
    expect(slow).to.deep.equal({ ok: false, reason: 'no answer from Redis within 100 ms' });
    expect(Date.now() - started).to.be.below(900);

    await client.close();
    expect(await redisCommand(client, 1_000, () => client.ping())).to.deep.equal({
      ok: false,
      reason: 'Redis is not connected',
    });
    expect(await pingRedis(client)).to.equal(false);
  });
});
