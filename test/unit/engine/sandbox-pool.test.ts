/**
 * The sandbox pool's life cycle: warm start, reuse, recycling, concurrency, memory classes,
 * close; and the IPC protocol's refusal of malformed child messages.
 */
import { expect } from 'chai';
import { SandboxPool } from '../../../src/engine/sandbox/pool.js';
import { PROTOCOL_VERSION, parseChildMessage } from '../../../src/engine/sandbox/protocol.js';
import { runCode, silentLog, waitGone } from './sandbox-helpers.js';

describe('engine sandbox: pool', function () {
  this.timeout(60_000);

  it('start() brings `size` processes up; warm executions reuse them', async () => {
    const pool = new SandboxPool({ size: 2, log: silentLog });
    try {
      await pool.start();
      const pids = pool.pids();
      expect(pids).to.have.length(2);
      for (let i = 0; i < 20; i++) expect((await runCode(pool, `return ${i}`)).result).to.equal(String(i));
      expect(pool.pids().sort()).to.deep.equal(pids.sort());
    } finally {
      await pool.close();
    }
  });

  it('warm round trip of `return 1` stays small (p50 under 20 ms even on a slow CI machine)', async () => {
    const pool = new SandboxPool({ size: 1, log: silentLog });
    try {
      await pool.start();
      const times: number[] = [];
      for (let i = 0; i < 200; i++) {
        const t = performance.now();
        const out = await pool.run({ code: 'return 1', inputs: {}, steps: [], timeoutMs: 1000 });
        times.push(performance.now() - t);
        expect(out.outcome).to.equal('ok');
      }
      times.sort((a, b) => a - b);
      expect(times[100]).to.be.below(20);
    } finally {
      await pool.close();
    }
  });

  it('recycles a process after maxExecutionsPerProcess executions', async () => {
    const pool = new SandboxPool({ size: 1, maxExecutionsPerProcess: 3, log: silentLog });
    try {
      await pool.start();
      const [first] = pool.pids();
      for (let i = 0; i < 3; i++) expect((await runCode(pool, 'return 1')).status).to.equal('COMPLETE');
      expect(await waitGone(first!)).to.equal(true);
      expect((await runCode(pool, 'return 2')).result).to.equal('2');
      expect(pool.pids()).to.have.length(1);
      expect(pool.pids()).to.not.include(first);
    } finally {
      await pool.close();
    }
  });

  it('maxExecutionsPerProcess 1 gives every step a fresh process', async () => {
    const pool = new SandboxPool({ size: 1, maxExecutionsPerProcess: 1, log: silentLog });
    try {
      await pool.start();
      const used: number[] = [];
      for (let i = 0; i < 3; i++) {
        await pool.start(); // wait for the replacement so pids() names the process that will run
        const [pid] = pool.pids();
        used.push(pid!);
        expect((await runCode(pool, 'return 1')).status).to.equal('COMPLETE');
        expect(await waitGone(pid!)).to.equal(true);
      }
      expect(new Set(used).size).to.equal(3);
    } finally {
      await pool.close();
    }
  });

  it('runs more steps than processes: the rest wait their turn', async () => {
    const pool = new SandboxPool({ size: 2, log: silentLog });
    try {
      const outs = await Promise.all(Array.from({ length: 8 }, (_, i) => runCode(pool, `let s = 0; for (let k = 0; k < 1e6; k++) s += k; return ${i}`)));
      expect(outs.map((o) => o.result)).to.deep.equal(['0', '1', '2', '3', '4', '5', '6', '7']);
      expect(pool.pids().length).to.be.at.most(2);
    } finally {
      await pool.close();
    }
  });

  it('a step waiting for a process gives up when the run signal fires', async () => {
    const pool = new SandboxPool({ size: 1, log: silentLog });
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

  it('a non-default memoryMb gets its own processes, stopped when idle', async () => {
    const pool = new SandboxPool({ size: 1, idleTimeoutMs: 200, log: silentLog });
    try {
      await pool.start();
      const [defaultPid] = pool.pids();
      expect((await runCode(pool, 'return 1', { step: { memoryMb: 64 } })).status).to.equal('COMPLETE');
      const all = pool.pids();
      expect(all).to.have.length(2);
      const other = all.find((p) => p !== defaultPid)!;
      expect(await waitGone(other)).to.equal(true);
      expect(pool.pids()).to.deep.equal([defaultPid]);
    } finally {
      await pool.close();
    }
  });

  it('maxProcesses is respected across memory classes by evicting idle processes', async () => {
    const pool = new SandboxPool({ size: 1, maxProcesses: 1, log: silentLog });
    try {
      await pool.start();
      for (const memoryMb of [64, 128, 96, 128]) {
        expect((await runCode(pool, 'return 1', { step: { memoryMb } })).status).to.equal('COMPLETE');
        expect(pool.stats().processes).to.be.at.most(1);
      }
    } finally {
      await pool.close();
    }
  });

  it('close() kills every process and later steps fail clearly', async () => {
    const pool = new SandboxPool({ size: 2, log: silentLog });
    await pool.start();
    const pids = pool.pids();
    await pool.close();
    for (const pid of pids) expect(await waitGone(pid)).to.equal(true);
    const out = await runCode(pool, 'return 1');
    expect(out).to.include({ status: 'FAILED', exitCode: 1 });
    expect(out.result).to.match(/sandbox is unavailable: The sandbox pool is closed/);
  });

  describe('protocol', () => {
    it('accepts well-formed v1 messages', () => {
      expect(parseChildMessage({ v: PROTOCOL_VERSION, t: 'ready' })).to.deep.equal({ t: 'ready' });
      expect(parseChildMessage({ v: 1, t: 'log', id: 3, line: 'x' })).to.deep.equal({ t: 'log', id: 3, line: 'x' });
      const done = parseChildMessage({ v: 1, t: 'done', id: 1, outcome: 'ok', kind: 'json', text: '1', files: [{ name: 'a', mime: undefined, text: false, data: new Uint8Array([1]) }] });
      expect(done).to.deep.include({ t: 'done', outcome: 'ok', text: '1' });
    });

    it('refuses other versions and malformed fields', () => {
      const bad: unknown[] = [
        null,
        'ready',
        { v: 2, t: 'ready' },
        { t: 'ready' },
        { v: 1, t: 'log', id: 1, line: 5 },
        { v: 1, t: 'done', id: 1, outcome: 'ok', kind: 'json', text: 1, files: [] },
        { v: 1, t: 'done', id: 1, outcome: 'ok', kind: 'other', text: '1', files: [] },
        { v: 1, t: 'done', id: 1, outcome: 'ok', kind: 'json', text: '1', files: [{ name: 'a', text: false, data: 'not bytes' }] },
        { v: 1, t: 'done', id: 1, outcome: 'weird', message: 'x' },
        { v: 1, t: 'done', id: '1', outcome: 'error', message: 'x' },
      ];
      for (const m of bad) expect(parseChildMessage(m), JSON.stringify(m)).to.equal(undefined);
    });
  });
});
