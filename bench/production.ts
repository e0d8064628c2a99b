/**
 * `npm run bench production`: the compiled service as `npm start` runs it (dist/main.js) against
 * the same source run through tsx (`node --import tsx src/main.ts`, how it ran before there was
 * a build), alternating, `BENCH_PRODUCTION_ROUNDS` rounds each (default 5), embedded defaults:
 * - cold start: from spawn to the first 200 of /readyz, on an empty DATA_DIR (the first start
 *   migrates and seeds the demo) and again on that DATA_DIR (a restart);
 * - idle memory of the process tree (the service and its children: code-step runners, their
 *   bubblewrap) 5 s after ready, from /proc/<pid>/smaps_rollup: the service's RSS plus each
 *   child's private pages (the pages a child shares are the Node binary and the libraries the
 *   service maps too, so they are counted once: the target is judged on this); beside it the plain
 *   sum of RSS, which counts those shared pages once per process, and the sum of PSS, which
 *   divides them among every process that maps them, other Node processes on the machine included.
 * The package's executable is measured alike: `switchyard start` (bin/switchyard.js of this
 * checkout, or the installed one that SWITCHYARD_CLI names, as scripts/package-check.sh sets it),
 * which becomes the same service process as `npm start`.
 * Targets: cold start ≤ 1.5 s; idle memory ≤ 150 MB. Medians are printed.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  NPM_START_FLAGS,
  ROOT,
  buildDist,
  freePort,
  processTree,
  spawnService,
  stopChild as stop,
  untilReady,
} from './lib.js';

const ROUNDS = Number(process.env.BENCH_PRODUCTION_ROUNDS ?? 5);
const IDLE_MS = 5_000;

type Variant = 'compiled' | 'tsx' | 'bin';

const BIN = process.env.SWITCHYARD_CLI ?? path.join(ROOT, 'bin/switchyard.js');
const ARGS: Record<Variant, string[]> = {
  compiled: [...NPM_START_FLAGS, path.join(ROOT, 'dist/main.js')],
  tsx: [...NPM_START_FLAGS, '--import', 'tsx', path.join(ROOT, 'src/main.ts')],
  // Under plain `node`, as its `#!/usr/bin/env node` line runs it.
  bin: [BIN, 'start'],
};

const start = (variant: Variant, dataDir: string, port: number): ChildProcess =>
  spawnService(ARGS[variant], dataDir, port);

function memoryMb(pid: number): { rss: number; pss: number; once: number; processes: number } {
  let rss = 0;
  let pss = 0;
  let once = 0;
  const pids = processTree(pid);
  for (const p of pids) {
    try {
      const rollup = readFileSync(`/proc/${p}/smaps_rollup`, 'utf8');
      const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(rollup)?.[1] ?? 0);
      rss += kb('Rss');
      pss += kb('Pss');
      // The service's whole RSS, and only what each child holds alone (its shared pages are, but
      // for a few, the Node binary and libraries the service maps too).
      once += p === pid ? kb('Rss') : kb('Private_Clean') + kb('Private_Dirty');
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return { rss: rss / 1024, pss: pss / 1024, once: once / 1024, processes: pids.length };
}

interface Sample {
  first: number;
  restart: number;
  rss: number;
  pss: number;
  once: number;
  processes: number;
}

async function sample(variant: Variant): Promise<Sample> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-production-'));
  try {
    const port = await freePort();
    let t0 = process.hrtime.bigint();
    let child = start(variant, dataDir, port);
    const first = await untilReady(port, child, t0);
    await stop(child);
    t0 = process.hrtime.bigint();
    child = start(variant, dataDir, port);
    const restart = await untilReady(port, child, t0);
    await new Promise((r) => setTimeout(r, IDLE_MS));
    const mem = memoryMb(child.pid!);
    await stop(child);
    return { first, restart, ...mem };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function run(): Promise<void> {
  buildDist();
  const samples: Record<Variant, Sample[]> = { compiled: [], tsx: [], bin: [] };
  for (let i = 0; i < ROUNDS; i++) {
    for (const v of ['tsx', 'compiled', 'bin'] as const) samples[v].push(await sample(v));
  }
  const row = (v: Variant) => {
    const s = samples[v];
    const m = (k: keyof Sample) => median(s.map((x) => x[k]));
    return {
      first: m('first'),
      restart: m('restart'),
      rss: m('rss'),
      pss: m('pss'),
      once: m('once'),
      processes: m('processes'),
    };
  };
  const c = row('compiled');
  const t = row('tsx');
  const b = row('bin');
  console.log(
    `\nproduction: cold start and idle memory, medians of ${ROUNDS} alternating rounds (Node ${process.version})`,
  );
  console.log(
    '| variant | first start to ready | restart to ready | idle memory, tree (shared once) | RSS sum | PSS sum | processes |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const [name, r] of [
    ['tsx (src/main.ts)', t],
    ['compiled (dist/main.js)', c],
    [`switchyard start (${path.relative(ROOT, BIN) || BIN})`, b],
  ] as const) {
    console.log(
      `| ${name} | ${r.first.toFixed(0)} ms | ${r.restart.toFixed(0)} ms | ${r.once.toFixed(0)} MB | ${r.rss.toFixed(0)} MB | ${r.pss.toFixed(0)} MB | ${r.processes} |`,
    );
  }
  console.log(
    `compiled / tsx: first start ${(c.first / t.first).toFixed(2)}, restart ${(c.restart / t.restart).toFixed(2)}, idle memory ${(c.once / t.once).toFixed(2)}`,
  );
  console.log(
    `switchyard start / compiled: first start ${(b.first / c.first).toFixed(2)}, restart ${(b.restart / c.restart).toFixed(2)}, idle memory ${(b.once / c.once).toFixed(2)}`,
  );
  console.log(
    `targets: cold start ≤ 1500 ms: ${Math.max(c.first, c.restart) <= 1500 ? 'met' : 'NOT met'}; idle memory ≤ 150 MB: ${c.once <= 150 ? 'met' : 'NOT met'}`,
  );
}
