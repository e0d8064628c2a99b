/**
 * The sandbox pool in the tenant memory budget (src/engine/sandbox/pool.ts, src/containment/budget.ts),
 * with real contained runner processes: the least recently used organisation's idle runner is
 * evicted to make room and a busy one never is; a step waits for room rather than failing; a
 * spare bound to an organisation carries nothing of another (a spare has never executed
 * anything, checked by the runner's own binding); a runner never serves two organisations; and
 * 1,000 organisations running a step each in turn complete with the pool inside its budget.
 */
import { existsSync } from 'node:fs';
import { expect } from 'chai';
import { MemoryBudget } from '../../../src/containment/index.js';
import { RUNNER_EXPECTED_BYTES, SandboxPool } from '../../../src/engine/sandbox/pool.js';
import { DEFAULT_LIMITS } from '../../../src/engine/sandbox/limits.js';
import { SandboxWorker } from '../../../src/engine/sandbox/worker.js';
import { silentLog, testIsolation, waitGone } from './sandbox-helpers.js';

/** A budget of room for `n` runners as they are admitted (before any measurement). */
const runners = (n: number) => new MemoryBudget(n * RUNNER_EXPECTED_BYTES);

const step = (orgId: string, code = 'return { sum: (ctx.inputs.a || 0) + 1 }', timeoutMs = 5000) => ({
  orgId,
  code,
  inputs: { a: 1 },
  steps: [],
  timeoutMs,
  contextKey: `${orgId}:k`,
});

/** The runner trees of the live processes of `orgId`. */
const treesOf = (pool: SandboxPool, orgId: string) => pool.trees().filter((t) => t.orgId === orgId);

describe('engine sandbox: pool in the memory budget', function () {
  this.timeout(120_000);

  it("a full budget evicts the least recently used organisation's idle runner, never a busy one", async () => {
    const budget = runners(3);
    const pool = new SandboxPool({ isolation: await testIsolation(), budget, size: 1, log: silentLog });
    try {
      // X holds its runner busy for the whole test (long enough for a slow machine's starts).
      const busy = pool.run(
        step('org_x', 'const end = Date.now() + 8000; while (Date.now() < end) {} return "x"', 20_000),
      );
      for (let i = 0; i < 200 && treesOf(pool, 'org_x').length === 0; i++) await new Promise((r) => setTimeout(r, 25));
      const xTree = treesOf(pool, 'org_x')[0]!.pids;
      expect((await pool.run(step('org_a'))).outcome).to.equal('ok');
      await pool.start(); // the spare that replaces the one A took
      const aTree = treesOf(pool, 'org_a')[0]!.pids;
      expect((await pool.run(step('org_b'))).outcome).to.equal('ok');
      // B's spare took the last room: its replacement evicted A (idle, least recently used), not X (busy).
      await pool.start();
      expect(await waitGone(aTree[0]!)).to.equal(true);
      expect(treesOf(pool, 'org_a')).to.have.length(0);
      expect(treesOf(pool, 'org_b')).to.have.length(1);
      const bTree = treesOf(pool, 'org_b')[0]!.pids;
      expect((await pool.run(step('org_a'))).outcome).to.equal('ok'); // A again: on a spare, B is evicted next
      await pool.start();
      expect(await waitGone(bTree[0]!)).to.equal(true);
      expect(treesOf(pool, 'org_x')[0]!.pids).to.deep.equal(xTree);
      expect((await busy).text).to.equal('x');
      expect(budget.usedBytes()).to.be.at.most(budget.totalBytes);
      expect(pool.stats().evicted).to.be.at.least(2);
      expect(budget.stats().evictions).to.equal(pool.stats().evicted);
    } finally {
      await pool.close();
    }
  });

  it('a step waits while the budget is full of busy runners (its deadline counts), then runs; it never fails for the budget', async () => {
    const pool = new SandboxPool({ isolation: await testIsolation(), budget: runners(2), size: 1, log: silentLog });
    try {
      const spin = 'const end = Date.now() + 1200; while (Date.now() < end) {} return 1';
      const a = pool.run(step('org_a', spin));
      const b = pool.run(step('org_b', spin));
      await new Promise((r) => setTimeout(r, 400));
      // Both runners busy, nothing idle: C waits, and gives up only with its own deadline.
      const ctl = new AbortController();
      setTimeout(() => ctl.abort(), 150);
      expect((await pool.run({ ...step('org_c'), signal: ctl.signal })).outcome).to.equal('aborted');
      const c = await pool.run(step('org_c'));
      expect(c.outcome, c.text).to.equal('ok');
      expect((await a).outcome).to.equal('ok');
      expect((await b).outcome).to.equal('ok');
    } finally {
      await pool.close();
    }
  });

  it('a budget too small for a single runner fails the step clearly', async () => {
    const pool = new SandboxPool({
      isolation: await testIsolation(),
      budget: new MemoryBudget(4 * 1024 * 1024),
      log: silentLog,
    });
    try {
      const out = await pool.run(step('org_a'));
      expect(out.outcome).to.equal('unavailable');
      expect(out.text).to.match(/needs about 16 MiB; the tenant memory budget \(TENANT_MEMORY_MB\) is 4 MiB/);
    } finally {
      await pool.close();
    }
  });

  it('a spare bound to organisation B carries nothing of A: no globals, prototypes, process state or files', async () => {
    const isolation = await testIsolation();
    // 'unrestricted' (unit tests only): the step has the runner's own process and file system, as
    // if the language layer and Node's permission model were both broken.
    const pool = new SandboxPool({ isolation, size: 1, breach: 'unrestricted', log: silentLog });
    try {
      await pool.start();
      const a = await pool.run(
        step(
          'org_a',
          `globalThis.leakA = 'secret-a';
           Array.prototype.leakA = 'secret-a';
           process.leakA = 'secret-a';
           process.env.LEAK_A = 'secret-a';
           const fs = process.mainModule.require('fs');
           fs.writeFileSync('/tmp/org-a-secret', 'secret-a');
           return process.pid;`,
        ),
      );
      expect(a.outcome, a.text).to.equal('ok');
      const b = await pool.run(
        step(
          'org_b',
          `const fs = process.mainModule.require('fs');
           return {
             pid: process.pid,
             global: typeof globalThis.leakA,
             proto: typeof [].leakA,
             process: typeof process.leakA,
             env: Object.keys(process.env),
             file: fs.existsSync('/tmp/org-a-secret'),
           };`,
        ),
      );
      expect(b.outcome, b.text).to.equal('ok');
      expect(b.runner).to.not.equal(a.runner);
      const seen = JSON.parse(b.text) as Record<string, unknown>;
      expect(seen).to.deep.include({ global: 'undefined', proto: 'undefined', process: 'undefined', env: [] });
      // Each contained runner has a private /tmp (without bubblewrap, processes share the host's).
      if (isolation.plan.bwrap) expect(seen.file).to.equal(false);
      const [aTree] = treesOf(pool, 'org_a');
      const [bTree] = treesOf(pool, 'org_b');
      expect(aTree!.pids.filter((p) => bTree!.pids.includes(p))).to.deep.equal([]);
    } finally {
      await pool.close();
      if (!isolation.plan.bwrap && existsSync('/tmp/org-a-secret')) {
        const { rmSync } = await import('node:fs');
        rmSync('/tmp/org-a-secret', { force: true });
      }
    }
  });

  it('a runner binds once, only while it never executed anything, and refuses any other organisation', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const os = await import('node:os');
    const path = await import('node:path');
    const cwd = mkdtempSync(path.join(os.tmpdir(), 'sandbox-bind-'));
    const worker = await SandboxWorker.start({
      isolation: await testIsolation(),
      cwd,
      limits: DEFAULT_LIMITS,
      spawnTimeoutMs: 10_000,
      killGraceMs: 500,
      rssHeadroomMb: 384,
      contexts: 0,
      defaultMemoryMb: 64,
      breach: 'off',
    });
    try {
      const exec = (orgId: string) =>
        worker.exec(
          { orgId, code: 'return 1', data: '{"inputs":{},"steps":[]}', timeoutMs: 1000, memoryMb: 64 },
          () => {},
        );
      expect(worker.pristine).to.equal(true);
      expect(await exec('org_a')).to.deep.include({ killed: 'crash' }); // a spare runs nothing
      expect(worker.pristine).to.equal(true);
      worker.bind('org_a');
      expect(await exec('org_b')).to.deep.include({ killed: 'crash' });
      expect(worker.pristine).to.equal(true);
      expect(await exec('org_a')).to.have.nested.property('done.outcome', 'ok');
      expect(worker.pristine).to.equal(false);
      expect(() => worker.bind('org_b')).to.throw(/cannot be bound to another organisation/);
      expect(() => worker.bind('org_a')).to.throw(/serves one already/);
      expect(worker.orgId).to.equal('org_a');
    } finally {
      worker.kill('crash', 'test over');
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  it('a runner never serves two organisations while many interleave under a small budget', async () => {
    const pool = new SandboxPool({ isolation: await testIsolation(), budget: runners(4), size: 2, log: silentLog });
    try {
      const orgs = Array.from({ length: 8 }, (_, i) => `org_${i}`);
      const outs = await Promise.all(
        Array.from({ length: 120 }, (_, i) => {
          const orgId = orgs[i % orgs.length]!;
          return pool.run(step(orgId)).then((o) => ({ o, orgId }));
        }),
      );
      const byRunner = new Map<number, Set<string>>();
      for (const { o, orgId } of outs) {
        expect(o.outcome, o.text).to.equal('ok');
        byRunner.set(o.runner!, (byRunner.get(o.runner!) ?? new Set()).add(orgId));
      }
      for (const [runner, seen] of byRunner) expect([...seen], `runner ${runner}`).to.have.length(1);
      expect(pool.budget.usedBytes()).to.be.at.most(pool.budget.totalBytes);
    } finally {
      await pool.close();
    }
  });

  it('an organisation takes a second runner only when its steps queue behind a long one, not for short ones', async () => {
    const pool = new SandboxPool({ isolation: await testIsolation(), size: 2, log: silentLog });
    try {
      await pool.start();
      // Two callers of short steps: they take turns on one runner.
      const short = await Promise.all(
        Array.from({ length: 2 }, async () => {
          const runners = new Set<number | undefined>();
          for (let i = 0; i < 30; i++) runners.add((await pool.run(step('org_a'))).runner);
          return runners;
        }),
      );
      expect(new Set(short.flatMap((r) => [...r])).size).to.equal(1);
      // A long step: the next one waits about 200 ms, then runs on a second runner, long before the first ends.
      const long = pool.run(
        step('org_a', 'const end = Date.now() + 2000; while (Date.now() < end) {} return 1', 10_000),
      );
      await new Promise((r) => setTimeout(r, 100));
      const t = performance.now();
      const next = await pool.run(step('org_a'));
      expect(next.outcome).to.equal('ok');
      expect(performance.now() - t).to.be.within(150, 1500);
      expect(next.runner).to.not.equal((await long).runner);
      expect(treesOf(pool, 'org_a')).to.have.length(2);
    } finally {
      await pool.close();
    }
  });

  it('1,000 organisations each run a step in turn: no error, and the pool stays within its budget', async function () {
    // Every organisation needs a runner of its own (about 50 ms of CPU to start one): the
    // budget's room for 8 runners keeps 4 spares starting ahead while the least recently used
    // idle runners are evicted.
    this.timeout(180_000);
    const budget = runners(8);
    const pool = new SandboxPool({ isolation: await testIsolation(), budget, size: 4, log: silentLog });
    try {
      await pool.start();
      let peak = 0;
      const results = new Set<number>();
      // Four callers, each taking the next organisation: steps of different organisations overlap.
      let next = 0;
      const caller = async () => {
        for (let i = next++; i < 1000; i = next++) {
          const out = await pool.run({ ...step(`org_${i}`), inputs: { a: i } });
          expect(out.outcome, `org_${i}: ${out.text}`).to.equal('ok');
          expect(JSON.parse(out.text)).to.deep.equal({ sum: i + 1 });
          results.add(i);
          peak = Math.max(peak, budget.usedBytes());
          expect(pool.stats().bytes).to.be.at.most(budget.totalBytes);
        }
      };
      await Promise.all([caller(), caller(), caller(), caller()]);
      expect(results.size).to.equal(1000);
      expect(peak).to.be.at.most(budget.totalBytes);
      const s = pool.stats();
      expect(s.evicted).to.be.at.least(900);
      expect(s.processes + s.starting).to.be.at.most(8);
    } finally {
      await pool.close();
    }
  });
});
