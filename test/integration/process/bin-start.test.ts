/**
 * `switchyard start` (bin/switchyard.js, the executable of the installed package) runs the
 * service as `npm start` does: the process becomes `node --max-semi-space-size=2 dist/main.js`
 * with MALLOC_ARENA_MAX=2 and no source maps, so it idles in the memory of `npm start`'s service
 * (measured here beside it, on the same build); SIGTERM exits 0. The installed copy is checked the
 * same way by test/package/installed.check.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { freePort } from '../../helpers/server.js';
import { ROOT, processOf, realDist } from '../../helpers/process.js';

interface Started {
  child: ChildProcess;
  exited: Promise<number | null>;
  readyMs: number;
}

async function startService(args: string[], dataDir: string, arenas?: string): Promise<Started> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const t0 = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_OPTIONS: '',
      MALLOC_ARENA_MAX: arenas,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      PUBLIC_URL: base,
    },
    stdio: 'ignore',
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 30_000;
  for (;;) {
    expect(child.exitCode, 'the service exited before it was ready').to.equal(null);
    expect(Date.now() < deadline, 'ready within 30 s').to.equal(true);
    const status = await fetch(`${base}/readyz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, exited, readyMs: performance.now() - t0 };
}

describe('process: switchyard start runs the service as npm start does', function () {
  this.timeout(120_000);
  const dirs: string[] = [];
  const running: ChildProcess[] = [];
  after(() => {
    for (const c of running) c.kill('SIGKILL');
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const dataDir = () => {
    const d = mkdtempSync(path.join(os.tmpdir(), 'switchyard-bin-'));
    dirs.push(d);
    return d;
  };

  it("with npm start's flags, MALLOC_ARENA_MAX=2 and no source maps: it idles in npm start's memory and exits 0 on SIGTERM", async () => {
    const dist = realDist();
    const settle = () => new Promise((r) => setTimeout(r, 1_500));
    // npm start's service (its flags, MALLOC_ARENA_MAX=2), then the bin with neither, each on an empty DATA_DIR.
    const direct = await startService(['--max-semi-space-size=2', path.join(dist, 'main.js')], dataDir(), '2');
    running.push(direct.child);
    await settle();
    const base = processOf(direct.child.pid!);
    direct.child.kill('SIGTERM');
    expect(await direct.exited).to.equal(0);

    const bin = await startService([path.join(ROOT, 'bin/switchyard.js'), 'start'], dataDir());
    running.push(bin.child);
    await settle();
    const p = processOf(bin.child.pid!);
    expect(p.argv.slice(1), 'the process is the service itself').to.deep.equal([
      '--max-semi-space-size=2',
      path.join(dist, 'main.js'),
    ]);
    expect(p.arenas).to.equal('2');
    expect(
      p.rssMb,
      `switchyard start ${p.rssMb.toFixed(0)} MB against npm start's ${base.rssMb.toFixed(0)} MB (ready in ${bin.readyMs.toFixed(0)} against ${direct.readyMs.toFixed(0)} ms)`,
    ).to.be.below(base.rssMb * 1.15 + 10);
    bin.child.kill('SIGTERM');
    expect(await bin.exited).to.equal(0);
  });
});
