/**
 * The sandbox pool's life cycle: warm spares, binding to one organisation, per-organisation
 * share and total cap, recycling, concurrency, memory classes, idle exit, close; and the IPC
 * protocol's refusal of malformed child messages.
 */
import { expect } from 'chai';
import { MemoryBudget } from '../../../src/containment/index.js';
import { RUNNER_EXPECTED_BYTES, SandboxPool } from '../../../src/engine/sandbox/pool.js';
import { PROTOCOL_VERSION, parseChildMessage } from '../../../src/engine/sandbox/protocol.js';
import { runCode, silentLog, testIsolation, waitGone } from './sandbox-helpers.js';

/** A budget of room for `n` idle runners as they are admitted. */
const runners = (n: number) => new MemoryBudget(n * RUNNER_EXPECTED_BYTES);

describe('engine sandbox: pool', function () {
  this.timeout(60_000);

  it('start() brings `size` spares up; an organisation binds one, later steps reuse its process, and a new spare starts', async () => {
    const pool = new SandboxPool({ isolation: await testIsolation(), size: 2, log: silentLog });
    try {
      await pool.start();
      expect(pool.pids()).to.have.length(2);
      expect(pool.stats().spares).to.equal(2);
      const runners = new Set<number | undefined>();
      for (let i = 0; i < 20; i++) {
        const out = await pool.run({ orgId: 'org_a', code: `return ${i}`, inputs: {}, steps: [], timeoutMs: 1000 });
        expect(out.text).to.equal(String(i));
        runners.add(out.runner);
      }
      expect(runners.size).to.equal(1);
      await pool.start(); // the spare that replaces the bound one
      expect(pool.stats()).to.include({ spares: 2, processes: 3 });
      expect(pool.trees().filter((t) => t.orgId === 'org_a')).to.have.length(1);
    } finally {
      await pool.close();
    }
  });

  it('warm round trip of `return 1` stays small (p50 under 20 ms even on a slow CI machine)', async () => {
    const pool = new SandboxPool({ isolation: await testIsolation(), size: 1, log: silentLog });
    try {
      await pool.start();
      const times: number[] = [];
      for (let i = 0; i < 200; i++) {
        const t = performance.now();
        const out = await pool.run({
          orgId: 'org_a',
          code: 'return 1',
          inputs: {},
          steps: [],
          timeoutMs: 1000,
          contextKey: 'k',
        });
        times.push(performance.now() - t);
        expect(out.outcome).to.equal('ok');
      }
      times.sort((a, b) => a - b);
      expect(times[100]).to.be.below(20);
    } finally {
      await pool.close();
    }
  });

  it('a process never serves two organisations, however their steps interleave', async () => {
    const pool = new SandboxPool({ isolation: await testIsolation(), size: 2, budget: runners(3), log: silentLog });
    try {
      const orgs = ['org_a', 'org_b', 'org_c'];
      const byRunner = new Map<number, Set<string>>();
      const outs = await Promise.all(
        Array.from({ length: 60 }, (_, i) => {
          const orgId = orgs[i % 3]!;
          return pool
            .run({
              orgId,
              code: 'let s = 0; for (let k = 0; k < 1e5; k++) s += k; return s',
              inputs: {},
              steps: [],
              timeoutMs: 5000,
            })
            .then((o) => ({ o, orgId }));
        }),
      );
      for (const { o, orgId } of outs) {
        expect(o.outcome).to.equal('ok');
        const seen = byRunner.get(o.runner!) ?? new Set<string>();
        seen.add(orgId);
        byRunner.set(o.runner!, seen);
      }
      for (const [runner, seen] of byRunner) expect([...seen], `runner ${runner}`).to.have.length(1);
      expect(pool.stats().processes).to.be.at.most(3);
    } finally {
      await pool.close();
    }
  });

  it('an organisation has at most `size` processes; others still get theirs', async () => {
    const pool = new SandboxPool({ isolation: await testIsolation(), size: 2, budget: runners(4), log: silentLog });
    try {
      const slow = 'let s = 0; for (let k = 0; k < 3e6; k++) s += k; return s';
      const busy = Array.from({ length: 8 }, () =>
        pool.run({ orgId: 'org_busy', code: slow, inputs: {}, steps: [], timeoutMs: 10_000 }),
      );
      const other = await pool.run({ orgId: 'org_other', code: 'return 1', inputs: {}, steps: [], timeoutMs: 5000 });
      expect(other.outcome).to.equal('ok');
      const outs = await Promise.all(busy);
      expect(new Set(outs.map((o) => o.runner)).size).to.be.at.most(2);
      expect(pool.trees().filter((t) => t.orgId === 'org_busy').length).to.be.at.most(2);
    } finally {
      await pool.close();
    }
  });

  it('recycles a process after maxExecutionsPerProcess executions', async () => {
    const pool = new SandboxPool({
      isolation: await testIsolation(),
      size: 1,
      maxExecutionsPerProcess: 3,
      log: silentLog,
    });
    try {
      const first = await runCode(pool, 'return 1');
      expect(first.status).to.equal('COMPLETE');
      const firstTree = pool.trees().find((t) => t.orgId === 'org_test')!.pids;
      for (let i = 0; i < 2; i++) expect((await runCode(pool, 'return 1')).status).to.equal('COMPLETE');
      expect(await waitGone(firstTree[0]!)).to.equal(true);
      expect((await runCode(pool, 'return 2')).result).to.equal('2');
      expect(pool.trees().find((t) => t.orgId === 'org_test')!.pids).to.not.include(firstTree[0]);
    } finally {
      await pool.close();
    }
  });

  it('maxExecutionsPerProcess 1 gives every step a fresh process', async () => {
    const pool = new SandboxPool({
      isolation: await testIsolation(),
      size: 1,
      maxExecutionsPerProcess: 1,
      log: silentLog,
    });
    try {
      const runners = new Set<number | undefined>();
      for (let i = 0; i < 3; i++) {
        const out = await pool.run({ orgId: 'org_a', code: 'return 1', inputs: {}, steps: [], timeoutMs: 1000 });
        expect(out.outcome).to.equal('ok');
        runners.add(out.runner);
      }
      expect(runners.size).to.equal(3);
    } finally {
      await pool.close();
    }
  });

  it('runs more steps than processes: the rest wait their turn', async () => {
    const pool = new SandboxPool({ isolation: await testIsolation(), size: 2, log: silentLog });
    try {
      const outs = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          runCode(pool, `let s = 0; for (let k = 0; k < 1e6; k++) s += k; return ${i}`),
        ),
      );
      expect(outs.map((o) => o.result)).to.deep.equal(['0', '1', '2', '3', '4', '5', '6', '7']);
      expect(pool.trees().filter((t) => t.orgId === 'org_test').length).to.be.at.most(2);
    } finally {
      await pool.close();
    }
  });

  it('a step waiting for a process gives up when the run signal fires', async () => {
    const pool = new SandboxPool({ isolation: await testIsolation(), size: 1, budget: runners(1), log: silentLog });
    try {
      const busy = runCode(pool, 'while (true) {}', { step: { timeoutMs: 1500 } });
      const ctl = new AbortController();
      setTimeout(() => ctl.abort(new Error('run deadline reached')), 200);
      const waiting = await runCode(pool, 'return 1', { signal: ctl.signal });
      expect(waiting).to.include({ status: 'TIMEOUT', exitCode: 124 });
      expect((await busy).status).to.equal('TIMEOUT');
    } finally {
      await pool.close();
    }
  });

  it("steps of several memory classes share the organisation's process (an isolate per class)", async () => {
    const pool = new SandboxPool({ isolation: await testIsolation(), size: 1, log: silentLog });
    try {
      const runners = new Set<number | undefined>();
      for (const memoryMb of [64, 128, 96, 128, 256]) {
        const out = await pool.run({
          orgId: 'org_a',
          code: 'return 1',
          inputs: {},
          steps: [],
          timeoutMs: 1000,
          memoryMb,
        });
        expect(out.outcome).to.equal('ok');
        runners.add(out.runner);
      }
      expect(runners.size).to.equal(1);
    } finally {
      await pool.close();
    }
  });

  it('an idle process of an organisation exits after idleTimeoutMs; spares stay', async () => {
    const pool = new SandboxPool({ isolation: await testIsolation(), size: 1, idleTimeoutMs: 200, log: silentLog });
    try {
      expect((await runCode(pool, 'return 1')).status).to.equal('COMPLETE');
      const bound = pool.trees().find((t) => t.orgId === 'org_test')!.pids;
      expect(await waitGone(bound[0]!)).to.equal(true);
      await pool.start();
      expect(pool.trees().map((t) => t.orgId)).to.deep.equal(['']);
    } finally {
      await pool.close();
    }
  });

  it('the memory budget holds across organisations: an idle process of another organisation makes room', async () => {
    const pool = new SandboxPool({ isolation: await testIsolation(), size: 1, budget: runners(2), log: silentLog });
    try {
      for (const orgId of ['org_a', 'org_b', 'org_c', 'org_a', 'org_d']) {
        const out = await pool.run({ orgId, code: 'return 1', inputs: {}, steps: [], timeoutMs: 1000 });
        expect(out.outcome, orgId).to.equal('ok');
        expect(pool.stats().processes + pool.stats().starting).to.be.at.most(2);
      }
    } finally {
      await pool.close();
    }
  });

  it('close() kills every process and later steps fail clearly', async () => {
    const pool = new SandboxPool({ isolation: await testIsolation(), size: 2, log: silentLog });
    await pool.start();
    const pids = pool.pids();
    await pool.close();
    for (const pid of pids) expect(await waitGone(pid)).to.equal(true);
    const out = await runCode(pool, 'return 1');
    expect(out).to.include({ status: 'FAILED', exitCode: 1 });
    expect(out.result).to.match(/sandbox is unavailable: The sandbox pool is closed/);
  });

  describe('protocol', () => {
    it('accepts well-formed v2 messages', () => {
      const v = PROTOCOL_VERSION;
      expect(v).to.equal(2);
      expect(parseChildMessage({ v, t: 'ready' })).to.deep.equal({ t: 'ready' });
      expect(parseChildMessage({ v, t: 'log', id: 3, line: 'x' })).to.deep.equal({ t: 'log', id: 3, line: 'x' });
      const done = parseChildMessage({
        v,
        t: 'done',
        id: 1,
        outcome: 'ok',
        kind: 'json',
        text: '1',
        files: [{ name: 'a', mime: undefined, text: false, data: new Uint8Array([1]) }],
      });
      expect(done).to.deep.include({ t: 'done', outcome: 'ok', text: '1' });
      expect(parseChildMessage({ v, t: 'done', id: 2, outcome: 'memory', message: 'limit' })).to.deep.include({
        outcome: 'memory',
      });
    });

    it('refuses other versions and malformed fields', () => {
      const bad: unknown[] = [
        null,
        'ready',
        { v: 1, t: 'ready' },
        { t: 'ready' },
        { v: 2, t: 'log', id: 1, line: 5 },
        { v: 2, t: 'done', id: 1, outcome: 'ok', kind: 'json', text: 1, files: [] },
        { v: 2, t: 'done', id: 1, outcome: 'ok', kind: 'other', text: '1', files: [] },
        {
          v: 2,
          t: 'done',
          id: 1,
          outcome: 'ok',
          kind: 'json',
          text: '1',
          files: [{ name: 'a', text: false, data: 'not bytes' }],
        },
        { v: 2, t: 'done', id: 1, outcome: 'weird', message: 'x' },
        { v: 2, t: 'done', id: '1', outcome: 'error', message: 'x' },
      ];
      for (const m of bad) expect(parseChildMessage(m), JSON.stringify(m)).to.equal(undefined);
    });
  });
});
