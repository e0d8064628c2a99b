/**
 * Browser slots shared fairly between organisations, and browser boxes in the memory budget of
 * tenant processes (src/browser/README.md "Pool"), against a real service and real Chromium:
 * - while one organisation floods the service with long scripts, another's quick script gets a
 *   slot within 2 s, and the flooding organisation never holds more than BROWSER_ORG_MAX_CONTEXTS;
 * - a freed slot goes to the organisation with the fewest tasks running, and within one
 *   organisation to its oldest waiting task; a waiting task whose time ran out leaves the line;
 * - when the budget needs room for a new box, the idle box of the least recently used
 *   organisation is stopped, a busy one never; a task that finds no room waits for it;
 * - a box that can never fit in TENANT_MEMORY_MB is refused at the start call, naming it.
 * Leases are taken from the pool directly where the order of grants is what is looked at.
 */
import { expect } from 'chai';
import { createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { callTool } from '../gateway/helpers.js';
import { requireChromium } from '../../helpers/chromium.js';
import { finishedScript, startScript } from '../../helpers/browser-tasks.js';
import { BOX_EXPECTED_BYTES, type BrowserPool, type Lease } from '../../../src/browser/pool.js';
import type { BudgetMember } from '../../../src/containment/index.js';

const MiB = 1024 * 1024;

const start = (server: TestServer, org: TestOrg, code: string) => startScript(server, org, code, 'bld_fair');
const finished = (server: TestServer, org: TestOrg, sessionId: string) =>
  finishedScript(server, org, sessionId, 120_000);

/** Seconds from the task's start call to its `browser ready` log line (the log is stamped from the start). */
function readyAfterS(log: string): number {
  const m = /\[(\d\d):(\d\d\.\d{3})\] browser ready/.exec(log);
  if (!m) throw new Error(`no "browser ready" line in the log:\n${log}`);
  return Number(m[1]) * 60 + Number(m[2]);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, ok: () => boolean | Promise<boolean>, limitMs = 30_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await sleep(25);
  }
}

/** A lease of the pool whose grant is recorded in `order` under `name`. */
function take(pool: BrowserPool, orgId: string, name: string, order: string[], signal = new AbortController().signal) {
  return pool.acquire(orgId, signal).then((lease) => {
    order.push(name);
    return lease;
  });
}

/** Whether `p` has settled within `ms`. */
async function settled(p: Promise<unknown>, ms: number): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  await sleep(ms);
  return done;
}

describe('browser slots: fair across organisations, with a cap per organisation', function () {
  this.timeout(240_000);
  let server: TestServer;
  let a: TestOrg;
  let b: TestOrg;

  before(async function () {
    requireChromium(this);
    server = await startTestServer('sqlite', {
      NODE_ENV: 'test',
      BROWSER_MAX_CONTEXTS: '4',
      BROWSER_TASK_TIMEOUT_MS: '120000',
    });
    a = await createTestOrg(server, 'Org A');
    b = await createTestOrg(server, 'Org B');
  });
  after(async () => {
    await server?.close();
  });

  it("while A floods with long scripts, B's quick script starts within 2 s and A never runs more than BROWSER_ORG_MAX_CONTEXTS", async () => {
    const pool = server.app.services.browser.pool;
    expect(server.app.services.config.browser).to.include({ maxContexts: 4, orgMaxContexts: 2 });
    // Both browsers up, as for an organisation that used its browser a moment ago.
    for (const org of [a, b]) {
      const warm = await finished(server, org, await start(server, org, 'return 1'));
      expect(warm, warm.result).to.include({ status: 'completed' });
    }
    let mostA = 0;
    const watch = setInterval(() => (mostA = Math.max(mostA, pool.slots().perOrg.get(a.orgId) ?? 0)), 10);
    try {
      const flood: string[] = [];
      for (let i = 0; i < 6; i++) flood.push(await start(server, a, 'await page.waitForTimeout(6000); return "long";'));
      await until('A runs two scripts and four wait', () => {
        const s = pool.slots();
        return s.perOrg.get(a.orgId) === 2 && s.waiting === 4;
      });
      const quick = await finished(
        server,
        b,
        await start(server, b, 'await page.waitForTimeout(1000); return "quick";'),
      );
      expect(quick, quick.result).to.include({ status: 'completed', result: 'quick' });
      expect(readyAfterS(quick.logContent), quick.logContent).to.be.below(2);
      const done = await Promise.all(flood.map((id) => finished(server, a, id)));
      for (const d of done) expect(d, d.result).to.include({ status: 'completed', result: 'long' });
      // A's scripts went in order, two at a time: the 3rd and 4th waited for the first two, the 5th and 6th for those.
      const ready = done.map((d) => readyAfterS(d.logContent));
      expect(ready[2]!, JSON.stringify(ready)).to.be.above(4);
      expect(ready[4]!, JSON.stringify(ready)).to.be.above(10);
    } finally {
      clearInterval(watch);
    }
    expect(mostA).to.equal(2);
    expect(pool.slots()).to.deep.include({ inUse: 0, waiting: 0 });
  });

  it('a freed slot goes to the organisation with the fewest tasks running, and within one to its oldest task; a waiter whose time ran out leaves the line', async () => {
    const pool = server.app.services.browser.pool;
    const c = await createTestOrg(server, 'Org C');
    const order: string[] = [];
    const leases: Lease[] = [];
    // A takes its two, B its two: all four slots.
    for (const [org, name] of [
      [a, 'a1'],
      [a, 'a2'],
      [b, 'b1'],
      [b, 'b2'],
    ] as const)
      leases.push(await take(pool, org.orgId, name, order));
    const gone = new AbortController();
    const a3 = take(pool, a.orgId, 'a3', order, gone.signal);
    const a4 = take(pool, a.orgId, 'a4', order);
    const c1 = take(pool, c.orgId, 'c1', order);
    await until('three tasks wait', () => pool.slots().waiting === 3);
    gone.abort(new Error('time is up'));
    let why = '';
    await a3.catch((err: Error) => (why = err.message));
    expect(why).to.equal('time is up');
    expect(pool.slots().waiting).to.equal(2);
    // A slot of A frees: C (nothing running) goes before A's waiting task, although it asked later.
    leases[0]!.release();
    leases.push(await c1);
    expect(order.slice(4)).to.deep.equal(['c1']);
    expect(await settled(a4, 200)).to.equal(false);
    // A slot of B frees: A (one running) is below its cap and the only one waiting.
    leases[2]!.release();
    leases.push(await a4);
    expect(order.slice(4)).to.deep.equal(['c1', 'a4']);
    expect(pool.slots().perOrg).to.deep.equal(
      new Map([
        [a.orgId, 2],
        [b.orgId, 1],
        [c.orgId, 1],
      ]),
    );
    // Within one organisation, oldest first.
    const a5 = take(pool, a.orgId, 'a5', order);
    const a6 = take(pool, a.orgId, 'a6', order);
    await until('A has two waiting', () => pool.slots().waiting === 2);
    leases[1]!.release();
    leases.push(await a5);
    leases[leases.length - 2]!.release(); // a4
    leases.push(await a6);
    expect(order.slice(4)).to.deep.equal(['c1', 'a4', 'a5', 'a6']);
    for (const l of leases) l.release();
    expect(pool.slots()).to.deep.include({ inUse: 0, waiting: 0 });
  });
});

describe('browser boxes in the memory budget of tenant processes', function () {
  this.timeout(240_000);
  let server: TestServer;
  let orgs: TestOrg[];
  let pool: BrowserPool;
  let filler: BudgetMember | undefined;

  before(async function () {
    requireChromium(this);
    server = await startTestServer('sqlite', { NODE_ENV: 'test', BROWSER_MAX_CONTEXTS: '4' });
    orgs = [];
    for (const name of ['Org A', 'Org B', 'Org C']) orgs.push(await createTestOrg(server, name));
    pool = server.app.services.browser.pool;
  });
  afterEach(() => {
    filler?.release();
    filler = undefined;
  });
  after(async () => {
    await server?.close();
  });

  /** Fills the budget with a busy member until a new box fits only once `freed` bytes are freed. */
  function fill(freed: number): void {
    const budget = pool.budget!;
    const bytes = budget.totalBytes - budget.usedBytes() - BOX_EXPECTED_BYTES + freed;
    filler = budget.admit('runner', { orgId: 'filler', expectedBytes: bytes, evict: () => undefined });
    expect(filler, 'the filler fits').to.not.equal(undefined);
  }

  /** The budget's count of the organisation's box, once the watchdog has measured it. */
  async function measured(before: number): Promise<number> {
    const budget = pool.budget!;
    await until('the box is measured', () => budget.usedBytes() - before !== BOX_EXPECTED_BYTES);
    return budget.usedBytes() - before;
  }

  it("a new box evicts the least recently used organisation's idle box, never a busy one", async () => {
    const [a, b, c] = orgs.map((o) => o.orgId) as [string, string, string];
    const budget = pool.budget!;
    const used0 = budget.usedBytes();
    const la = await pool.acquire(a, new AbortController().signal);
    const aBytes = await measured(used0);
    expect(aBytes).to.be.above(50 * MiB);
    la.release(); // A idle
    const lb = await pool.acquire(b, new AbortController().signal); // B busy
    const pidA = await pool.pidOf(a);
    const pidB = await pool.pidOf(b);
    expect(pidA).to.be.a('number');
    const evictions = budget.stats().evictions;
    fill(aBytes / 2);
    const lc = await pool.acquire(c, new AbortController().signal);
    expect(budget.stats().evictions).to.equal(evictions + 1);
    expect(await pool.pidOf(a)).to.equal(undefined);
    expect(await pool.pidOf(b)).to.equal(pidB);
    expect(await pool.pidOf(c)).to.be.a('number');
    await until("A's box has exited", () => {
      try {
        process.kill(pidA!, 0);
        return false;
      } catch {
        return true;
      }
    });
    lb.release();
    lc.release();
  });

  it('a task that finds only busy boxes waits for room within its time limit, and starts when a box goes idle', async () => {
    const [a, b, c] = orgs.map((o) => o.orgId) as [string, string, string];
    const budget = pool.budget!;
    // Whatever boxes are left from before are busy now, as are A's and B's.
    const beforeA = budget.usedBytes();
    const la = await pool.acquire(a, new AbortController().signal);
    // What the budget counts for A's box once measured: evicting it must make room for C's below.
    const sizeA = await measured(beforeA);
    const lb = await pool.acquire(b, new AbortController().signal);
    const lc0 = await pool.acquire(c, new AbortController().signal);
    const pidB = await pool.pidOf(b);
    lc0.release();
    // The watchdogs measure a new box at once: the budget then counts what A's and B's boxes use, not what was expected.
    await sleep(1500);
    // C's box is the only idle one: a member that needs a little more than is free evicts it, so C needs a new one.
    const squeeze = budget.admit('runner', {
      orgId: 'squeeze',
      expectedBytes: budget.totalBytes - budget.usedBytes() + MiB,
      evict: () => undefined,
    });
    expect(squeeze, 'room made by evicting idle boxes').to.not.equal(undefined);
    squeeze!.release();
    expect(await pool.pidOf(c)).to.equal(undefined);
    const refusals = budget.stats().refusals;
    // Short by far more than the measured sizes of the boxes drift by (PSS shifts as boxes come and
    // go), and by less than A's box counts for (a young box without pages can measure under
    // 150 MiB), so that A's eviction below makes room.
    fill(Math.min(150 * MiB, Math.floor(sizeA / 2)));
    // The budget refuses C's box: its task waits, counted as waiting, without a slot.
    const timeUp = new AbortController();
    const doomed = pool.acquire(c, timeUp.signal);
    const waiting = pool.acquire(c, new AbortController().signal);
    await until('C waits for room', () => budget.stats().refusals > refusals);
    expect(await settled(waiting, 600)).to.equal(false);
    expect(pool.slots().waiting).to.equal(2);
    expect(pool.slots().perOrg.get(c)).to.equal(undefined);
    expect(await pool.pidOf(c)).to.equal(undefined);
    expect(await pool.pidOf(a)).to.be.a('number');
    expect(await pool.pidOf(b)).to.equal(pidB);
    timeUp.abort(new Error('time is up'));
    let why = '';
    await doomed.catch((err: Error) => (why = err.message));
    expect(why).to.match(/memory budget of tenant processes \(\d+ MiB, TENANT_MEMORY_MB\) had no room/);
    // A's task ends: its box goes idle, is evicted, and C's waiting task starts.
    la.release();
    const lc = await waiting;
    expect(await pool.pidOf(a)).to.equal(undefined);
    expect(await pool.pidOf(b)).to.equal(pidB);
    expect(await pool.pidOf(c)).to.be.a('number');
    lb.release();
    lc.release();
  });

  it('a box that can never fit in TENANT_MEMORY_MB is refused at the start call, naming the setting', async () => {
    const small = await startTestServer('sqlite', { NODE_ENV: 'test', TENANT_MEMORY_MB: '256' });
    try {
      const org = await createTestOrg(small, 'Org small');
      const res = await callTool(small, org.token, 'browser-automation', 'browser-automation_playwright_run', {
        code: 'return 1',
        buildId: 'bld_small',
      });
      expect(res.data?.error, JSON.stringify(res)).to.equal('browser_unavailable');
      expect(res.message).to.include('TENANT_MEMORY_MB').and.include('256 MiB');
    } finally {
      await small.close();
    }
  });
});
