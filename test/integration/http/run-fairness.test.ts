/**
 * No organisation starves another's runs (src/runs/README.md "Sharing the run slots"): while
 * organisation A floods a service with long code-step runs, organisation B's synchronous call of
 * a trivial workflow answers within twice its idle latency, plus 150 ms for timer and scheduling
 * noise (A's runners keep both cores of these machines busy while B's call is measured): the
 * median of five calls, and none of them as long as half of one of A's runs (a call that waited
 * for a slot A holds would take at least that; one slow call alone is the machine's). A real service on
 * loopback, with few run slots so the flood is small: sqlite with the in-process queue, and
 * PostgreSQL with the Redis queue (bee-queue). A's runs all end COMPLETE, each executed once,
 * and never more of them at once than RUN_ORG_CONCURRENCY.
 */
import { expect } from 'chai';
import { call, createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { dropRedisKeys, storeKinds } from '../../helpers/store.js';
import { code, deploy, type Deployed } from '../../helpers/runs.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const SLOTS = 4;
const ORG_SLOTS = 2;
/** A's runs: twice as many as the process has slots, each spinning its runner this long. */
const FLOOD = SLOTS * 2;
const SPIN_MS = 2500;
const NOISE_MS = 150;

const kinds = await storeKinds();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const kind of kinds) {
  const queue = kind === 'pg' ? 'Redis queue' : 'in-process queue';
  describe(`run fairness across organisations (${kind}, ${queue})`, function () {
    this.timeout(120_000);
    const prefix = `fair-${process.pid}-${Date.now()}`;
    let server: TestServer;
    let a: TestOrg;
    let b: TestOrg;
    let slow: Deployed;
    let quick: Deployed;

    before(async () => {
      server = await startTestServer(kind, {
        SEED_DEMO: 'false',
        RUN_CONCURRENCY: String(SLOTS),
        RUN_ORG_CONCURRENCY: String(ORG_SLOTS),
        SANDBOX_POOL_SIZE: '2',
        ...(kind === 'pg' ? { REDIS_URL, REDIS_PREFIX: prefix } : {}),
      });
      a = await createTestOrg(server, 'Flooding org');
      b = await createTestOrg(server, 'Quiet org');
      slow = await deploy(server, a, {
        name: 'Spin',
        steps: [
          code('Spin', `const end = Date.now() + ${SPIN_MS}; while (Date.now() < end) { /* busy */ } return 'spun';`),
        ],
      });
      quick = await deploy(server, b, {
        name: 'Sum',
        steps: [code('Sum', 'return { sum: (ctx.inputs.a || 0) + 1 };')],
      });
    });
    after(async () => {
      await server?.close();
      if (kind === 'pg') await dropRedisKeys(REDIS_URL, prefix);
    });
    afterEach(() => server.assertResponsesValid());

    /** B's synchronous call: its round trip in ms. */
    const quickCall = async (): Promise<number> => {
      const started = performance.now();
      const res = await call(server.baseUrl, 'POST', `/ext/triggers/${quick.apiTriggerId}`, {
        headers: { 'x-api-key': b.apiKey, 'x-api-wait': 'true' },
        body: { a: 41 },
      });
      const ms = performance.now() - started;
      expect(res.status, res.text).to.equal(200);
      expect(res.body.status, res.text).to.equal('COMPLETE');
      return ms;
    };

    const runsOf = async (orgId: string) =>
      (await server.store.db('runs').where({ org_id: orgId }).select('id', 'status', 'attempts')) as {
        id: string;
        status: string;
        attempts: number;
      }[];

    it(`B's sync call answers within 2 × its idle latency + ${NOISE_MS} ms while A floods with long runs`, async () => {
      await quickCall(); // binds B's runner
      const idle: number[] = [];
      for (let i = 0; i < 5; i++) idle.push(await quickCall());
      idle.sort((x, y) => x - y);
      const idleMs = idle[2]!;

      for (let i = 0; i < FLOOD; i++) {
        const res = await call(server.baseUrl, 'POST', `/ext/triggers/${slow.apiTriggerId}`, {
          headers: { 'x-api-key': a.apiKey },
          body: {},
        });
        expect(res.status, res.text).to.equal(200);
      }
      // A's runs took the slots they may have; the rest wait.
      const deadline = Date.now() + 10_000;
      while ((await runsOf(a.orgId)).filter((r) => r.status === 'RUNNING').length < ORG_SLOTS) {
        if (Date.now() > deadline) throw new Error("A's runs did not start");
        await sleep(20);
      }
      let mostRunning = 0;
      let watching = true;
      const watch = (async () => {
        while (watching) {
          const running = (await runsOf(a.orgId)).filter((r) => r.status === 'RUNNING').length;
          mostRunning = Math.max(mostRunning, running);
          await sleep(25);
        }
      })();

      const busy: number[] = [];
      for (let i = 0; i < 5; i++) busy.push(await quickCall());
      const limit = 2 * idleMs + NOISE_MS;
      const seen = `B's calls while A floods: ${busy.map((ms) => ms.toFixed(0)).join(', ')} ms; idle ${idleMs.toFixed(0)} ms; limit ${limit.toFixed(0)} ms`;
      expect([...busy].sort((x, y) => x - y)[2], seen).to.be.at.most(limit);
      expect(Math.max(...busy), seen).to.be.below(SPIN_MS / 2);

      // Every run of A ends COMPLETE, executed once, never more than ORG_SLOTS at once.
      const end = Date.now() + (FLOOD / ORG_SLOTS + 4) * SPIN_MS * 2;
      for (;;) {
        const runs = await runsOf(a.orgId);
        if (runs.every((r) => r.status === 'COMPLETE')) break;
        if (Date.now() > end) throw new Error(`A's runs: ${runs.map((r) => r.status).join(', ')}`);
        await sleep(100);
      }
      watching = false;
      await watch;
      const runs = await runsOf(a.orgId);
      expect(runs).to.have.length(FLOOD);
      expect(runs.map((r) => Number(r.attempts))).to.deep.equal(runs.map(() => 1));
      expect(mostRunning, 'most of A runs RUNNING at once').to.be.at.most(ORG_SLOTS);
    });
  });
}
