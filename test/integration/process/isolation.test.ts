/**
 * Code steps against a real service, each layer tested as if the one inside it had been broken
 * (README.md "Security model"):
 * - assume breach: the composition root's test-only assumeBreach.runnerProcess hands the contained runner's real
 *   `process` to a step, which then tries the network (Redis, PostgreSQL, the service's port, a
 *   listener of the test, the PostgreSQL Unix socket), signals (the service, a sleeper), the
 *   service's secret key, writes outside its tmpfs, children and memory past its limit; every
 *   attempt fails and nothing else is hurt;
 * - across organisations: what an organisation B step leaves in its realm or its process is
 *   never visible to organisation A's next step, and A's inputs never reach B's results, files
 *   or logs; A and B never share a runner.
 * The operating-system layer must be in force (CI runs with CODE_ISOLATION=strict); on a machine
 * without it, the breach tests are skipped and say why.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { probeIsolation, sampleTree } from '../../../src/containment/index.js';
import {
  startTestServer,
  startBreachedServer,
  createTestOrg,
  call,
  freePort,
  type TestServer,
  type TestOrg,
} from '../../helpers/server.js';
import { startServer, waitReady } from '../../helpers/process.js';
import { breachAttempts, MUST_FAIL, WORKED } from '../../helpers/breach.js';
import { deploy, code } from '../../helpers/runs.js';

const PG_SOCKET = '/var/run/postgresql/.s.PGSQL.5432';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Runs the workflow synchronously and answers its first step's result (parsed when JSON) and status. */
async function runSync(
  server: TestServer,
  org: TestOrg,
  triggerId: string,
  inputs: Record<string, unknown>,
): Promise<{ status: number; body: any }> {
  const res = await call(server.baseUrl, 'POST', `/ext/triggers/${triggerId}`, {
    headers: { 'X-API-KEY': org.apiKey, 'x-api-wait': 'true' },
    body: inputs,
  });
  return { status: res.status, body: res.body };
}

function stepResult(body: any, index = 0): { status: string; result: any; raw: string } {
  const entry = body.results.find((r: any) => r.stepIndex === index);
  const raw: string = entry.result.result;
  let result: any = raw;
  try {
    result = JSON.parse(raw);
  } catch {
    // plain text
  }
  return { status: entry.exitCode === 0 ? 'COMPLETE' : 'FAILED', result, raw };
}

describe('code isolation against a real service: assume breach, across organisations', function () {
  this.timeout(120_000);
  let namespaces = false;
  let why = '';

  before(async () => {
    const isolation = await probeIsolation({ mode: process.env.CODE_ISOLATION === 'strict' ? 'strict' : 'auto' });
    namespaces = isolation.report.level === 'namespaces';
    why = isolation.report.missing.join('; ');
  });

  describe("assume breach: a step holding the runner's real process", () => {
    let server: TestServer;
    let org: TestOrg;
    let listener: net.Server;
    let listenerHits = 0;
    let sleeper: ChildProcess;

    before(async function () {
      if (!namespaces) {
        this.skip(); // the operating-system layer is not in force here: see `why`
      }
      listener = net.createServer((s) => {
        listenerHits += 1;
        s.destroy();
      });
      await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
      sleeper = spawn('sleep', ['300'], { stdio: 'ignore' });
      server = await startBreachedServer('sqlite', { runnerProcess: true }, { CODE_ISOLATION: 'strict' });
      org = await createTestOrg(server);
    });
    after(async () => {
      if (!namespaces) return;
      sleeper?.kill('SIGKILL');
      listener?.close();
      await server?.close();
    });

    it('reaches no network, socket, process, secret or file of the host, cannot write or spawn, and is not root', async function () {
      if (!namespaces) this.skip();
      const wf = await deploy(server, org, {
        name: 'breach',
        steps: [code('attempts', breachAttempts('ctx.inputs'), { timeoutMs: 30_000 })],
      });
      const dataDir = server.app.services.config.dataDir;
      expect(existsSync(path.join(dataDir, 'secret.key')), 'the service has a secret key file').to.equal(true);
      const inputs = {
        servicePort: Number(new URL(server.baseUrl).port),
        listenerPort: (listener.address() as net.AddressInfo).port,
        pgSocket: PG_SOCKET,
        servicePid: process.pid,
        sleeperPid: sleeper.pid,
        dataDir,
      };
      const res = await runSync(server, org, wf.apiTriggerId, inputs);
      expect(res.status).to.equal(200);
      const { status, result: r, raw } = stepResult(res.body);
      if (process.env.SHOW_BREACH) process.stderr.write(`${raw}\n`);
      expect(status, raw).to.equal('COMPLETE');
      for (const what of MUST_FAIL) expect(WORKED, `${what}: ${raw}`).to.not.include(r[what]);
      expect(listenerHits, 'connections the test listener received').to.equal(0);
      // The signals failed for want of the processes (PID namespace), not by chance.
      expect([r.killService, r.killSleeper]).to.deep.equal(['ESRCH', 'ESRCH']);
      expect(sleeper.exitCode, 'the sleeper is alive').to.equal(null);
      expect(r.uid).to.not.equal(0);
      expect(r.env).to.deep.equal([]);
      expect(existsSync(path.join(dataDir, 'escaped'))).to.equal(false);
      // The service answered the call (it is alive) and still does.
      expect((await call(server.baseUrl, 'GET', '/healthz')).status).to.equal(200);
    });

    it('memory past the limit fails the step with its memory error; nothing else is hurt and the next run works', async function () {
      if (!namespaces) this.skip();
      const bomb = await deploy(server, org, {
        name: 'bomb',
        steps: [
          code('bomb', 'const keep = []; for (;;) { keep.push(Buffer.alloc(32 * 1024 * 1024, 1)); await null; }', {
            timeoutMs: 30_000,
          }),
        ],
      });
      const fine = await deploy(server, org, { name: 'fine', steps: [code('fine', 'return "still here"')] });
      const rssBefore = process.memoryUsage().rss;
      const res = await runSync(server, org, bomb.apiTriggerId, {});
      expect(res.status).to.equal(200);
      const { status, raw } = stepResult(res.body);
      expect(status).to.equal('FAILED');
      expect(raw).to.match(/Memory limit exceeded: resident memory \d+ MiB over the \d+ MiB ceiling/);
      expect(process.memoryUsage().rss - rssBefore).to.be.below(128 * 1024 * 1024);
      expect(sleeper.exitCode).to.equal(null);
      expect(stepResult((await runSync(server, org, fine.apiTriggerId, {})).body).result).to.equal('still here');
    });
  });

  describe('across organisations', () => {
    for (const breach of [false, true]) {
      describe(
        breach ? 'with the language layer assumed broken (assumeBreach.runnerProcess)' : 'with every layer',
        () => {
          let server: TestServer;
          let a: TestOrg;
          let b: TestOrg;

          before(async function () {
            if (breach && !namespaces) this.skip();
            server = breach
              ? await startBreachedServer('sqlite', { runnerProcess: true })
              : await startTestServer('sqlite');
            a = await createTestOrg(server, 'Org A');
            b = await createTestOrg(server, 'Org B');
          });
          after(async () => {
            await server?.close();
          });

          it("B's leftovers are invisible to A's next step; A's inputs reach none of B's results, files or logs; they never share a runner", async function () {
            if (breach && !namespaces) this.skip();
            const secret = 'sk_live_' + 'a'.repeat(24);
            // B plants canaries in its realm and, when it holds the runner's process, hooks it to capture what comes next.
            const plant = breach
              ? `globalThis.canary = 'B'; Object.prototype.canaryB = 'B';
               const seen = process.__seen || (process.__seen = []);
               const emit = process.emit; process.emit = function (...args) { try { seen.push(JSON.stringify(args[1])); } catch {} return emit.apply(this, args); };
               process.on('message', (m) => { try { seen.push(JSON.stringify(m)); } catch {} });
               const send = process.send; process.send = function (m, ...rest) { try { seen.push(JSON.stringify(m)); } catch {} return send.call(this, m, ...rest); };
               ctx.log('captured so far: ' + seen.join(' '));
               ctx.files.write('captured.txt', seen.join('\\n') || 'nothing');
               return { runner: JSON.parse(process.argv[process.argv.length - 1]).uid, captured: seen.join(' ') };`
              : `globalThis.canary = 'B'; Object.prototype.canaryB = 'B'; Array.prototype.canaryB = 'B';
               ctx.log('b ran'); return { runner: null, captured: '' };`;
            const look = breach
              ? `return { canary: typeof canary, proto: ({}).canaryB ?? null, arr: [].canaryB ?? null, hooked: process.__seen !== undefined, emitPatched: process.emit.toString().includes('seen'), runner: JSON.parse(process.argv[process.argv.length - 1]).uid, secret: ctx.inputs.secret.length };`
              : `return { canary: typeof canary, proto: ({}).canaryB ?? null, arr: [].canaryB ?? null, secret: ctx.inputs.secret.length };`;
            const wfB = await deploy(server, b, { name: 'plant', steps: [code('plant', plant)] });
            const wfA = await deploy(server, a, { name: 'look', steps: [code('look', look)] });
            const first = stepResult((await runSync(server, b, wfB.apiTriggerId, {})).body);
            expect(first.status, first.raw).to.equal('COMPLETE');
            const seenByA = stepResult((await runSync(server, a, wfA.apiTriggerId, { secret })).body);
            expect(seenByA.status, seenByA.raw).to.equal('COMPLETE');
            expect(seenByA.result).to.include({ canary: 'undefined', proto: null, arr: null, secret: secret.length });
            if (breach) {
              expect(seenByA.result).to.include({ hooked: false, emitPatched: false });
              expect(seenByA.result.runner, 'A and B ran on different runners').to.not.equal(first.result.runner);
            }
            const again = await runSync(server, b, wfB.apiTriggerId, {});
            const second = stepResult(again.body);
            expect(second.status, second.raw).to.equal('COMPLETE');
            if (breach) expect(second.result.runner, 'B kept its own runner').to.equal(first.result.runner);
            // B's results, files and logs hold nothing of A's inputs.
            expect(JSON.stringify(again.body)).to.not.include(secret);
            const runId = again.body.id;
            const files = await call(
              server.baseUrl,
              'GET',
              `/ext/webhook/${b.apiKey}/runs/${wfB.automationId}/${runId}/results`,
            );
            for (const entry of files.body.results) {
              for (const file of Object.values(entry.resultUrls ?? {}) as Array<{ url: string }>) {
                expect(await (await fetch(file.url)).text()).to.not.include(secret);
              }
            }
            const stepsOfB = await server.app.services.db('run_steps').where({ run_id: runId });
            expect(JSON.stringify(stepsOfB)).to.not.include(secret);
          });
        },
      );
    }
  });

  it('a service killed with SIGKILL leaves no runner behind', async function () {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-isolation-'));
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const service = startServer(dataDir, port);
    try {
      await waitReady(base);
      const b = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8'));
      const run = await call(base, 'POST', `/ext/triggers/${b.demo.apiTriggerId}`, {
        headers: { 'X-API-KEY': b.apiKey, 'x-api-wait': 'true' },
        body: { name: 'Ada' },
      });
      expect(run.status, run.text).to.equal(200);
      const tree = (await sampleTree(service.pid!)).pids.filter((pid) => pid !== service.pid);
      expect(tree.length, 'runner processes below the service').to.be.greaterThan(0);
      const exited = new Promise((r) => service.once('exit', r));
      service.kill('SIGKILL');
      await exited;
      const deadline = Date.now() + 5000;
      let left = tree.filter(alive);
      while (left.length > 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
        left = tree.filter(alive);
      }
      expect(left, 'processes of the killed service still alive').to.deep.equal([]);
    } finally {
      service.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('says why when the operating-system layer is not in force here', function () {
    if (namespaces) this.skip();
    expect(why).to.match(/bubblewrap|namespace/);
  });
});
