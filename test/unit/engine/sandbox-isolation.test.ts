/**
 * The code-step boundary (src/engine/README.md: "no access to the service's own modules, files or
 * environment", memory and wall-clock limits). Two layers are tested separately:
 * the vm context (a step reaches no host object) and the process (even a process object
 * would have an empty environment and no fs write, child process or worker permission).
 */
import { expect } from 'chai';
import { fork, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SandboxPool } from '../../../src/engine/sandbox/pool.js';
import { permissionFlag, sandboxExecArgv, sandboxForkOptions, RUNNER_PATH } from '../../../src/engine/sandbox/flags.js';
import { alive, runCode, silentLog, waitGone } from './sandbox-helpers.js';

const CANARY = 'SWITCHYARD_TEST_CANARY';
const THIS_FILE = fileURLToPath(import.meta.url);

/**
 * Code that tries to reach a process object through `attempt` and, when it does, reports
 * what that process could do; otherwise it reports the failure.
 */
function probe(attempt: string): string {
  return `
    let p;
    try { p = (${attempt}); } catch (e) { return { reached: false, error: String(e && e.message) }; }
    if (!p || typeof p !== 'object' || typeof p.pid !== 'number') return { reached: false, got: typeof p };
    const r = { reached: true, env: Object.keys(p.env) };
    try { p.mainModule.require('fs').writeFileSync('/tmp/sandbox-escape', 'x'); r.wrote = true; } catch (e) { r.wrote = false; }
    try { p.mainModule.require('child_process').execSync('id'); r.spawned = true; } catch (e) { r.spawned = false; }
    return r;`;
}

describe('engine sandbox: isolation and limits', function () {
  this.timeout(60_000);
  let pool: SandboxPool;

  before(async () => {
    process.env[CANARY] = 'must-not-leak';
    pool = new SandboxPool({ size: 2, log: silentLog });
    await pool.start();
  });
  after(async () => {
    delete process.env[CANARY];
    await pool.close();
  });

  describe('the vm context reaches no host object', () => {
    const attempts: Record<string, string> = {
      'process global': 'process',
      'require global': 'require',
      'globalThis.constructor.constructor': 'globalThis.constructor.constructor("return process")()',
      'this.constructor.constructor': 'this.constructor.constructor("return process")()',
      'ctx.log.constructor.constructor': 'ctx.log.constructor.constructor("return process")()',
      'ctx.files.write.constructor.constructor': 'ctx.files.write.constructor.constructor("return process")()',
      'ctx.inputs.constructor.constructor': 'ctx.inputs.constructor.constructor("return process")()',
      'error from a ctx function': '(() => { try { ctx.files.write("x", Symbol()); } catch (e) { return e.constructor.constructor("return process")(); } })()',
      'AsyncFunction constructor': 'await (async () => {}).constructor("return process")()',
      'eval': 'eval("process")',
    };
    for (const [name, attempt] of Object.entries(attempts)) {
      it(`${name} does not reach a process`, async () => {
        const out = await runCode(pool, probe(attempt));
        expect(out.status, out.result).to.equal('COMPLETE');
        const r = JSON.parse(out.result);
        expect(r.reached, out.result).to.equal(false);
      });
    }

    it('everything a step can touch belongs to its own realm (checked without code generation)', async () => {
      const out = await runCode(pool, `
        let thrown; try { ctx.files.write("x", Symbol()); } catch (e) { thrown = e; }
        let logged; try { ctx.log({ toJSON() { throw new TypeError("t"); } }); logged = "ok"; } catch (e) { logged = e; }
        return {
          global: globalThis.constructor.constructor === Function,
          log: ctx.log.constructor === Function && Object.getPrototypeOf(ctx.log) === Function.prototype,
          write: ctx.files.write.constructor === Function,
          ctx: Object.getPrototypeOf(ctx) === Object.prototype && Object.getPrototypeOf(ctx.files) === Object.prototype,
          inputs: Object.getPrototypeOf(ctx.inputs) === Object.prototype && Object.getPrototypeOf(ctx.inputs.list) === Array.prototype,
          steps: Object.getPrototypeOf(ctx.steps) === Array.prototype && Object.getPrototypeOf(ctx.steps[0]) === Object.prototype,
          thrown: thrown instanceof Error,
          logged: logged === "ok" || logged instanceof Error,
        };`, { inputs: { list: [1] }, steps: [{ stepIndex: 0, name: 'a', status: 'COMPLETE', resultType: 'plaintext', result: 'x', exitCode: 0 }] });
      expect(out.status, out.result).to.equal('COMPLETE');
      expect(JSON.parse(out.result)).to.deep.equal({ global: true, log: true, write: true, ctx: true, inputs: true, steps: true, thrown: true, logged: true });
    });

    it('import() is refused', async () => {
      const out = await runCode(pool, 'const fs = await import("fs"); return typeof fs.readFileSync');
      expect(out, out.result).to.include({ status: 'FAILED', exitCode: 1 });
      expect(out.result).to.match(/import\(\) is not available/);
      const hidden = await runCode(pool, 'return await eval("imp" + "ort(\'node:fs\')")');
      expect(hidden).to.include({ status: 'FAILED', exitCode: 1 });
    });

    it('stack-trace call sites expose no host function', async () => {
      const out = await runCode(pool, `
        Error.prepareStackTrace = (e, sites) => sites;
        const sites = new Error('x').stack;
        const found = [];
        for (const s of sites) {
          let fn; try { fn = s.getFunction(); } catch {}
          let self; try { self = s.getThis(); } catch {}
          for (const v of [fn, self]) {
            if (!v) continue;
            try { const p = v.constructor.constructor('return process')(); if (p) found.push(typeof p); } catch {}
          }
        }
        return found`);
      expect(out.status, out.result).to.equal('COMPLETE');
      expect(JSON.parse(out.result)).to.deep.equal([]);
    });

    it('Node globals (fetch, timers, Buffer) do not exist in a step', async () => {
      const out = await runCode(pool, 'return [typeof fetch, typeof setTimeout, typeof Buffer, typeof WebAssembly.compile === "function" ? "wasm" : "no"]');
      const [f, t, b] = JSON.parse(out.result);
      expect([f, t, b]).to.deep.equal(['undefined', 'undefined', 'undefined']);
      const wasm = await runCode(pool, 'return new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]))');
      expect(wasm.status).to.equal('FAILED'); // code generation for wasm is off
    });
  });

  describe('the process boundary (same flags as the pool, without the vm layer)', () => {
    let cwd: string;
    before(() => {
      cwd = mkdtempSync(path.join(os.tmpdir(), 'sandbox-flags-'));
    });
    after(() => rmSync(cwd, { recursive: true, force: true }));

    /** Runs `script` with the sandbox's flags and environment; it prints one JSON line. */
    function inSandboxProcess(script: string): Record<string, unknown> {
      const opts = sandboxForkOptions(64, cwd);
      const res = spawnSync(process.execPath, [...sandboxExecArgv(64), '-e', script], { env: opts.env, cwd: opts.cwd, encoding: 'utf8', timeout: 20_000 });
      expect(res.status, res.stderr).to.equal(0);
      return JSON.parse(res.stdout.trim()) as Record<string, unknown>;
    }

    it('uses the permission flag of this Node version', () => {
      expect(permissionFlag('20.20.2')).to.equal('--experimental-permission');
      expect(permissionFlag('22.12.0')).to.equal('--experimental-permission');
      expect(permissionFlag('22.13.0')).to.equal('--permission');
      expect(permissionFlag('23.4.0')).to.equal('--experimental-permission');
      expect(permissionFlag('23.5.0')).to.equal('--permission');
      expect(permissionFlag('24.0.0')).to.equal('--permission');
      expect(sandboxExecArgv(128)).to.include(permissionFlag());
      expect(sandboxExecArgv(128)).to.include('--max-old-space-size=128');
      expect(sandboxForkOptions(128, cwd).execArgv).to.not.include.members(process.execArgv.filter((a) => a.includes('tsx')));
    });

    it('has an empty environment, no fs writes, no child processes, no workers, no reads outside the runner', () => {
      const r = inSandboxProcess(`
        const fs = require('fs'), cp = require('child_process'), wt = require('worker_threads');
        const t = (f) => { try { f(); return 'allowed'; } catch (e) { return e.code || e.message; } };
        console.log(JSON.stringify({
          env: Object.keys(process.env),
          write: t(() => fs.writeFileSync('/tmp/sandbox-escape-test', 'x')),
          writeCwd: t(() => fs.writeFileSync('x.txt', 'x')),
          spawn: t(() => cp.execSync('id')),
          worker: t(() => new wt.Worker('1', { eval: true })),
          readEtc: t(() => fs.readFileSync('/etc/passwd')),
          readService: t(() => fs.readFileSync(${JSON.stringify(THIS_FILE)})),
          readRunner: t(() => fs.readFileSync(${JSON.stringify(RUNNER_PATH)}).length > 0),
          evalHost: t(() => Function('return 1')()),
        }));`);
      expect(r.env).to.deep.equal([]);
      expect(r.write).to.equal('ERR_ACCESS_DENIED');
      expect(r.writeCwd).to.equal('ERR_ACCESS_DENIED');
      expect(r.spawn).to.equal('ERR_ACCESS_DENIED');
      expect(r.worker).to.equal('ERR_ACCESS_DENIED');
      expect(r.readEtc).to.equal('ERR_ACCESS_DENIED');
      expect(r.readService).to.equal('ERR_ACCESS_DENIED');
      expect(r.readRunner).to.equal('allowed');
      expect(r.evalHost).to.match(/Code generation from strings disallowed/);
    });

    it('a child forked with the pool\'s options (IPC included) sees none of the service environment', async () => {
      expect(process.env[CANARY]).to.equal('must-not-leak');
      const script = path.join(cwd, 'env-probe.cjs');
      writeFileSync(script, 'process.send(Object.keys(process.env)); process.disconnect();');
      const opts = sandboxForkOptions(64, cwd);
      // Same options; only the readable file differs (the probe instead of the runner).
      opts.execArgv = opts.execArgv!.map((a) => (a.startsWith('--allow-fs-read=') ? `--allow-fs-read=${script}` : a));
      const child = fork(script, [], opts);
      const keys = await new Promise<unknown>((resolve, reject) => {
        child.once('message', resolve);
        child.once('exit', (code) => reject(new Error(`probe exited ${code}`)));
      });
      expect(keys).to.deep.equal([]);
    });
  });

  describe('wall clock', () => {
    it('a synchronous infinite loop times out near timeoutMs and the pool serves the next step', async () => {
      const started = Date.now();
      const out = await runCode(pool, 'while (true) {}', { step: { timeoutMs: 300 } });
      expect(out).to.include({ status: 'TIMEOUT', resultType: 'error', exitCode: 124 });
      expect(Date.now() - started).to.be.below(300 + 1500);
      expect(out.result).to.match(/timed out after 300 ms/);
      expect((await runCode(pool, 'return "next"')).result).to.equal('next');
    });

    it('a loop after an await is caught too', async () => {
      const out = await runCode(pool, 'await null; for (;;) {}', { step: { timeoutMs: 300 } });
      expect(out).to.include({ status: 'TIMEOUT', exitCode: 124 });
    });

    it('a promise that never settles ends as TIMEOUT without holding the process', async () => {
      const started = Date.now();
      const out = await runCode(pool, 'await new Promise(() => {}); return 1', { step: { timeoutMs: 5000 } });
      expect(out).to.include({ status: 'TIMEOUT', exitCode: 124 });
      expect(out.result).to.match(/can never settle/);
      expect(Date.now() - started).to.be.below(5000);
    });

    it('Atomics.wait (a blocked thread) is interrupted too', async () => {
      const out = await runCode(pool, 'Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); return 1', { step: { timeoutMs: 300 } });
      expect(out).to.include({ status: 'TIMEOUT', exitCode: 124 });
      expect((await runCode(pool, 'return 2')).result).to.equal('2');
    });

    it('the parent kills a process that does not answer in time and replaces it', async () => {
      // The vm timeout normally answers first; a negative grace makes the parent's clock win,
      // so the kill path (the backstop for anything the vm timeout cannot stop) is exercised.
      const backstop = new SandboxPool({ size: 1, log: silentLog, killGraceMs: -250 });
      try {
        await backstop.start();
        const [pid] = backstop.pids();
        const started = Date.now();
        const out = await runCode(backstop, 'while (true) {}', { step: { timeoutMs: 1000 } });
        expect(out).to.include({ status: 'TIMEOUT', exitCode: 124 });
        expect(out.result).to.match(/no answer within 1000 ms/);
        expect(Date.now() - started).to.be.below(1000);
        expect(await waitGone(pid!)).to.equal(true);
        expect((await runCode(backstop, 'return "replaced"')).result).to.equal('replaced');
        expect(backstop.pids()).to.not.include(pid);
      } finally {
        await backstop.close();
      }
    });

    it('an unhandled rejection left by one step does not disturb the next step on the process', async () => {
      const single = new SandboxPool({ size: 1, log: silentLog });
      try {
        await single.start();
        const [pid] = single.pids();
        expect((await runCode(single, 'Promise.reject(new Error("left behind")); return 1')).status).to.equal('COMPLETE');
        await new Promise((r) => setTimeout(r, 50));
        for (let i = 0; i < 3; i++) expect((await runCode(single, `return ${i}`)).result).to.equal(String(i));
        expect(single.pids()).to.deep.equal([pid]);
      } finally {
        await single.close();
      }
    });

    it('FinalizationRegistry (callbacks outside the time limit) is not available', async () => {
      const out = await runCode(pool, 'return typeof FinalizationRegistry');
      expect(out.result).to.equal('undefined');
    });

    it('the run signal stops a step: deadline → TIMEOUT 124, cancel → FAILED 137', async () => {
      const deadline = new AbortController();
      setTimeout(() => deadline.abort(new Error('run deadline reached')), 200);
      const a = await runCode(pool, 'while (true) {}', { signal: deadline.signal, step: { timeoutMs: 10_000 } });
      expect(a).to.include({ status: 'TIMEOUT', exitCode: 124 });
      expect(a.result).to.match(/run reached its time limit: run deadline reached/);
      expect(a.durationMs).to.be.below(2000);

      const cancel = new AbortController();
      setTimeout(() => cancel.abort(), 200);
      const b = await runCode(pool, 'while (true) {}', { signal: cancel.signal, step: { timeoutMs: 10_000 } });
      expect(b).to.include({ status: 'FAILED', exitCode: 137 });
      expect(b.result).to.match(/cancelled/);

      const already = new AbortController();
      already.abort(new Error('run deadline reached'));
      expect(await runCode(pool, 'return 1', { signal: already.signal })).to.include({ status: 'TIMEOUT', exitCode: 124 });
      expect((await runCode(pool, 'return 3')).result).to.equal('3');
    });
  });

  describe('memory', () => {
    it('a heap bomb fails with 137, the service is unaffected and the pool recovers', async () => {
      const rssBefore = process.memoryUsage().rss;
      const pidsBefore = pool.pids();
      const out = await runCode(pool, 'const a = []; while (true) a.push(new Array(1e6).fill(1))', { step: { timeoutMs: 30_000 } });
      expect(out).to.include({ status: 'FAILED', resultType: 'error', exitCode: 137 });
      expect(out.result).to.match(/Memory limit exceeded: .*128 MB/);
      expect(process.memoryUsage().rss - rssBefore).to.be.below(64 * 1024 * 1024);
      expect((await runCode(pool, 'return "alive"')).result).to.equal('alive');
      const dead = pidsBefore.filter((pid) => !alive(pid));
      expect(dead).to.have.length(1);
    });

    it('memoryMb sets the heap limit of the step', async () => {
      const code = 'const a = new Array(6e6).fill(1.5); return a.length';
      expect(await runCode(pool, code)).to.include({ status: 'COMPLETE', result: '6000000' });
      expect(await runCode(pool, code, { step: { memoryMb: 32 } })).to.include({ status: 'FAILED', exitCode: 137 });
      expect(await runCode(pool, 'return 1', { step: { memoryMb: 32 } })).to.include({ status: 'COMPLETE' });
    });

    it('off-heap memory (ArrayBuffers) is capped by the resident-memory watchdog', async () => {
      const tight = new SandboxPool({ size: 1, log: silentLog, rssHeadroomMb: 64 });
      try {
        const out = await runCode(tight, 'const keep = []; for (;;) { const b = new Uint8Array(16 * 1024 * 1024); b.fill(7); keep.push(b); }', { step: { timeoutMs: 20_000 } });
        expect(out).to.include({ status: 'FAILED', exitCode: 137 });
        expect(out.result).to.match(/resident memory|heap limit/);
      } finally {
        await tight.close();
      }
    });
  });
});
