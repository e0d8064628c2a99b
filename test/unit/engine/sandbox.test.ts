/**
 * Code steps through executeStep with real sandbox processes: results and result types,
 * ctx.inputs / ctx.steps, files.write and its limits, ctx.log, errors (src/engine/README.md).
 */
import { expect } from 'chai';
import { SandboxPool } from '../../../src/engine/sandbox/pool.js';
import type { PriorStep } from '../../../src/engine/execute-step.js';
import { runCode, silentLog, testIsolation } from './sandbox-helpers.js';

describe('engine sandbox: code steps', function () {
  this.timeout(30_000);
  let pool: SandboxPool;

  before(async () => {
    pool = new SandboxPool({ isolation: await testIsolation(), size: 2, log: silentLog });
    await pool.start();
  });
  after(() => pool.close());

  describe('return values', () => {
    it('a string is plaintext by default', async () => {
      const out = await runCode(pool, 'return "hello"');
      expect(out).to.include({ status: 'COMPLETE', resultType: 'plaintext', result: 'hello', exitCode: 0 });
      expect(out.durationMs).to.be.a('number').at.least(0);
    });

    it('a string is markdown when the step says so', async () => {
      const out = await runCode(pool, 'return "# Title"', { step: { resultType: 'markdown' } });
      expect(out).to.include({ status: 'COMPLETE', resultType: 'markdown', result: '# Title' });
    });

    it('a string with resultType json must be JSON text', async () => {
      const ok = await runCode(pool, 'return JSON.stringify({a: 1})', { step: { resultType: 'json' } });
      expect(ok).to.include({ status: 'COMPLETE', resultType: 'json', result: '{"a":1}' });
      const bad = await runCode(pool, 'return "not json"', { step: { resultType: 'json' } });
      expect(bad).to.include({ status: 'FAILED', resultType: 'error', exitCode: 1 });
      expect(bad.result).to.match(/not valid JSON/);
    });

    const jsonCases: Array<[string, string]> = [
      ['return {a: [1, "x"], b: null}', '{"a":[1,"x"],"b":null}'],
      ['return [1, 2, 3]', '[1,2,3]'],
      ['return 42', '42'],
      ['return 1.5', '1.5'],
      ['return false', 'false'],
      ['return null', 'null'],
    ];
    for (const [code, text] of jsonCases) {
      it(`\`${code}\` is json ${text}`, async () => {
        const out = await runCode(pool, code);
        expect(out).to.include({ status: 'COMPLETE', resultType: 'json', result: text, exitCode: 0 });
      });
    }

    it('an object is json even when the step declares markdown', async () => {
      const out = await runCode(pool, 'return {a: 1}', { step: { resultType: 'markdown' } });
      expect(out).to.include({ resultType: 'json', result: '{"a":1}' });
    });

    it('undefined is an empty plaintext result', async () => {
      const out = await runCode(pool, 'const x = 1;');
      expect(out).to.include({ status: 'COMPLETE', resultType: 'plaintext', result: '', exitCode: 0 });
    });

    it('async code is awaited', async () => {
      const out = await runCode(pool, 'const v = await Promise.resolve(20); await null; return v + 1');
      expect(out).to.include({ resultType: 'json', result: '21' });
    });

    it('a value JSON cannot carry fails the step', async () => {
      const out = await runCode(pool, 'return 10n');
      expect(out).to.include({ status: 'FAILED', exitCode: 1 });
      expect(out.result).to.match(/BigInt/);
      const fn = await runCode(pool, 'return () => 1');
      expect(fn).to.include({ status: 'FAILED', exitCode: 1 });
      expect(fn.result).to.match(/cannot be serialised/);
    });

    it('a result over 1 MiB fails with a clear message', async () => {
      const out = await runCode(pool, 'return "x".repeat(1024 * 1024 + 1)');
      expect(out).to.include({ status: 'FAILED', resultType: 'error', exitCode: 1 });
      expect(out.result).to.match(/result is 1048577 bytes; the limit is 1048576 bytes/);
      const fits = await runCode(pool, 'return "x".repeat(1024 * 1024)');
      expect(fits).to.include({ status: 'COMPLETE' });
      expect(fits.result).to.have.length(1024 * 1024);
    });
  });

  describe('ctx', () => {
    it('sees the run inputs, attachments included', async () => {
      const inputs = {
        name: 'Ann',
        n: 2,
        attachments: [{ filename: 'a.pdf', contentType: 'application/pdf', size: 3, url: 'https://files/x' }],
      };
      const out = await runCode(
        pool,
        'return `${ctx.inputs.name}:${ctx.inputs.n * 2}:${ctx.inputs.attachments[0].filename}`',
        { inputs },
      );
      expect(out.result).to.equal('Ann:4:a.pdf');
    });

    it('sees earlier steps at their step index, json results parsed', async () => {
      const steps: PriorStep[] = [
        {
          stepIndex: 1,
          name: 'second',
          status: 'COMPLETE',
          resultType: 'json',
          result: { items: [{ price: 2 }, { price: 3 }] },
          exitCode: 0,
        },
        { stepIndex: 0, name: 'first', status: 'COMPLETE', resultType: 'plaintext', result: 'hi', exitCode: 0 },
      ];
      const out = await runCode(
        pool,
        'return [ctx.steps[0].result, ctx.steps[1].result.items.reduce((s, i) => s + i.price, 0), ctx.steps[1].name]',
        { steps },
      );
      expect(JSON.parse(out.result)).to.deep.equal(['hi', 5, 'second']);
    });

    it('ctx.log lines come back in order, values formatted', async () => {
      const out = await runCode(pool, 'ctx.log("start", 1, {a: [1]}, null); ctx.log(); ctx.log(undefined); return 1');
      expect(out.logs).to.deep.equal(['start 1 {"a":[1]} null', '', 'undefined']);
    });

    it('ctx.log keeps the lines of a failing step', async () => {
      const out = await runCode(pool, 'ctx.log("before"); throw new Error("x")');
      expect(out.status).to.equal('FAILED');
      expect(out.logs).to.deep.equal(['before']);
    });

    it('ctx.log is bounded to 1000 lines plus one marker', async () => {
      const out = await runCode(pool, 'for (let i = 0; i < 5000; i++) ctx.log("line", i); return "done"');
      expect(out.status).to.equal('COMPLETE');
      expect(out.logs).to.have.length(1001);
      expect(out.logs[999]).to.equal('line 999');
      expect(out.logs[1000]).to.match(/^\[log truncated/);
    });

    it('ctx.log is bounded to 64 KiB', async () => {
      const out = await runCode(pool, 'for (let i = 0; i < 100; i++) ctx.log("y".repeat(4000)); return 1');
      const bytes = out.logs.reduce((n, l) => n + Buffer.byteLength(l), 0);
      expect(bytes).to.be.at.most(64 * 1024 + 200);
      expect(out.logs.at(-1)).to.match(/^\[log truncated/);
    });

    it('each execution gets a fresh context: globals do not survive', async () => {
      const code =
        'globalThis.counter = (globalThis.counter || 0) + 1; Object.prototype.polluted = true; return globalThis.counter';
      const results = [];
      for (let i = 0; i < 6; i++) results.push((await runCode(pool, code)).result);
      expect(results).to.deep.equal(['1', '1', '1', '1', '1', '1']);
      const clean = await runCode(pool, 'return ({}).polluted === undefined');
      expect(clean.result).to.equal('true');
    });
  });

  describe('files.write', () => {
    it('writes strings, bytes and JSON with sensible MIME types', async () => {
      const out = await runCode(
        pool,
        [
          'ctx.files.write("report.md", "# Hi\\n", "text/markdown");',
          'ctx.files.write("data.bin", new Uint8Array([0, 1, 2, 255]));',
          'ctx.files.write("view.bin", new Uint8Array([9, 8, 7, 6, 5]).subarray(1, 3));',
          'ctx.files.write("buffer.bin", new Uint16Array([1]).buffer);',
          'ctx.files.write("dv.bin", new DataView(new Uint8Array([4, 5, 6]).buffer, 1));',
          'ctx.files.write("obj", {a: 1});',
          'ctx.files.write("notes.txt", "plain");',
          'ctx.files.write("page.html", "<p>x</p>");',
          'return "ok"',
        ].join('\n'),
      );
      expect(out.status, out.result).to.equal('COMPLETE');
      const files = Object.fromEntries(out.files.map((f) => [f.fileName, f]));
      expect(Object.keys(files)).to.have.members([
        'report.md',
        'data.bin',
        'view.bin',
        'buffer.bin',
        'dv.bin',
        'obj',
        'notes.txt',
        'page.html',
      ]);
      expect(files['report.md']).to.deep.include({ mimeType: 'text/markdown' });
      expect(files['report.md']!.data.toString()).to.equal('# Hi\n');
      expect([...files['data.bin']!.data]).to.deep.equal([0, 1, 2, 255]);
      expect(files['data.bin']!.mimeType).to.equal('application/octet-stream');
      expect([...files['view.bin']!.data]).to.deep.equal([8, 7]);
      expect([...files['buffer.bin']!.data]).to.deep.equal([1, 0]);
      expect([...files['dv.bin']!.data]).to.deep.equal([5, 6]);
      expect(files.obj!.mimeType).to.equal('application/json');
      expect(JSON.parse(files.obj!.data.toString())).to.deep.equal({ a: 1 });
      expect(files['notes.txt']!.mimeType).to.equal('text/plain');
      expect(files['page.html']!.mimeType).to.equal('text/html');
      expect(Buffer.isBuffer(files['data.bin']!.data)).to.equal(true);
    });

    it('sanitises names: no path parts, no control characters, empty becomes "file"', async () => {
      const out = await runCode(
        pool,
        [
          'ctx.files.write("../../etc/passwd", "a");',
          'ctx.files.write("..\\\\..\\\\win.ini", "b");',
          'ctx.files.write("bad\\u0000na\\u0007me.txt", "c");',
          'ctx.files.write("", "d");',
          'ctx.files.write("..", "e");',
          'ctx.files.write("a<b>|c?.txt", "f");',
        ].join('\n'),
      );
      const names = out.files.map((f) => f.fileName);
      expect(names).to.include.members(['passwd', 'win.ini', 'badname.txt', 'file', 'a_b_c_.txt']);
      for (const n of names) expect(n).to.not.match(/[/\\\u0000-\u001f]/);
    });

    it('writing the same name again replaces the file', async () => {
      const out = await runCode(pool, 'ctx.files.write("a.txt", "one"); ctx.files.write("a.txt", "two"); return 1');
      expect(out.files).to.have.length(1);
      expect(out.files[0]!.data.toString()).to.equal('two');
    });

    it('at most 20 files: the 21st write throws inside the step', async () => {
      const out = await runCode(pool, 'for (let i = 0; i < 21; i++) ctx.files.write(`f${i}.txt`, "x"); return 1');
      expect(out).to.include({ status: 'FAILED', exitCode: 1 });
      expect(out.result).to.match(/at most 20 files/);
      const caught = await runCode(
        pool,
        'let err; for (let i = 0; i < 21; i++) { try { ctx.files.write(`f${i}.txt`, "x") } catch (e) { err = e.message } } return err',
      );
      expect(caught.status).to.equal('COMPLETE');
      expect(caught.files).to.have.length(20);
      expect(caught.result).to.match(/at most 20 files/);
    });

    it('at most 25 MiB per file', async () => {
      const out = await runCode(pool, 'ctx.files.write("big.bin", new Uint8Array(25 * 1024 * 1024 + 1)); return 1');
      expect(out).to.include({ status: 'FAILED', exitCode: 1 });
      expect(out.result).to.match(/limit is 26214400 bytes per file/);
      const fits = await runCode(pool, 'ctx.files.write("ok.bin", new Uint8Array(25 * 1024 * 1024)); return 1');
      expect(fits.status, fits.result).to.equal('COMPLETE');
      expect(fits.files[0]!.data.length).to.equal(25 * 1024 * 1024);
    });

    it('at most 100 MiB of files per step (checked with small limits)', async () => {
      const small = new SandboxPool({
        isolation: await testIsolation(),
        size: 1,
        log: silentLog,
        limits: { maxFileBytes: 1000, maxTotalFileBytes: 2500 },
      });
      try {
        const out = await runCode(
          small,
          'for (let i = 0; i < 3; i++) ctx.files.write(`f${i}`, new Uint8Array(1000)); return 1',
        );
        expect(out).to.include({ status: 'FAILED', exitCode: 1 });
        expect(out.result).to.match(/total at most 2500 bytes/);
        const two = await runCode(
          small,
          'for (let i = 0; i < 2; i++) ctx.files.write(`f${i}`, new Uint8Array(1000)); return 1',
        );
        expect(two.status).to.equal('COMPLETE');
      } finally {
        await small.close();
      }
    });

    it('rejects data that is neither text, bytes nor JSON', async () => {
      const out = await runCode(pool, 'ctx.files.write("x", undefined)');
      expect(out).to.include({ status: 'FAILED', exitCode: 1 });
      expect(out.result).to.match(/files\.write: data must be/);
    });
  });

  describe('errors', () => {
    it('a thrown error fails the step with exit code 1, the message and only the step frames', async () => {
      const out = await runCode(pool, 'function inner() { throw new TypeError("boom") }\ninner()');
      expect(out).to.include({ status: 'FAILED', resultType: 'error', exitCode: 1 });
      expect(out.result.split('\n')[0]).to.equal('TypeError: boom');
      expect(out.result).to.match(/at inner \(step\.js:1:\d+\)/);
      expect(out.result).to.match(/step\.js:2:\d+/);
      expect(out.result).to.not.match(/runner\.cjs|sandbox-setup|node:|switchyard|\/work\//);
    });

    it('a huge error message is cut to 64 KiB', async () => {
      const out = await runCode(pool, 'const e = new Error("x"); e.stack = "y".repeat(5e6); throw e');
      expect(out).to.include({ status: 'FAILED', exitCode: 1 });
      expect(out.result.length).to.be.within(60_000, 66_000);
    });

    it('a thrown non-error value is reported', async () => {
      const out = await runCode(pool, 'throw "plain string"');
      expect(out).to.include({ status: 'FAILED', exitCode: 1, result: 'Uncaught plain string' });
    });

    it('a rejected await fails the step', async () => {
      const out = await runCode(pool, 'await Promise.reject(new RangeError("later"))');
      expect(out).to.include({ status: 'FAILED', exitCode: 1 });
      expect(out.result).to.match(/^RangeError: later/);
    });

    it('a syntax error fails the step as invalid (exit code 2) with the line', async () => {
      const out = await runCode(pool, 'const a = 1;\nconst = 2;');
      expect(out).to.include({ status: 'FAILED', resultType: 'error', exitCode: 2 });
      expect(out.result).to.match(/does not compile: SyntaxError: .*\(line 2\)/);
    });

    it('an invalid step definition fails with exit code 2', async () => {
      expect(await runCode(pool, '')).to.include({ status: 'FAILED', exitCode: 2 });
      expect(await runCode(pool, 'return 1', { step: { timeoutMs: 0 } })).to.include({ status: 'FAILED', exitCode: 2 });
      expect(await runCode(pool, 'return 1', { step: { memoryMb: 4096 } })).to.include({
        status: 'FAILED',
        exitCode: 2,
      });
    });
  });
});
