/**
 * Run-finished signals (src/runs/signals.ts), in one process and through the machine's Redis
 * between two: a waiter in the process that finished the run gets the run itself with its
 * status; a waiter elsewhere gets the status alone; every "any run" listener hears a finish once.
 */
import { expect } from 'chai';
import pino from 'pino';
import { connectRedis, type RedisClient } from '../../../src/storage/redis.js';
import { createSignals, type FinishedRun, type Signals } from '../../../src/runs/signals.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const silent = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A finished run as a recorder hands it over; `calls` counts how often it was built. */
function knownRun(runId: string) {
  const made = { calls: 0 };
  const finished: FinishedRun = () => {
    made.calls += 1;
    return { run: { id: runId } as never, steps: [], files: [] };
  };
  return { finished, made };
}

describe('run-finished signals', () => {
  describe('in one process', () => {
    let signals: Signals;
    beforeEach(async () => {
      signals = await createSignals(undefined, silent, 'test');
    });
    afterEach(async () => signals.close());

    it('a waiter gets the status and the run; waitForRun the status; nothing is built for a finish nobody waits for', async () => {
      const { finished, made } = knownRun('run_a');
      const finish = signals.waitForFinish('run_a', 5_000);
      const status = signals.waitForRun('run_a', 5_000);
      await signals.runFinished('run_a', 'COMPLETE', finished);
      expect(await status).to.equal('COMPLETE');
      const got = await finish;
      expect(got?.status).to.equal('COMPLETE');
      expect(made.calls, 'built only when the waiter asks').to.equal(0);
      expect(got?.finished?.()?.run.id).to.equal('run_a');

      const other = knownRun('run_b');
      await signals.runFinished('run_b', 'FAILED', other.finished);
      expect(other.made.calls).to.equal(0);
    });

    it('a waiter past its time gets undefined, and a finish without the run gives the status alone', async () => {
      expect(await signals.waitForFinish('run_never', 30)).to.equal(undefined);
      const finish = signals.waitForFinish('run_c', 5_000);
      await signals.runFinished('run_c', 'TIMEOUT');
      expect(await finish).to.deep.equal({ status: 'TIMEOUT', finished: undefined });
    });
    it('endWaits (shutdown without Redis): waits under way and later ones end at once as at their timeout', async () => {
      const waiting = signals.waitForFinish('run_d', 5_000);
      const started = Date.now();
      signals.endWaits();
      expect(await waiting).to.equal(undefined);
      expect(await signals.waitForRun('run_e', 5_000)).to.equal(undefined);
      expect(Date.now() - started).to.be.below(1_000);
    });

    it('waitingRuns names the runs waited for; endWaitsFor ends those waits only, and later waits still wait', async () => {
      const a1 = signals.waitForFinish('run_a', 5_000);
      const a2 = signals.waitForFinish('run_a', 5_000);
      const b = signals.waitForFinish('run_b', 5_000);
      expect(signals.waitingRuns().sort()).to.deep.equal(['run_a', 'run_b']);
      signals.endWaitsFor(['run_a', 'run_x']);
      expect(await a1).to.equal(undefined);
      expect(await a2).to.equal(undefined);
      expect(signals.waitingRuns()).to.deep.equal(['run_b']);
      const again = signals.waitForFinish('run_a', 5_000);
      await signals.runFinished('run_a', 'COMPLETE');
      await signals.runFinished('run_b', 'FAILED');
      expect((await again)?.status).to.equal('COMPLETE');
      expect((await b)?.status).to.equal('FAILED');
      expect(signals.waitingRuns()).to.deep.equal([]);
    });
  });

  describe('through Redis, between two processes', () => {
    let clients: RedisClient[] = [];
    let here: Signals;
    let there: Signals;
    const prefix = `signals-test-${process.pid}-${Date.now()}`;
    before(async () => {
      clients = [await connectRedis(REDIS_URL, silent), await connectRedis(REDIS_URL, silent)];
    });
    beforeEach(async () => {
      here = await createSignals(clients[0], silent, prefix);
      there = await createSignals(clients[1], silent, prefix);
    });
    afterEach(async () => {
      await here.close();
      await there.close();
    });
    after(async () => {
      for (const c of clients) await c.close();
    });

    it('the finishing process\'s waiter gets the run, the other\'s the status alone; each "any run" listener hears it once', async () => {
      const heard = { here: [] as string[], there: [] as string[] };
      const offHere = here.onRunFinished((id, status) => heard.here.push(`${id} ${status}`));
      const offThere = there.onRunFinished((id, status) => heard.there.push(`${id} ${status}`));
      const { finished } = knownRun('run_r');
      const local = here.waitForFinish('run_r', 5_000);
      const remote = there.waitForFinish('run_r', 5_000);
      await here.runFinished('run_r', 'COMPLETE', finished);
      const [l, r] = await Promise.all([local, remote]);
      expect(l?.status).to.equal('COMPLETE');
      expect(l?.finished?.()?.run.id).to.equal('run_r');
      expect(r).to.deep.equal({ status: 'COMPLETE' });
      await sleep(100);
      expect(heard).to.deep.equal({ here: ['run_r COMPLETE'], there: ['run_r COMPLETE'] });
      offHere();
      offThere();
    });
  });
});
