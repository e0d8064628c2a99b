/**
 * Warm contexts (src/engine/sandbox/README.md "Context reuse"): a context is reused only for
 * the same step code of the same organisation and workflow; globals are reset in between;
 * built-in mutations persist for that key alone; a step that failed in any way leaves no
 * context behind; executions are routed to the process holding their context.
 */
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import { SandboxPool } from '../../../src/engine/sandbox/pool.js';
import { parseChildMessage, PROTOCOL_VERSION } from '../../../src/engine/sandbox/protocol.js';
import { codeHashes, contextKey } from '../../../src/engine/steps/code.js';
import { executeStep, type ExecutedStep } from '../../../src/engine/execute-step.js';
import type { WorkflowStep } from '../../../src/engine/definition.js';
import { silentLog, startRunner, testIsolation } from './sandbox-helpers.js';

interface Where {
  orgId?: string;
  automationId?: string;
  stepIndex?: number;
}

interface Options {
  inputs?: Record<string, unknown>;
  step?: Partial<WorkflowStep>;
  signal?: AbortSignal;
}

/** Runs `code` as a code step of org_a / wf_a / step 0 unless `where` says otherwise. */
function run(pool: SandboxPool, code: string, where: Where = {}, opts: Options = {}): Promise<ExecutedStep> {
  const step: WorkflowStep = { type: 'code', name: 'test', code, ...opts.step };
  const ctx = {
    inputs: opts.inputs ?? {},
    steps: [],
    runId: 'run_ctx',
    automationId: where.automationId ?? 'wf_a',
    stepIndex: where.stepIndex ?? 0,
    orgId: where.orgId ?? 'org_a',
  };
  return executeStep(step, ctx, { sandbox: pool, log: silentLog, signal: opts.signal });
}

/** Counts its executions in a built-in (which survives in a reused context). */
const COUNTER = 'Array.prototype.runs = (Array.prototype.runs || 0) + 1; return Array.prototype.runs';

/**
 * Reports whether an earlier execution in its context marked a built-in, marks it, then fails
 * the way `ctx.inputs.mode` says (or returns).
 */
const MARKER = `
  const seen = Array.prototype.mark === true;
  Array.prototype.mark = true;
  const mode = ctx.inputs.mode;
  if (mode === 'throw') throw new Error('boom');
  if (mode === 'loop') for (;;) {}
  if (mode === 'stall') await new Promise(() => {});
  if (mode === 'oom') { const a = []; for (;;) a.push(new Array(1e6).fill(1)); }
  if (mode === 'import') await import('node:fs');
  if (mode === 'big') return 'x'.repeat(1024 * 1024 + 1);
  if (mode === 'assign') globalThis.Math = Object.create(Math); // a built-in global replaced
  if (mode === 'nonconfigurable') Object.defineProperty(globalThis, 'pinned', { value: 1 });
  if (mode === 'proto') Object.setPrototypeOf(globalThis, null);
  if (mode === 'delete') delete globalThis.Math;
  if (mode === 'redefine') Object.defineProperty(globalThis, 'Array', { enumerable: true });
  return seen ? 'dirty' : 'clean';`;

describe('engine sandbox: warm contexts', function () {
  this.timeout(60_000);

  describe('the context key', () => {
    it('is org + workflow + step index + code hash, and only equal for all four equal', () => {
      const base = { orgId: 'org_a', automationId: 'wf_a', stepIndex: 0 };
      const key = contextKey(base, 'return 1');
      expect(contextKey({ ...base }, 'return 1')).to.equal(key);
      const others = [
        contextKey({ ...base, orgId: 'org_b' }, 'return 1'),
        contextKey({ ...base, orgId: undefined }, 'return 1'),
        contextKey({ ...base, automationId: 'wf_b' }, 'return 1'),
        contextKey({ ...base, stepIndex: 1 }, 'return 1'),
        contextKey(base, 'return 2'),
        contextKey(base, 'return 1 '),
      ];
      expect(new Set([key, ...others]).size).to.equal(others.length + 1);
      // Separators inside ids cannot make two different triples collide.
      expect(contextKey({ orgId: 'a","b', automationId: 'c', stepIndex: 0 }, 'x')).to.not.equal(
        contextKey({ orgId: 'a', automationId: 'b","c', stepIndex: 0 }, 'x'),
      );
      expect(key.length).to.be.below(200);
    });

    it("memoises a code's hash per organisation: another organisation's identical code is hashed anew", () => {
      const code = `return ${Math.random()}`;
      const where = (orgId: string) => ({ orgId, automationId: 'wf_a', stepIndex: 0 });
      const before = codeHashes.size;
      contextKey(where('org_a'), code);
      expect(codeHashes.size).to.equal(before + 1);
      contextKey(where('org_a'), code); // the organisation's own repeat: its entry
      expect(codeHashes.size).to.equal(before + 1);
      contextKey(where('org_b'), code); // the same code of another organisation: an entry of its own
      expect(codeHashes.size).to.equal(before + 2);
    });
  });

  describe('one process, one key', () => {
    let pool: SandboxPool;
    before(async () => {
      pool = new SandboxPool({ isolation: await testIsolation(), size: 1, log: silentLog });
      await pool.start();
    });
    after(() => pool.close());

    it('reuses the context and resets globals between executions', async () => {
      const before = pool.stats().reusedContexts;
      const code = `
        const had = [typeof added, typeof globalThis.viaThis, typeof viaDefine, typeof globalThis[Symbol.for('s')], typeof globalThis[7]];
        added = 1; globalThis.viaThis = 2; Object.defineProperty(globalThis, 'viaDefine', { get() { return 3 }, configurable: true });
        globalThis[Symbol.for('s')] = 4; globalThis[7] = 5; (0, eval)('var viaEval = 6');
        return had.concat([typeof viaEval === 'number' ? 'set' : 'unset'])`;
      const outs = [];
      for (let i = 0; i < 5; i++) outs.push(await run(pool, code));
      for (const out of outs)
        expect(JSON.parse(out.result), out.result).to.deep.equal([
          'undefined',
          'undefined',
          'undefined',
          'undefined',
          'undefined',
          'set',
        ]);
      expect(pool.stats().reusedContexts - before).to.equal(4);
    });

    it('the same key sees its own built-in mutations (documented); globals built in are intact', async () => {
      const outs = [];
      for (let i = 0; i < 4; i++) outs.push((await run(pool, COUNTER, { automationId: 'wf_counter' })).result);
      expect(outs).to.deep.equal(['1', '2', '3', '4']);
      const intact = await run(
        pool,
        'return [typeof JSON.parse, typeof Math.max, Object.getPrototypeOf(globalThis) !== null, typeof FinalizationRegistry, typeof WebAssembly]',
        { automationId: 'wf_counter', stepIndex: 1 },
      );
      expect(JSON.parse(intact.result)).to.deep.equal(['function', 'function', true, 'undefined', 'undefined']);
    });

    it('a global or a built-in mutation is seen by no other step, workflow or organisation', async () => {
      const plant =
        'const saw = [typeof planted, [].leak, ({}).leak2]; globalThis.planted = "s"; Array.prototype.leak = "s"; Object.prototype.leak2 = "s"; return saw';
      const look = 'return [typeof planted, [].leak, ({}).leak2]';
      const clean = ['undefined', null, null];
      expect(JSON.parse((await run(pool, plant)).result)).to.deep.equal(clean);
      // Its own next execution: the global was reset, the built-in mutations were not.
      expect(JSON.parse((await run(pool, plant)).result)).to.deep.equal(['undefined', 's', 's']);
      const seen = [
        await run(pool, look), // other code, same org, workflow and step
        await run(pool, plant, { orgId: 'org_b' }), // the same code in another organisation
        await run(pool, plant, { automationId: 'wf_b' }), // … in another workflow
        await run(pool, plant, { stepIndex: 3 }), // … at another step
        await run(pool, look, { orgId: 'org_c' }),
      ];
      for (const out of seen) expect(JSON.parse(out.result), out.result).to.deep.equal(clean);
    });

    const failures: Array<[string, Partial<WorkflowStep>, string]> = [
      ['throw', {}, 'FAILED'],
      ['stall', { timeoutMs: 2000 }, 'TIMEOUT'],
      ['loop', { timeoutMs: 300 }, 'TIMEOUT'],
      ['oom', { timeoutMs: 30_000 }, 'FAILED'],
      ['import', {}, 'FAILED'],
      ['big', {}, 'FAILED'],
    ];
    for (const [mode, step, status] of failures) {
      it(`after a step that ended with "${mode}", the next execution of its key starts clean`, async () => {
        const where = { automationId: `wf_fail_${mode}` };
        await run(pool, MARKER, where, { step });
        expect((await run(pool, MARKER, where, { step })).result).to.equal('dirty'); // reused
        const failed = await run(pool, MARKER, where, { inputs: { mode }, step });
        expect(failed.status, failed.result).to.equal(status);
        expect((await run(pool, MARKER, where, { step })).result).to.equal('clean');
      });
    }

    for (const mode of ['assign', 'delete', 'redefine', 'nonconfigurable', 'proto']) {
      it(`a step that changes the global object itself (${mode}) leaves no context to reuse`, async () => {
        const where = { automationId: `wf_global_${mode}` };
        await run(pool, MARKER, where);
        expect((await run(pool, MARKER, where, { inputs: { mode } })).result).to.equal('dirty');
        expect((await run(pool, MARKER, where)).result).to.equal('clean');
      });
    }

    it('what a step plants on Object.prototype runs nowhere between its executions', async () => {
      // Accessors that would hang (or make a descriptor invalid, a fatal error) if the runner read
      // a descriptor object of the step's realm after the step; armed only as the step returns.
      const code = `
        let armed = false;
        if (ctx.inputs.plant) {
          // Globals first: with these accessors in place, even the step's own global writes
          // would end its process (a Node limitation that fails only the step doing it).
          globalThis.added = 1;
          if (ctx.inputs.reassign) globalThis.Math = Math;
          for (const name of ['enumerable', 'configurable', 'writable', 'value', 'set']) {
            const desc = Object.create(null); // the accessors planted so far are not read here
            desc.get = () => { if (armed) for (;;) {} };
            desc.configurable = true;
            Object.defineProperty(Object.prototype, name, desc);
          }
          Object.prototype.get = function () { return 1 };
        }
        armed = true;
        return typeof ctx.log`;
      const runner = () =>
        pool
          .trees()
          .find((t) => t.orgId === 'org_a')
          ?.pids.at(-1);
      const pid = runner();
      for (const reassign of [false, true]) {
        const where = { automationId: `wf_planted_${reassign}` };
        expect((await run(pool, code, where, { inputs: { plant: true, reassign } })).result).to.equal('function');
        const started = Date.now();
        const next = await run(pool, code, where, { step: { timeoutMs: 2000 } });
        expect(next, next.result).to.include({ status: 'COMPLETE', result: 'function' });
        expect(Date.now() - started).to.be.below(1000);
      }
      expect(runner()).to.equal(pid);
    });

    it('after a run signal stopped a step, the next execution starts clean', async () => {
      const where = { automationId: 'wf_abort' };
      await run(pool, MARKER, where);
      const ctl = new AbortController();
      setTimeout(() => ctl.abort(), 200);
      const stopped = await run(pool, MARKER, where, {
        inputs: { mode: 'loop' },
        step: { timeoutMs: 10_000 },
        signal: ctl.signal,
      });
      expect(stopped).to.include({ status: 'FAILED', exitCode: 137 });
      expect((await run(pool, MARKER, where)).result).to.equal('clean');
    });
  });

  it('keeps at most contextsPerProcess contexts, least recently used evicted', async () => {
    const pool = new SandboxPool({ isolation: await testIsolation(), size: 1, contextsPerProcess: 2, log: silentLog });
    try {
      await pool.start();
      const at = (automationId: string) => run(pool, COUNTER, { automationId }).then((o) => o.result);
      const seq = [await at('a'), await at('b'), await at('a'), await at('c'), await at('a'), await at('b')];
      // c evicts b (a was used more recently); a stays warm; b starts over.
      expect(seq).to.deep.equal(['1', '1', '2', '1', '3', '1']);
    } finally {
      await pool.close();
    }
  });

  it('reuseContexts: false gives every execution a fresh context', async () => {
    const pool = new SandboxPool({ isolation: await testIsolation(), size: 1, reuseContexts: false, log: silentLog });
    try {
      await pool.start();
      const outs = [];
      for (let i = 0; i < 5; i++) outs.push((await run(pool, COUNTER)).result);
      expect(outs).to.deep.equal(['1', '1', '1', '1', '1']);
      expect(pool.stats()).to.include({ executions: 5, reusedContexts: 0 });
    } finally {
      await pool.close();
    }
  });

  it('routes an execution to the idle process that holds its context, else to any idle one', async () => {
    const pool = new SandboxPool({ isolation: await testIsolation(), size: 2, log: silentLog });
    const code = `${COUNTER.replace('return', 'if (ctx.inputs.spin) { const end = Date.now() + 1000; while (Date.now() < end); } return')}`;
    try {
      await pool.start();
      expect(pool.pids()).to.have.length(2);
      const a: string[] = [];
      const b: string[] = [];
      for (let i = 0; i < 5; i++) a.push((await run(pool, code, { automationId: 'wf_route_a' })).result);
      for (let i = 0; i < 5; i++) {
        b.push((await run(pool, code, { automationId: 'wf_route_b' })).result);
        a.push((await run(pool, code, { automationId: 'wf_route_a' })).result);
      }
      // Each key stayed in one context, in whichever process had it first.
      expect(a).to.deep.equal(['1', '2', '3', '4', '5', '6', '7', '8', '9', '10']);
      expect(b).to.deep.equal(['1', '2', '3', '4', '5']);
      expect(pool.stats()).to.include({ executions: 15, reusedContexts: 13 });
      // Its holder busy with a long step, an execution waits a moment (a short step would be
      // done by then), then takes a second process (a fresh context there) rather than wait for it.
      const [slow, fast] = await Promise.all([
        run(pool, code, { automationId: 'wf_route_a' }, { inputs: { spin: true } }),
        run(pool, code, { automationId: 'wf_route_a' }),
      ]);
      expect([slow.result, fast.result]).to.deep.equal(['11', '1']);
    } finally {
      await pool.close();
    }
  });

  it("contexts kept by one step do not crowd out another step's memory", async () => {
    const pool = new SandboxPool({ isolation: await testIsolation(), size: 1, defaultMemoryMb: 64, log: silentLog });
    try {
      await pool.start();
      // About 36 MB (more than half the heap limit) kept alive through a built-in of wf_keep's context.
      const keep = await run(pool, 'Array.prototype.hoard = Array.from({ length: 4.5e6 }, () => 1.5); return 1', {
        automationId: 'wf_keep',
      });
      expect(keep.status).to.equal('COMPLETE');
      const runner = () =>
        pool
          .trees()
          .find((t) => t.orgId === 'org_a')
          ?.pids.at(-1);
      const pid = runner();
      const other = await run(pool, 'const a = Array.from({ length: 4.5e6 }, () => 2.5); return a.length', {
        automationId: 'wf_other',
      });
      expect(other, other.result).to.include({ status: 'COMPLETE', result: '4500000' });
      expect(runner()).to.equal(pid);
      // The hoard went with its context: wf_keep starts clean.
      expect((await run(pool, 'return typeof [].hoard', { automationId: 'wf_keep' })).result).to.equal('undefined');
    } finally {
      await pool.close();
    }
  });

  describe('protocol', () => {
    let child: ChildProcess;
    const next = () => new Promise<unknown>((resolve) => child.once('message', resolve));
    before(async () => {
      child = await startRunner(4);
    });
    after(() => {
      child.kill('SIGKILL');
    });
    const exec = (extra: Record<string, unknown>) => ({
      v: PROTOCOL_VERSION,
      t: 'exec',
      id: 1,
      code: 'return 1',
      data: '{"inputs":{},"steps":[]}',
      timeoutMs: 1000,
      memoryMb: 64,
      ...extra,
    });

    it('the runner reports whether an execution reused a context', async () => {
      child.send(exec({ id: 1, key: 'k' }));
      expect(parseChildMessage(await next())).to.deep.include({ t: 'done', outcome: 'ok', reused: false });
      child.send(exec({ id: 2, key: 'k' }));
      expect(parseChildMessage(await next())).to.deep.include({ t: 'done', outcome: 'ok', reused: true });
      child.send(exec({ id: 3, key: 'k', code: 'return 2' })); // same key, other code: not reused
      expect(parseChildMessage(await next())).to.deep.include({ t: 'done', outcome: 'ok', text: '2', reused: false });
      child.send(exec({ id: 4 }));
      expect(parseChildMessage(await next())).to.deep.include({ t: 'done', outcome: 'ok', reused: false });
    });

    it('the runner answers a malformed exec message with a message the parent refuses', async () => {
      for (const bad of [
        exec({ key: 5 }),
        exec({ key: '' }),
        exec({ key: 'k'.repeat(1025) }),
        exec({ id: 'x' }),
        exec({ data: {} }),
        exec({ timeoutMs: 0 }),
        exec({ memoryMb: 4 }),
        exec({ memoryMb: 'x' }),
        exec({ v: 1 }),
      ]) {
        child.send(bad);
        const reply = await next();
        expect(parseChildMessage(reply), JSON.stringify(bad).slice(0, 80)).to.equal(undefined);
      }
    });

    it('the parent refuses a non-boolean `reused`', () => {
      expect(
        parseChildMessage({ v: PROTOCOL_VERSION, t: 'done', id: 1, outcome: 'error', message: 'x', reused: 'yes' }),
      ).to.equal(undefined);
      expect(
        parseChildMessage({ v: PROTOCOL_VERSION, t: 'done', id: 1, outcome: 'error', message: 'x' }),
      ).to.deep.include({ reused: false });
    });
  });
});
