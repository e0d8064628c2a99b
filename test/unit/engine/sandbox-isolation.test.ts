/**
 * The code-step boundary (src/engine/sandbox/README.md), one layer at a time:
 * - language: a step runs in an isolate of its own, so no attempt (the Function constructor
 *   through any value that enters it, stack-trace call sites, errors thrown by ctx functions,
 *   Symbol-named errors, Proxy traps, promises of host functions, unhandled rejections after a
 *   built-in was replaced, import()) yields anything of the runner's realm;
 * - process: with the language layer assumed broken (the pool's `breach` switch hands the
 *   runner's own `process` to the step), the runner has an empty environment, runs as an
 *   unprivileged user, and Node's permission model refuses writes, reads, children and workers;
 * - time and memory limits, including for code left running after a step returns.
 * The operating-system layer against a real service is tested in
 * test/integration/process/isolation.test.ts.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RUNNER_UID_BASE, uidOf } from '../../../src/containment/index.js';
import { PACKAGE_ROOT } from '../../../src/kernel/package-files.js';
import { SandboxPool } from '../../../src/engine/sandbox/pool.js';
import { alive, runCode, silentLog, testIsolation, waitGone } from './sandbox-helpers.js';

const CANARY = 'SWITCHYARD_TEST_CANARY';

/**
 * Code that tries to reach a process object through `attempt` and reports what it got: a
 * process is anything with a numeric pid and an env.
 */
function probe(attempt: string): string {
  return `
    let p;
    try { p = (${attempt}); } catch (e) { return { reached: false, error: String(e && e.message) }; }
    if (!p || typeof p !== 'object' || typeof p.pid !== 'number' || !p.env) return { reached: false, got: typeof p };
    return { reached: true, env: Object.keys(p.env) };`;
}

/**
 * Collects whatever the step gets its hands on through `attack` (it calls `consider(value)`),
 * then asks each value's constructor chain for a `process`: a value of the runner's realm would
 * answer with one.
 */
function collect(attack: string): string {
  return `
    const found = [];
    let considered = 0;
    let busy = false; // a Proxy's traps see the proxy again: look at each value once, not recursively
    const consider = (v) => {
      if (busy || v === null || (typeof v !== 'object' && typeof v !== 'function')) return;
      considered += 1;
      busy = true;
      try {
        const F = v.constructor && v.constructor.constructor;
        if (typeof F !== 'function') return;
        if (F !== Function) found.push('a Function of another realm');
        const p = F('return typeof process === "object" ? process : (typeof require === "function" ? require : undefined)')();
        if (p) found.push(typeof p);
      } catch {} finally { busy = false; }
    };
    ${attack}
    return { found, considered };`;
}

describe('engine sandbox: isolation and limits', function () {
  this.timeout(60_000);
  let pool: SandboxPool;

  before(async () => {
    process.env[CANARY] = 'must-not-leak';
    pool = new SandboxPool({ isolation: await testIsolation(), size: 2, log: silentLog });
    await pool.start();
  });
  after(async () => {
    delete process.env[CANARY];
    await pool.close();
  });

  describe('language layer: a step reaches no object of the runner', () => {
    const attempts: Record<string, string> = {
      'process global': 'process',
      'require global': 'require',
      'globalThis.constructor.constructor': 'globalThis.constructor.constructor("return process")()',
      'this.constructor.constructor': 'this.constructor.constructor("return process")()',
      'ctx.log.constructor.constructor': 'ctx.log.constructor.constructor("return process")()',
      'ctx.files.write.constructor.constructor': 'ctx.files.write.constructor.constructor("return process")()',
      'ctx.inputs.constructor.constructor': 'ctx.inputs.constructor.constructor("return process")()',
      'error from a ctx function':
        '(() => { try { ctx.files.write("x", Symbol()); } catch (e) { return e.constructor.constructor("return process")(); } })()',
      'AsyncFunction constructor': 'await (async () => {}).constructor("return process")()',
      eval: 'eval("process")',
    };
    for (const [name, attempt] of Object.entries(attempts)) {
      it(`${name} does not reach a process`, async () => {
        const out = await runCode(pool, probe(attempt));
        expect(out.status, out.result).to.equal('COMPLETE');
        expect(JSON.parse(out.result).reached, out.result).to.equal(false);
      });
    }

    const attacks: Record<string, string> = {
      'errors thrown by ctx functions (bad arguments, throwing getters, throwing toJSON)': `
        for (const args of [[Symbol()], ['x', Symbol()], [{ get a() { throw new Error('g'); } }], [{ toJSON() { throw new TypeError('t'); } }]]) {
          try { ctx.files.write(...args); } catch (e) { consider(e); consider(Object.getPrototypeOf(e)); }
          try { ctx.log(...args); } catch (e) { consider(e); }
        }`,
      'an error whose name is a Symbol, thrown through every ctx function and formatted': `
        const e = new Error('x'); e.name = Symbol('s');
        try { ctx.log(e); } catch (err) { consider(err); }
        try { ctx.files.write(e, 'x'); } catch (err) { consider(err); }
        try { String(e); } catch (err) { consider(err); }
        try { e.stack; ctx.log(e.stack); } catch (err) { consider(err); }`,
      'Error.prepareStackTrace call sites of an error raised inside a ctx function': `
        Error.prepareStackTrace = (err, sites) => { for (const s of sites) { try { consider(s.getThis()); } catch {} try { consider(s.getFunction()); } catch {} } return ''; };
        try { ctx.files.write('x', Symbol()); } catch (e) { e.stack; consider(e); }
        try { ctx.log({ toJSON() { return new Error('inner').stack; } }); } catch (e) { consider(e); }
        new Error('here').stack;
        Error.prepareStackTrace = undefined;`,
      'Proxy traps on values handed to ctx functions': `
        const handler = {};
        for (const trap of ['get', 'getOwnPropertyDescriptor', 'ownKeys', 'has', 'getPrototypeOf', 'apply']) {
          handler[trap] = (...args) => { for (const a of args) consider(a); return Reflect[trap](...args); };
        }
        try { ctx.log(new Proxy({ a: 1 }, handler)); } catch (e) { consider(e); }
        try { ctx.files.write('p.json', new Proxy({ a: [1] }, handler)); } catch (e) { consider(e); }
        try { ctx.files.write(new Proxy({}, handler), 'x'); } catch (e) { consider(e); }`,
      'promises of host functions': `
        for (const f of [ctx.log, ctx.files.write]) {
          consider(f);
          try { consider(await Promise.resolve().then(() => f('x'))); } catch (e) { consider(e); }
          try { consider(await Promise.resolve().then(() => f(Symbol()))); } catch (e) { consider(e); }
        }`,
      'a replaced Function.prototype.apply and an unhandled rejection of a Symbol-named error': `
        const apply = Function.prototype.apply;
        Function.prototype.apply = function (self, args) { consider(self); if (args) for (const a of Array.from(args)) consider(a); return apply.call(this, self, args); };
        const e = new Error('x'); e.name = Symbol('s');
        consider(e);
        Promise.reject(e);
        try { ctx.log(e); } catch (err) { consider(err); }
        try { ctx.files.write(e, e); } catch (err) { consider(err); }
        consider(ctx.log);`,
      'import() and its rejection': `
        try { await import('node:fs'); } catch (e) { consider(e); }
        try { await eval('imp' + 'ort("node:child_process")'); } catch (e) { consider(e); }`,
    };
    for (const [name, attack] of Object.entries(attacks)) {
      it(`${name}: nothing of the runner's realm`, async () => {
        const out = await runCode(pool, collect(attack));
        expect(out.status, out.result).to.equal('COMPLETE');
        const r = JSON.parse(out.result) as { found: string[]; considered: number };
        expect(r.found, out.result).to.deep.equal([]);
        expect(r.considered, 'the attack must get values to consider').to.be.greaterThan(0);
      });
    }

    it('everything a step can touch belongs to its own realm (checked without code generation)', async () => {
      const out = await runCode(
        pool,
        `
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
        };`,
        {
          inputs: { list: [1] },
          steps: [{ stepIndex: 0, name: 'a', status: 'COMPLETE', resultType: 'plaintext', result: 'x', exitCode: 0 }],
        },
      );
      expect(out.status, out.result).to.equal('COMPLETE');
      expect(JSON.parse(out.result)).to.deep.equal({
        global: true,
        log: true,
        write: true,
        ctx: true,
        inputs: true,
        steps: true,
        thrown: true,
        logged: true,
      });
    });

    it('import() fails the step', async () => {
      const out = await runCode(pool, 'const fs = await import("fs"); return typeof fs.readFileSync');
      expect(out, out.result).to.include({ status: 'FAILED', exitCode: 1 });
      expect(out.result).to.match(/Not supported/);
    });

    it('Node globals (process, require, fetch, timers, Buffer), WebAssembly and what calls back later (FinalizationRegistry, Atomics.waitAsync) do not exist in a step', async () => {
      const out = await runCode(
        pool,
        'return [typeof process, typeof require, typeof fetch, typeof setTimeout, typeof setImmediate, typeof Buffer, typeof WebAssembly, typeof FinalizationRegistry, typeof Atomics.waitAsync]',
      );
      expect(JSON.parse(out.result)).to.deep.equal(Array(9).fill('undefined'));
    });

    it('an unhandled rejection left by a step neither fails it nor disturbs the next step on the process', async () => {
      const single = new SandboxPool({ isolation: await testIsolation(), size: 1, log: silentLog });
      try {
        const first = await single.run({
          orgId: 'org_a',
          code: 'Promise.reject(new Error("left behind")); return 1',
          inputs: {},
          steps: [],
          timeoutMs: 1000,
          contextKey: 'k',
        });
        expect(first, first.text).to.include({ outcome: 'ok', text: '1' });
        for (let i = 0; i < 3; i++) {
          const next = await single.run({
            orgId: 'org_a',
            code: `return ${i}`,
            inputs: {},
            steps: [],
            timeoutMs: 1000,
            contextKey: 'k',
          });
          expect(next).to.include({ outcome: 'ok', text: String(i), runner: first.runner });
        }
      } finally {
        await single.close();
      }
    });
  });

  describe('process layer, the language layer assumed broken', () => {
    let breached: SandboxPool;
    before(async () => {
      breached = new SandboxPool({ isolation: await testIsolation(), size: 1, breach: 'process', log: silentLog });
    });
    after(() => breached.close());

    it('the runner has an empty environment, its own unprivileged user, and no writes, reads, children or workers', async () => {
      const out = await runCode(
        breached,
        `
        const t = (f) => { try { f(); return 'allowed'; } catch (e) { return e.code || e.message; } };
        const req = process.mainModule.require;
        const fs = req('fs'), cp = req('child_process'), wt = req('worker_threads');
        return {
          env: Object.keys(process.env),
          uid: process.getuid(),
          gid: process.getgid(),
          groups: process.getgroups(),
          root: t(() => process.setuid(0)),
          write: t(() => fs.writeFileSync('/tmp/sandbox-escape-test', 'x')),
          spawn: t(() => cp.execSync('id')),
          worker: t(() => new wt.Worker('1', { eval: true })),
          readEtc: t(() => fs.readFileSync('/etc/passwd')),
          readService: t(() => fs.readFileSync(${JSON.stringify(new URL(import.meta.url).pathname)})),
        };`,
      );
      expect(out.status, out.result).to.equal('COMPLETE');
      const r = JSON.parse(out.result);
      expect(r.env).to.deep.equal([]);
      expect(r.uid).to.not.equal(0);
      expect(r.gid).to.not.equal(0);
      expect(r.groups).to.not.include(0);
      expect(r.root).to.equal('EPERM');
      for (const what of ['write', 'spawn', 'worker', 'readEtc', 'readService'])
        expect(r[what], what).to.equal('ERR_ACCESS_DENIED');
      // A root service gives each runner its own id from the block no account uses.
      if ((await testIsolation()).users) expect(r.uid).to.be.at.least(RUNNER_UID_BASE);
    });

    it("the runner's uid is checked from outside: it is the unprivileged one, never root", async () => {
      await runCode(breached, 'return 1');
      const tree = breached.trees().find((t) => t.orgId === 'org_test')!.pids;
      const uid = await uidOf(tree.at(-1)!);
      expect(uid).to.be.a('number').and.not.equal(0);
    });

    it('memory allocated outside any isolate is capped by the watchdog on the contained tree; the next step works', async () => {
      const tight = new SandboxPool({
        isolation: await testIsolation(),
        size: 1,
        breach: 'process',
        rssHeadroomMb: 64,
        log: silentLog,
      });
      try {
        const out = await runCode(
          tight,
          'const keep = []; for (;;) { keep.push(Buffer.alloc(16 * 1024 * 1024, 7)); await null; }',
          { step: { timeoutMs: 20_000 } },
        );
        expect(out, out.result).to.include({ status: 'FAILED', exitCode: 137 });
        expect(out.result).to.match(/resident memory \d+ MiB over the \d+ MiB ceiling/);
        expect((await runCode(tight, 'return "next"')).result).to.equal('next');
      } finally {
        await tight.close();
      }
    });

    it('code left running after a step returns is stopped by the time limit, not billed to the next step', async () => {
      const single = new SandboxPool({ isolation: await testIsolation(), size: 1, breach: 'process', log: silentLog });
      try {
        // Left behind in the runner's own realm: a busy loop on a timer, after the step returned.
        const left = await runCode(single, 'process.nextTick(() => { for (;;) {} }); return "returned"', {
          step: { timeoutMs: 500 },
        });
        expect(left.result).to.equal('returned');
        const started = Date.now();
        const next = await runCode(single, 'return "next"', { step: { timeoutMs: 500 } });
        // The blocked runner cannot answer: it is killed at the limit and the step fails as a timeout.
        expect(next.status).to.equal('TIMEOUT');
        expect(Date.now() - started).to.be.below(3000);
        expect((await runCode(single, 'return "after"')).result).to.equal('after');
      } finally {
        await single.close();
      }
    });
  });

  describe("operating-system layer alone (the language layer and Node's permission model assumed broken)", () => {
    let open: SandboxPool;
    let dir: string;
    before(async function () {
      if ((await testIsolation()).report.level !== 'namespaces') this.skip();
      open = new SandboxPool({ isolation: await testIsolation(), size: 1, breach: 'unrestricted', log: silentLog });
      dir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-host-'));
      chmodSync(dir, 0o777);
      writeFileSync(path.join(dir, 'secret.key'), 'host secret', { mode: 0o644 });
    });
    after(async () => {
      await open?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('files of the host are not in view and cannot be written, however readable and writable they are; /tmp is private', async () => {
      const out = await runCode(
        open,
        `
        const fs = process.mainModule.require('fs');
        const t = (f) => { try { return f(); } catch (e) { return e.code || e.message; } };
        return {
          read: t(() => fs.readFileSync(ctx.inputs.dir + '/secret.key', 'utf8')),
          write: t(() => { fs.writeFileSync(ctx.inputs.dir + '/escaped', 'x'); return 'written'; }),
          etc: t(() => fs.readdirSync('/etc').length),
          home: t(() => fs.readdirSync('/root').join(',')),
          checkout: t(() => fs.readdirSync(ctx.inputs.packageRoot).join(',')),
          hostNode: t(() => fs.statSync(ctx.inputs.hostNode).size),
          node: process.execPath,
          argv: process.argv.slice(0, 2).join(' '),
          tmp: t(() => { fs.writeFileSync('/tmp/inside', 'x'); return fs.readFileSync('/tmp/inside', 'utf8'); }),
          runner: t(() => fs.writeFileSync(process.argv[1], 'x')),
        };`,
        { inputs: { dir, packageRoot: PACKAGE_ROOT, hostNode: process.execPath } },
      );
      expect(out.status, out.result).to.equal('COMPLETE');
      const r = JSON.parse(out.result);
      expect(r.read).to.equal('ENOENT');
      expect(r.write).to.be.oneOf(['ENOENT', 'EROFS', 'EACCES']);
      expect(r.etc).to.equal('ENOENT');
      // Node, the runner and the addon are bound alone at neutral paths: wherever Node and the
      // package are installed (a home folder, the checkout), none of their folders is in view.
      expect(r.home).to.equal('ENOENT');
      expect(r.checkout).to.equal('ENOENT');
      if (!process.execPath.startsWith('/usr/')) expect(r.hostNode).to.equal('ENOENT');
      expect(r.node).to.equal('/opt/switchyard/node');
      expect(r.argv).to.equal('/opt/switchyard/node /opt/switchyard/src/engine/sandbox/runner.cjs');
      expect(r.tmp).to.equal('x');
      expect(r.runner).to.be.oneOf(['EROFS', 'EACCES']);
      expect(existsSync(path.join(dir, 'escaped'))).to.equal(false);
      expect(existsSync('/tmp/inside')).to.equal(false);
    });

    it('the private /tmp is bounded (its pages are host memory the watchdog cannot see)', async () => {
      const out = await runCode(
        open,
        `
        const fs = process.mainModule.require('fs');
        const chunk = Buffer.alloc(8 * 1024 * 1024, 1);
        let written = 0;
        try { for (let i = 0; i < 64; i++) { fs.writeFileSync('/tmp/fill-' + i, chunk); written += chunk.length; } } catch (e) { return { written, error: e.code }; }
        return { written, error: null };`,
        { step: { timeoutMs: 20_000 } },
      );
      expect(out.status, out.result).to.equal('COMPLETE');
      const r = JSON.parse(out.result);
      expect(r.error).to.equal('ENOSPC');
      expect(r.written).to.be.at.most(64 * 1024 * 1024);
    });

    it('children stay inside: unprivileged, in the namespaces, bounded in number, and gone with the runner', async () => {
      // A refused spawn may throw or fail later with an 'error' event, depending on the Node version.
      const out = await runCode(
        open,
        `
        const cp = process.mainModule.require('child_process');
        const id = cp.execFileSync('/usr/bin/id', ['-u']).toString().trim();
        const outcomes = await Promise.all(Array.from({ length: 500 }, () => new Promise((resolve) => {
          let child;
          try { child = cp.spawn('/usr/bin/sleep', ['30'], { stdio: 'ignore' }); } catch (e) { return resolve(e.code || e.message); }
          child.once('spawn', () => resolve('spawned'));
          child.once('error', (e) => resolve(e.code || e.message));
        })));
        return { id, spawned: outcomes.filter((o) => o === 'spawned').length, refused: [...new Set(outcomes.filter((o) => o !== 'spawned'))] };`,
        { step: { timeoutMs: 10_000 } },
      );
      // Either the step saw the process limit (EAGAIN) or the watchdog stopped its tree first.
      if (out.status === 'COMPLETE') {
        const r = JSON.parse(out.result);
        expect(r.id).to.not.equal('0');
        expect(r.spawned, out.result).to.be.below(64);
        expect(r.refused, out.result).to.include('EAGAIN');
      } else {
        expect(out.result).to.match(/started other processes|resident memory/);
      }
      // Children left by a step that completed go with its runner's tree at the watchdog's next look.
      const sleepers = () => spawnSync('pgrep', ['-f', '^/usr/bin/sleep 30$'], { encoding: 'utf8' }).stdout.trim();
      for (let i = 0; i < 60 && sleepers() !== ''; i++) await new Promise((r) => setTimeout(r, 50));
      expect(sleepers(), 'no sleeper of the runner is left').to.equal('');
      expect((await runCode(open, 'return "next"')).result).to.equal('next');
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

    it('a loop of microtasks left running after the step returned is under the same limit', async () => {
      const started = Date.now();
      const out = await runCode(pool, '(async () => { for (;;) await null; })(); return "returned"', {
        step: { timeoutMs: 300 },
      });
      expect(out).to.include({ status: 'TIMEOUT', exitCode: 124 });
      expect(Date.now() - started).to.be.below(300 + 1500);
      expect((await runCode(pool, 'return "next"')).result).to.equal('next');
    });

    it('a promise that never settles ends as TIMEOUT without holding the process', async () => {
      const started = Date.now();
      const out = await runCode(pool, 'await new Promise(() => {}); return 1', { step: { timeoutMs: 5000 } });
      expect(out).to.include({ status: 'TIMEOUT', exitCode: 124 });
      expect(out.result).to.match(/can never settle/);
      expect(Date.now() - started).to.be.below(5000);
    });

    it('Atomics.wait (a blocked thread) is interrupted too', async () => {
      const out = await runCode(pool, 'Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); return 1', {
        step: { timeoutMs: 300 },
      });
      expect(out).to.include({ status: 'TIMEOUT', exitCode: 124 });
      expect((await runCode(pool, 'return 2')).result).to.equal('2');
    });

    it('the parent kills a process that does not answer in time and replaces it', async () => {
      // The isolate's time limit normally answers first; a negative grace makes the parent's
      // clock win, so the kill path (the backstop for anything the limit cannot stop) is exercised.
      const backstop = new SandboxPool({
        isolation: await testIsolation(),
        size: 1,
        log: silentLog,
        killGraceMs: -250,
      });
      try {
        expect((await runCode(backstop, 'return 1')).status).to.equal('COMPLETE');
        const [tree] = backstop.trees().filter((t) => t.orgId === 'org_test');
        const started = Date.now();
        const out = await runCode(backstop, 'while (true) {}', { step: { timeoutMs: 1000 } });
        expect(out).to.include({ status: 'TIMEOUT', exitCode: 124 });
        expect(out.result).to.match(/no answer within 1000 ms/);
        expect(Date.now() - started).to.be.below(1000);
        for (const pid of tree!.pids) expect(await waitGone(pid), `pid ${pid}`).to.equal(true);
        expect((await runCode(backstop, 'return "replaced"')).result).to.equal('replaced');
      } finally {
        await backstop.close();
      }
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
      expect(await runCode(pool, 'return 1', { signal: already.signal })).to.include({
        status: 'TIMEOUT',
        exitCode: 124,
      });
      expect((await runCode(pool, 'return 3')).result).to.equal('3');
    });
  });

  describe('memory', () => {
    it('a heap bomb fails with 137, the service is unaffected and the same process serves the next step', async () => {
      const rssBefore = process.memoryUsage().rss;
      const out = await runCode(pool, 'const a = []; while (true) a.push(new Array(1e6).fill(1))', {
        step: { timeoutMs: 30_000 },
      });
      expect(out).to.include({ status: 'FAILED', resultType: 'error', exitCode: 137 });
      expect(out.result).to.match(/Memory limit exceeded: .*128 MB/);
      expect(process.memoryUsage().rss - rssBefore).to.be.below(64 * 1024 * 1024);
      expect((await runCode(pool, 'return "alive"')).result).to.equal('alive');
      const trees = pool.trees().filter((t) => t.orgId === 'org_test');
      for (const t of trees) for (const pid of t.pids) expect(alive(pid)).to.equal(true);
    });

    it('memoryMb sets the heap limit of the step', async () => {
      const code = 'const a = new Array(6e6).fill(1.5); return a.length';
      expect(await runCode(pool, code)).to.include({ status: 'COMPLETE', result: '6000000' });
      expect(await runCode(pool, code, { step: { memoryMb: 32 } })).to.include({ status: 'FAILED', exitCode: 137 });
      expect(await runCode(pool, 'return 1', { step: { memoryMb: 32 } })).to.include({ status: 'COMPLETE' });
    });

    it("typed arrays count against the step's memory limit", async () => {
      const out = await runCode(
        pool,
        'const keep = []; for (;;) { const b = new Uint8Array(16 * 1024 * 1024); b.fill(7); keep.push(b); }',
        { step: { timeoutMs: 20_000, memoryMb: 64 } },
      );
      expect(out.status).to.equal('FAILED');
      expect(out.result).to.match(/Array buffer allocation failed|Memory limit exceeded/);
      expect((await runCode(pool, 'return "alive"')).result).to.equal('alive');
    });
  });
});
