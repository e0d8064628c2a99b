/**
 * One turn at a time per chat, in arrival order (src/agents/chat-order.ts): in one process, and
 * across processes through the machine's Redis (two RedisChatOrder instances on separate
 * connections stand in for two processes), including holders that die before or during their
 * turn, a holder that runs longer than its lease, and key expiry.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { createLogger } from '../../../src/config/logger.js';
import { connectRedis, type RedisClient } from '../../../src/storage/redis.js';
import { InProcessChatOrder, RedisChatOrder, createChatOrder, type ChatOrder } from '../../../src/agents/chat-order.js';

const log = createLogger('silent');
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A run body that records its start and end around a random delay. */
const recorded =
  (events: string[], i: number, maxMs = 20) =>
  async () => {
    events.push(`start ${i}`);
    await sleep(2 + Math.floor(Math.random() * maxMs));
    events.push(`end ${i}`);
    return i;
  };

/** `n` calls on one chat, round-robin over `orders`, `gapMs` apart (0: all in one tick). */
async function interleave(orders: ChatOrder[], chatId: string, n: number, gapMs: number): Promise<string[]> {
  const events: string[] = [];
  const runs: Promise<number>[] = [];
  for (let i = 0; i < n; i++) {
    runs.push(orders[i % orders.length]!.run(chatId, recorded(events, i)));
    if (gapMs) await sleep(gapMs);
  }
  expect(await Promise.all(runs)).to.deep.equal(Array.from({ length: n }, (_, i) => i));
  return events;
}

function sequentialInOrder(events: string[], n: number): void {
  expect(events).to.deep.equal(Array.from({ length: n }, (_, i) => [`start ${i}`, `end ${i}`]).flat());
}

/**
 * Never two at once, every call ran, and each process's calls in the order it made them. Between
 * two processes' connections "arrival" is when Redis hands out the ticket, which calls made a few
 * milliseconds apart on a loaded machine may reach in either order.
 */
function sequentialPerProcess(events: string[], n: number, processes: number): void {
  const order = events.filter((_, k) => k % 2 === 0).map((e) => Number(e.split(' ')[1]));
  expect(events).to.deep.equal(order.flatMap((i) => [`start ${i}`, `end ${i}`]));
  expect([...order].sort((x, y) => x - y)).to.deep.equal(Array.from({ length: n }, (_, i) => i));
  for (let p = 0; p < processes; p++) {
    const mine = order.filter((i) => i % processes === p);
    expect(mine, `the calls of process ${p}`).to.deep.equal([...mine].sort((x, y) => x - y));
  }
}

/** Runs fn on each chat at once; the peak number running together. */
async function peakAcross(order: ChatOrder, chats: string[]): Promise<number> {
  let running = 0;
  let peak = 0;
  await Promise.all(
    chats.map((chat) =>
      order.run(chat, async () => {
        peak = Math.max(peak, ++running);
        await sleep(50);
        running--;
      }),
    ),
  );
  return peak;
}

describe('agents: chat order', function () {
  this.timeout(30_000);

  describe('in one process', () => {
    it('five concurrent calls on one chat run strictly one after another, in call order', async () => {
      sequentialInOrder(await interleave([new InProcessChatOrder()], 'chat_a', 5, 0), 5);
    });

    it('a failing call releases the chat and its error reaches the caller', async () => {
      const order = new InProcessChatOrder();
      const failing = order.run('c', () => Promise.reject(new Error('boom')));
      const next = order.run('c', () => Promise.resolve('after'));
      expect(await failing.catch((e: Error) => e.message)).to.equal('boom');
      expect(await next).to.equal('after');
    });

    it('different chats run side by side, and idle chats leave no entry behind', async () => {
      const order = new InProcessChatOrder();
      expect(await peakAcross(order, ['x', 'y', 'z'])).to.equal(3);
      await sleep(0);
      expect(order.activeChats).to.equal(0);
    });

    it('createChatOrder without Redis is the in-process order', () => {
      expect(createChatOrder(undefined, { prefix: 'p:', log })).to.be.instanceOf(InProcessChatOrder);
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
      prefix = `test-chat-order-${randomBytes(4).toString('hex')}:`;
    });
    afterEach(async () => {
      for (const o of orders.splice(0)) await o.close();
      const keys = await a.keys(`${prefix}*`);
      if (keys.length) await a.del(keys);
    });
    after(async () => {
      await a.close();
      await b.close();
    });
    const order = (client: RedisClient, leaseMs?: number) => {
      const o = new RedisChatOrder(client, { prefix, leaseMs, log });
      orders.push(o);
      return o;
    };
    const subscribers = async () => {
      const [, n] = (await a.sendCommand(['PUBSUB', 'NUMSUB', `${prefix}chat-order`])) as [string, number];
      return Number(n);
    };

    it('calls made together in one process take tickets in call order', async () => {
      sequentialInOrder(await interleave([order(a)], 'chat_one', 6, 0), 6);
    });

    it('two processes on one chat never overlap and go in ticket (arrival) order', async () => {
      sequentialPerProcess(await interleave([order(a), order(b)], 'chat_shared', 10, 3), 10, 2);
    });

    it('different chats run side by side', async () => {
      expect(await peakAcross(order(a), ['p', 'q', 'r'])).to.equal(3);
    });

    it('a failing call releases the turn and its error reaches the caller', async () => {
      const [oa, ob] = [order(a), order(b)];
      const failing = oa.run('chat_err', () => Promise.reject(new Error('boom'))).catch((e: Error) => e.message);
      await sleep(5);
      const next = ob.run('chat_err', () => Promise.resolve('after'));
      expect(await failing).to.equal('boom');
      expect(await next).to.equal('after');
    });

    it('a holder running longer than its lease keeps its turn (the lease is renewed)', async () => {
      const events: string[] = [];
      const [oa, ob] = [order(a, 300), order(b, 300)];
      const long = oa.run('chat_long', async () => {
        events.push('start 0');
        await sleep(1200);
        events.push('end 0');
      });
      await sleep(20);
      await Promise.all([long, ob.run('chat_long', recorded(events, 1))]);
      sequentialInOrder(events, 2);
    });

    it('a holder that dies mid-turn is skipped after its lease, and its late release changes nothing', async () => {
      const dead = order(a, 300);
      const live = order(b, 300);
      // The "dead" process holds its turn and never releases it; close() stops its lease renewals
      // as the death of the process would.
      const lateRelease = await dead.acquire('chat_dead');
      await dead.close();
      const t0 = Date.now();
      const events: string[] = [];
      const first = live.run('chat_dead', async () => {
        events.push(`start 1 after ${Date.now() - t0} ms`);
        await sleep(400);
        events.push('end 1');
      });
      await sleep(600);
      const second = live.run('chat_dead', recorded(events, 2));
      // The dead holder's release arrives while ticket 2 runs: it must not hand the turn on.
      await lateRelease();
      await Promise.all([first, second]);
      const waited = Number(/after (\d+) ms/.exec(events[0]!)![1]);
      expect(waited).to.be.within(300, 2000);
      expect(events.slice(1)).to.deep.equal(['end 1', 'start 2', 'end 2']);
    });

    it('a ticket whose process died before its turn is skipped after the lease', async () => {
      const [oa, ob] = [order(a, 300), order(b, 300)];
      const events: string[] = [];
      const first = oa.run('chat_gap', recorded(events, 1, 50));
      await sleep(10);
      // Another process took ticket 2 and died before its turn came.
      await a.incr(`${prefix}chat:chat_gap:ticket`);
      const t0 = Date.now();
      await Promise.all([first, ob.run('chat_gap', recorded(events, 3))]);
      expect(events).to.deep.equal(['start 1', 'end 1', 'start 3', 'end 3']);
      expect(Date.now() - t0).to.be.within(300, 3000);
    });

    it('leaves only expiring counters behind, and no lease', async () => {
      await order(a).run('chat_ttl', () => Promise.resolve());
      const keys = (await a.keys(`${prefix}chat:chat_ttl:*`)).sort();
      expect(keys).to.deep.equal([`${prefix}chat:chat_ttl:serving`, `${prefix}chat:chat_ttl:ticket`]);
      for (const key of keys) expect(await a.ttl(key)).to.be.within(86_000, 86_400);
    });

    it('close() disconnects the subscriber', async () => {
      const o = order(a);
      await o.run('chat_close', () => Promise.resolve());
      expect(await subscribers()).to.equal(1);
      await o.close();
      // The server drops a closed connection's subscriptions when it reads the close, a moment later.
      const until = Date.now() + 2000;
      while ((await subscribers()) !== 0 && Date.now() < until) await sleep(10);
      expect(await subscribers()).to.equal(0);
    });
  });
});
