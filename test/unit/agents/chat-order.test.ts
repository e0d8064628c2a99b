/**
 * One turn at a time per chat, in arrival order (src/agents/chat-order.ts): in one process, and
 * across processes through Redis (two RedisChatOrder instances on separate connections stand in
 * for two processes), including a holder that dies mid-turn.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { createLogger } from '../../../src/config/logger.js';
import { connectRedis, type RedisClient } from '../../../src/storage/redis.js';
import { InProcessChatOrder, RedisChatOrder, type ChatOrder } from '../../../src/agents/chat-order.js';

const log = createLogger('silent');
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `n` calls on one chat (alternating between orders) and records start/end events. */
async function interleave(orders: ChatOrder[], chatId: string, n: number): Promise<string[]> {
  const events: string[] = [];
  const runs: Promise<unknown>[] = [];
  for (let i = 0; i < n; i++) {
    runs.push(orders[i % orders.length]!.run(chatId, async () => {
      events.push(`start ${i}`);
      await sleep(5 + Math.floor(Math.random() * 20));
      events.push(`end ${i}`);
    }));
    // Arrival order: each call is made a moment after the previous one.
    await sleep(2);
  }
  await Promise.all(runs);
  return events;
}

function sequentialInOrder(events: string[], n: number): void {
  expect(events).to.deep.equal(Array.from({ length: n }, (_, i) => [`start ${i}`, `end ${i}`]).flat());
}

describe('agents: chat order', function () {
  this.timeout(30_000);

  describe('in one process', () => {
    it('runs calls on one chat strictly one after another, in call order', async () => {
      sequentialInOrder(await interleave([new InProcessChatOrder()], 'chat_a', 6), 6);
    });

    it('a failing call releases the chat and its error reaches the caller', async () => {
      const order = new InProcessChatOrder();
      const failing = order.run('c', () => Promise.reject(new Error('boom')));
      const next = order.run('c', () => Promise.resolve('after'));
      expect(await failing.catch((e: Error) => e.message)).to.equal('boom');
      expect(await next).to.equal('after');
    });

    it('different chats run side by side', async () => {
      const order = new InProcessChatOrder();
      let concurrent = 0;
      let peak = 0;
      await Promise.all(['x', 'y', 'z'].map((chat) => order.run(chat, async () => {
        peak = Math.max(peak, ++concurrent);
        await sleep(30);
        concurrent--;
      })));
      expect(peak).to.equal(3);
    });
  });

  describe('across processes (Redis)', () => {
    let a: RedisClient;
    let b: RedisClient;
    let prefix: string;
    const orders: RedisChatOrder[] = [];
    before(async () => {
      a = await connectRedis(REDIS_URL, log);
      b = await connectRedis(REDIS_URL, log);
    });
    beforeEach(() => {
      prefix = `test-${randomBytes(4).toString('hex')}:`;
    });
    afterEach(async () => {
      for (const o of orders.splice(0)) await o.close();
      for (const key of await a.keys(`${prefix}*`)) await a.del(key);
    });
    after(async () => {
      await a.quit();
      await b.quit();
    });
    const order = (client: RedisClient, leaseMs?: number) => {
      const o = new RedisChatOrder(client, { prefix, leaseMs, log });
      orders.push(o);
      return o;
    };

    it('two processes on one chat never overlap and go in ticket order', async () => {
      sequentialInOrder(await interleave([order(a), order(b)], 'chat_shared', 8), 8);
    });

    it('a holder that dies mid-turn is skipped after its lease; the chat goes on', async () => {
      const dead = order(a, 300);
      const live = order(b, 300);
      // The "dead" process takes its turn and never finishes it; its lease renewal stops with it.
      let started = false;
      void dead.run('chat_dead', () => {
        started = true;
        return new Promise(() => undefined);
      });
      while (!started) await sleep(5);
      // The process is gone: its lease renewals stop (close stops them, as death would).
      await dead.close();
      const t0 = Date.now();
      const result = await live.run('chat_dead', () => Promise.resolve('went on'));
      expect(result).to.equal('went on');
      expect(Date.now() - t0).to.be.lessThan(5000);
    });

    it('leaves keys that expire (idle chats leave nothing behind for long)', async () => {
      await order(a).run('chat_ttl', () => Promise.resolve());
      const keys = await a.keys(`${prefix}chat:chat_ttl:*`);
      expect(keys.length).to.be.greaterThan(0);
      for (const key of keys) expect(await a.ttl(key)).to.be.greaterThan(0);
    });
  });
});
