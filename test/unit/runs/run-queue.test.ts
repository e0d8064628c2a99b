/**
 * The RunQueue backends (DESIGN.md section 4): the in-process queue wakes
 * its consumers at once and survives a failing handler; the bee-queue backend on the
 * machine's Redis delivers each run id once, de-duplicates a run id queued twice, re-delivers
 * the job of a worker that died, survives a lost connection, and closes cleanly.
 */
import { expect } from 'chai';
import { createClient } from 'redis';
import { InProcessRunQueue, RedisRunQueue } from '../../../src/runs/run-queue.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` every 5 ms; the elapsed milliseconds when it held. */
async function until(cond: () => boolean, timeoutMs: number, what: string): Promise<number> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(5);
  }
  return Date.now() - start;
}

describe('InProcessRunQueue', () => {
  const IDLE_CHECK_MS = 10_000;
  let queue: InProcessRunQueue;
  afterEach(async () => queue.close());

  /** A handler over an in-memory list of "PENDING runs"; records when it was called. */
  function fakeRuns() {
    const pending: string[] = [];
    const handled: string[] = [];
    const calls: number[] = [];
    const handler = async (runId: string | undefined): Promise<boolean> => {
      expect(runId, 'the in-process queue claims the oldest run, not a given one').to.equal(undefined);
      calls.push(Date.now());
      await sleep(1);
      const next = pending.shift();
      if (next === undefined) return false;
      handled.push(next);
      return true;
    };
    return { pending, handled, calls, handler };
  }

  it('wakes a sleeping consumer on enqueue (within ~50 ms, not after the idle check)', async () => {
    queue = new InProcessRunQueue(IDLE_CHECK_MS);
    const runs = fakeRuns();
    queue.consume(1, runs.handler);
    await until(() => runs.calls.length === 1, 1000, 'the first (empty) claim');
    await sleep(100); // asleep now
    expect(runs.calls).to.have.length(1);
    runs.pending.push('run_1');
    const enqueuedAt = Date.now();
    await queue.enqueue(['run_1']);
    await until(() => runs.handled.length === 1, 2000, 'run_1 to be handled');
    expect(runs.calls[1]! - enqueuedAt, 'ms from enqueue to the claim').to.be.lessThan(50);
    expect(runs.handled).to.deep.equal(['run_1']);
  });

  it('a lent consumer (borrowIdle) is neither woken by enqueues nor by its idle check until it is released; then both work again', async () => {
    queue = new InProcessRunQueue(60);
    const runs = fakeRuns();
    queue.consume(1, runs.handler);
    await until(() => runs.calls.length === 1, 1000, 'the first (empty) claim');
    await sleep(20); // asleep now
    const lent = queue.borrowIdle();
    expect(lent, 'the sleeping consumer').to.not.equal(undefined);
    expect(queue.borrowIdle(), 'no other consumer is idle').to.equal(undefined);
    runs.pending.push('run_1');
    await queue.enqueue(['run_1']);
    // Three idle periods: a lent consumer runs nothing, so the process never exceeds its consumers.
    await sleep(200);
    expect(runs.calls, 'calls while lent').to.have.length(1);
    lent!.release();
    lent!.release(); // a second release changes nothing
    // Back to sleep with its idle check: the run queued meanwhile is claimed by the next check.
    await until(() => runs.handled.length === 1, 1000, 'run_1 after the release');
    expect(runs.handled).to.deep.equal(['run_1']);
    await sleep(20);
    runs.pending.push('run_2');
    const enqueuedAt = Date.now();
    await queue.enqueue(['run_2']);
    await until(() => runs.handled.length === 2, 1000, 'run_2 on enqueue');
    expect(runs.calls.at(-1)! - enqueuedAt).to.be.lessThan(50);
  });

  it('a consumer lent when the queue closes ends once released', async () => {
    queue = new InProcessRunQueue(IDLE_CHECK_MS);
    const runs = fakeRuns();
    queue.consume(1, runs.handler);
    await until(() => runs.calls.length === 1, 1000, 'the first (empty) claim');
    await sleep(20);
    const lent = queue.borrowIdle()!;
    let closed = false;
    const closing = queue.close().then(() => (closed = true));
    await sleep(50);
    expect(closed, 'close waits for the lent consumer').to.equal(false);
    expect(queue.borrowIdle(), 'nothing is lent once closing').to.equal(undefined);
    lent.release();
    await closing;
    expect(closed).to.equal(true);
    expect(runs.calls).to.have.length(1);
  });

  it('a consumer keeps claiming while runs are there, and wakes every sleeping consumer', async () => {
    queue = new InProcessRunQueue(IDLE_CHECK_MS);
    const runs = fakeRuns();
    queue.consume(3, runs.handler);
    await until(() => runs.calls.length === 3, 1000, 'three empty claims');
    await sleep(50);
    runs.pending.push('a', 'b', 'c', 'd', 'e', 'f', 'g');
    await queue.enqueue(['a', 'b', 'c', 'd', 'e', 'f', 'g']);
    const ms = await until(() => runs.handled.length === 7, 2000, 'seven runs');
    expect(ms).to.be.lessThan(200);
    expect([...runs.handled].sort()).to.deep.equal(['a', 'b', 'c', 'd', 'e', 'f', 'g']);
  });

  it('does not miss work queued while the consumer was claiming (no lost wakeup)', async () => {
    queue = new InProcessRunQueue(IDLE_CHECK_MS);
    const calls: number[] = [];
    let enqueuedAt = 0;
    queue.consume(1, async () => {
      calls.push(Date.now());
      if (calls.length === 1) {
        // The claim query saw nothing; meanwhile a trigger call commits its run and enqueues.
        enqueuedAt = Date.now();
        await queue.enqueue(['run_late']);
        return false;
      }
      return false;
    });
    await until(() => calls.length >= 2, 2000, 'the second claim');
    expect(calls[1]! - enqueuedAt, 'ms from enqueue to the next claim').to.be.lessThan(50);
  });

  it('an empty enqueue wakes nobody', async () => {
    queue = new InProcessRunQueue(IDLE_CHECK_MS);
    const runs = fakeRuns();
    queue.consume(1, runs.handler);
    await until(() => runs.calls.length === 1, 1000, 'the first claim');
    await queue.enqueue([]);
    await sleep(100);
    expect(runs.calls).to.have.length(1);
  });

  it('a handler that throws is reported and the consumer carries on (idle check as back-off)', async () => {
    queue = new InProcessRunQueue(100);
    const errors: unknown[] = [];
    queue.onError((err) => errors.push(err));
    let calls = 0;
    queue.consume(1, async () => {
      calls += 1;
      if (calls === 1) throw new Error('store unavailable');
      return false;
    });
    await until(() => calls >= 3, 2000, 'claims after the failure');
    expect(errors.map((e) => (e as Error).message)).to.deep.equal(['store unavailable']);
  });

  it('close() ends sleeping consumers at once, waits for a busy one, and no handler runs after it', async () => {
    queue = new InProcessRunQueue(IDLE_CHECK_MS);
    const runs = fakeRuns();
    let busyUntil = 0;
    let finishedAt = 0;
    queue.consume(2, async (runId) => {
      if (runs.pending.length === 0) return runs.handler(runId);
      runs.pending.shift();
      busyUntil = Date.now() + 200;
      await sleep(200);
      finishedAt = Date.now();
      return true;
    });
    await sleep(50);
    runs.pending.push('slow');
    await queue.enqueue(['slow']);
    await until(() => busyUntil > 0, 1000, 'the slow run to start');
    const callsBefore = runs.calls.length;
    const t0 = Date.now();
    await queue.close();
    const closedAt = Date.now();
    expect(finishedAt, 'the running handler finished before close() resolved')
      .to.be.greaterThan(0)
      .and.at.most(closedAt);
    expect(closedAt - t0, 'close() does not wait for the idle check').to.be.lessThan(1000);
    await queue.enqueue(['after-close']);
    await sleep(100);
    expect(runs.calls.length, 'no claim after close()').to.equal(callsBefore);
  });
});

describe('RedisRunQueue (bee-queue on Redis)', function () {
  this.timeout(30_000);
  let prefix: string;
  let admin: ReturnType<typeof createClient>;
  const queues: RedisRunQueue[] = [];
  const open = (isWorker: boolean, extra: { stallIntervalMs?: number } = {}) => {
    const q = new RedisRunQueue(REDIS_URL, { isWorker, prefix, ...extra });
    queues.push(q);
    return q;
  };
  const key = (name: string) => `${prefix}:runs:${name}`;

  before(async () => {
    admin = createClient({ url: REDIS_URL });
    await admin.connect();
  });
  after(async () => admin.close());
  beforeEach(() => {
    prefix = `sy-test-rq-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  });
  afterEach(async () => {
    await Promise.allSettled(queues.splice(0).map((q) => q.close()));
    const keys = await admin.keys(`${prefix}:*`);
    if (keys.length) await admin.del(keys);
  });

  /** A consumer handler that records the run ids it was given. */
  function recorder(delayMs = 0) {
    const seen: string[] = [];
    const handler = async (runId: string | undefined): Promise<boolean> => {
      seen.push(String(runId));
      if (delayMs) await sleep(delayMs);
      return true;
    };
    return { seen, handler };
  }

  it('delivers each enqueued run id once to consume', async () => {
    const producer = open(false);
    const consumer = open(true);
    const rec = recorder();
    consumer.consume(4, rec.handler);
    const ids = Array.from({ length: 20 }, (_, i) => `run_${i}`);
    await producer.enqueue(ids.slice(0, 10));
    await producer.enqueue(ids.slice(10));
    await until(() => rec.seen.length >= 20, 10_000, '20 deliveries');
    await sleep(300);
    expect(rec.seen).to.have.length(20);
    expect([...rec.seen].sort()).to.deep.equal([...ids].sort());
    // Done jobs are removed (no job hash left behind).
    expect(await admin.hLen(key('jobs'))).to.equal(0);
  });

  it('de-duplicates a run id enqueued twice while pending; once done it can be queued again', async () => {
    const producer = open(false);
    await producer.enqueue(['run_a']);
    await producer.enqueue(['run_a']);
    await producer.enqueue(['run_b', 'run_b', 'run_a']);
    expect(await admin.lLen(key('waiting')), 'jobs waiting').to.equal(2);

    const consumer = open(true);
    const rec = recorder();
    consumer.consume(2, rec.handler);
    await until(() => rec.seen.length >= 2, 10_000, 'two deliveries');
    await sleep(300);
    expect([...rec.seen].sort()).to.deep.equal(['run_a', 'run_b']);

    // A finished job is gone, so a run re-queued later (recovery) is delivered again.
    await producer.enqueue(['run_a']);
    await until(() => rec.seen.length >= 3, 10_000, 'the re-queued run');
    expect(rec.seen[2]).to.equal('run_a');
  });

  it('re-delivers the job of a worker that died holding it, even though its run id was queued again meanwhile', async () => {
    const producer = open(false);
    await producer.enqueue(['run_lost']);
    // A worker took the job (BRPOPLPUSH waiting → active) and was killed before finishing it.
    expect(await admin.rPopLPush(key('waiting'), key('active'))).to.equal('run_lost');
    // Lease recovery queues the run again: same job id, so this alone adds nothing.
    await producer.enqueue(['run_lost']);
    expect(await admin.lLen(key('waiting'))).to.equal(0);

    const consumer = open(true, { stallIntervalMs: 300 });
    const rec = recorder();
    consumer.consume(1, rec.handler);
    await until(() => rec.seen.length >= 1, 5_000, 'the stalled job to be delivered again');
    expect(rec.seen).to.deep.equal(['run_lost']);
  });

  it('survives losing its Redis connection: the error is reported and delivery resumes', async () => {
    const clients = async () =>
      ((await admin.sendCommand(['CLIENT', 'LIST'])) as string)
        .split('\n')
        .filter(Boolean)
        .map((l) => ({ id: /\bid=(\d+)/.exec(l)?.[1] ?? '', cmd: /\bcmd=(\S+)/.exec(l)?.[1] ?? '' }));
    const before = new Set((await clients()).map((c) => c.id));
    const consumer = open(true);
    const errors: unknown[] = [];
    consumer.onError((err) => errors.push(err));
    const rec = recorder();
    consumer.consume(1, rec.handler);
    // The consumer's blocking connection: the new client waiting in BRPOPLPUSH.
    let victims: string[] = [];
    const deadline = Date.now() + 5_000;
    while (victims.length === 0) {
      victims = (await clients()).filter((c) => c.cmd === 'brpoplpush' && !before.has(c.id)).map((c) => c.id);
      if (victims.length === 0) {
        if (Date.now() > deadline) throw new Error('the consumer never blocked on Redis');
        await sleep(20);
      }
    }
    expect(victims).to.have.length(1);
    await admin.sendCommand(['CLIENT', 'KILL', 'ID', victims[0]!]);
    await until(() => errors.length > 0, 5_000, 'the connection error to be reported');
    const producer = open(false);
    await producer.enqueue(['run_after']);
    await until(() => rec.seen.includes('run_after'), 15_000, 'a delivery after the reconnection');
    expect(rec.seen).to.deep.equal(['run_after']);
  });

  it('stop: a run the handler gives back (released) is queued again at once, and another worker takes it', async () => {
    const producer = open(false);
    const leaving = open(true);
    let inHand!: () => void;
    const handed = new Promise<void>((r) => (inHand = r));
    let giveBack!: () => void;
    const stopped = new Promise<void>((r) => (giveBack = r));
    leaving.consume(1, async () => {
      inHand();
      await stopped;
      return 'released';
    });
    await producer.enqueue(['run_given_back']);
    await handed;
    const staying = open(true);
    const rec = recorder();
    staying.consume(1, rec.handler);
    const stopping = leaving.stop();
    const releasedAt = Date.now();
    giveBack();
    await stopping;
    await until(() => rec.seen.length >= 1, 1_000, 'the other worker to take the run');
    expect(Date.now() - releasedAt, 'taken within 1 s').to.be.below(1_000);
    expect(rec.seen).to.deep.equal(['run_given_back']);
    await leaving.close();
  });

  it('stop under a stream of jobs: every job is either handled or back on the waiting list, none left active', async () => {
    const producer = open(false);
    for (let round = 0; round < 5; round++) {
      const consumer = open(true);
      const rec = recorder();
      consumer.consume(8, rec.handler);
      const ids = Array.from({ length: 40 }, (_, i) => `run_${round}_${i}`);
      const feeding = (async () => {
        for (const id of ids) {
          await producer.enqueue([id]);
          await sleep(0);
        }
      })();
      await until(() => rec.seen.length >= 5 + round * 3, 5_000, 'some deliveries');
      await consumer.stop();
      await feeding;
      await consumer.close();
      const waiting = await admin.lRange(key('waiting'), 0, -1);
      expect(await admin.lRange(key('active'), 0, -1), 'jobs left active').to.deep.equal([]);
      expect([...rec.seen, ...waiting].sort()).to.deep.equal([...ids].sort());
      await admin.del([key('waiting'), key('jobs')]);
    }
  });

  it('closes cleanly: waits for the job in hand, then takes no more jobs', async () => {
    const producer = open(false);
    const consumer = open(true);
    let finishedAt = 0;
    const seen: string[] = [];
    consumer.consume(1, async (runId) => {
      seen.push(String(runId));
      await sleep(300);
      finishedAt = Date.now();
      return true;
    });
    await producer.enqueue(['run_busy']);
    await until(() => seen.length === 1, 10_000, 'the first delivery');
    await consumer.close();
    const closedAt = Date.now();
    expect(finishedAt, 'the job in hand finished before close() resolved').to.be.greaterThan(0).and.at.most(closedAt);
    expect(await admin.hLen(key('jobs')), 'the finished job was recorded (removed) before closing').to.equal(0);
    await producer.enqueue(['run_after_close']);
    await sleep(500);
    expect(seen).to.deep.equal(['run_busy']);
    expect(await admin.lLen(key('waiting')), 'the later job waits for another worker').to.equal(1);
    await consumer.close(); // a second close is harmless
  });
});
