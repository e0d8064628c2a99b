/**
 * The installed package (scripts/package-check.sh installs the `npm pack` tarball with
 * production dependencies only into a temporary prefix and names its executable in
 * SWITCHYARD_CLI): `switchyard start` serves /readyz and runs the demo workflow synchronously;
 * `switchyard start` also serves the web console at /console;
 * `switchyard start` is the service process as `npm start` runs it (its Node flags and
 * MALLOC_ARENA_MAX=2); `switchyard start` that only accepts triggers beside `switchyard worker` (Redis) runs it
 * through the worker. Not part of `npm test`: test/package/mocharc.cjs lists it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { call, freePort } from '../helpers/server.js';
import { dropRedisKeys } from '../helpers/store.js';
import { processOf } from '../helpers/process.js';

const CLI = process.env.SWITCHYARD_CLI;
const VERBS_LOG = process.env.SWITCHYARD_CLI_VERBS;
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

interface Proc {
  child: ChildProcess;
  output: () => string;
}

/** `switchyard <verb>` of the installed copy, in a folder outside the checkout. */
function run(verb: 'start' | 'worker', env: Record<string, string>, cwd: string): Proc {
  if (VERBS_LOG) appendFileSync(VERBS_LOG, `${JSON.stringify([verb])}\n`);
  let out = '';
  const child = spawn(CLI!, [verb], { cwd, env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: 'pipe' });
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { child, output: () => out };
}

async function ready(base: string, proc: Proc): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null) throw new Error(`the installed service exited:\n${proc.output()}`);
    try {
      if ((await fetch(`${base}/readyz`)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the installed service did not become ready:\n${proc.output()}`);
}

async function stop(proc: Proc | undefined): Promise<number | null> {
  if (!proc || proc.child.exitCode !== null) return proc?.child.exitCode ?? null;
  const exited = new Promise<number | null>((resolve) => proc.child.once('exit', (code) => resolve(code)));
  proc.child.kill('SIGTERM');
  return exited;
}

describe('the installed package (npm pack, npm install -g --omit=dev)', function () {
  this.timeout(60_000);
  let home: string;
  const procs: Proc[] = [];

  before(function () {
    if (!CLI)
      throw new Error('SWITCHYARD_CLI must name the installed switchyard executable (scripts/package-check.sh)');
    home = mkdtempSync(path.join(os.tmpdir(), 'switchyard-installed-'));
  });

  after(async () => {
    for (const p of procs) p.child.kill('SIGKILL');
    if (home) rmSync(home, { recursive: true, force: true });
  });

  const demoCall = (base: string, b: { apiKey: string; demo: { apiTriggerId: string } }, name: string) =>
    call(base, 'POST', `/ext/triggers/${b.demo.apiTriggerId}`, {
      headers: { 'x-api-key': b.apiKey, 'x-api-wait': 'true' },
      body: { name },
    });

  it('switchyard start: seeds the demo, answers /readyz, runs the demo workflow synchronously, exits 0 on SIGTERM', async () => {
    const dataDir = path.join(home, 'single');
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const proc = run('start', { DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', PUBLIC_URL: base }, home);
    procs.push(proc);
    await ready(base, proc);
    // The executable became the service as `npm start` runs it: its flags, MALLOC_ARENA_MAX, no CLI around it.
    const service = processOf(proc.child.pid!);
    expect(service.argv.slice(1, -1)).to.deep.equal(['--max-semi-space-size=2']);
    expect(service.argv.at(-1)).to.match(/\/dist\/main\.js$/);
    expect(service.arenas).to.equal('2');
    const readiness = await call(base, 'GET', '/readyz');
    expect(readiness.body.status).to.equal('ready');
    const b = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8'));
    const res = await demoCall(base, b, 'Installed');
    expect(res.status, res.text).to.equal(200);
    expect(res.body.status, res.text).to.equal('COMPLETE');
    expect(res.body.results[0].result.result).to.equal('Hello, Installed!');
    // The web console ships in the package: the page of a client-side route and each of its assets.
    const page = await fetch(`${base}/console/runs`);
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-security-policy')).to.include("default-src 'self'");
    const html = await page.text();
    const assets = [...html.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets, 'the assets the console page names').to.have.length.greaterThan(1);
    for (const asset of assets) {
      const res = await fetch(`${base}${asset}`);
      expect(res.status, asset).to.equal(200);
      expect((await res.arrayBuffer()).byteLength, asset).to.be.greaterThan(0);
    }
    expect(await stop(proc)).to.equal(0);
  });

  it('switchyard start (accepting triggers only) beside switchyard worker: the worker runs the demo workflow', async () => {
    const dataDir = path.join(home, 'scaled');
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const prefix = `sy-installed-${process.pid}-${Date.now()}`;
    const shared = { DATA_DIR: dataDir, REDIS_URL, REDIS_PREFIX: prefix };
    const server = run(
      'start',
      { ...shared, PORT: String(port), HOST: '127.0.0.1', PUBLIC_URL: base, RUN_CONCURRENCY: '0' },
      home,
    );
    procs.push(server);
    await ready(base, server);
    const worker = run('worker', { ...shared, RUN_CONCURRENCY: '2' }, home);
    procs.push(worker);
    try {
      const b = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8'));
      const res = await demoCall(base, b, 'Worker');
      expect(res.status, `${res.text}\n${worker.output()}`).to.equal(200);
      expect(res.body.status, res.text).to.equal('COMPLETE');
      expect(res.body.results[0].result.result).to.equal('Hello, Worker!');
      expect(worker.output()).to.include('switchyard worker started');
      expect(await stop(worker)).to.equal(0);
      expect(await stop(server)).to.equal(0);
    } finally {
      await dropRedisKeys(REDIS_URL, prefix);
    }
  });
});
