/**
 * Server processes for process tests: the service on loopback over a DATA_DIR, its readiness
 * and a token from its bootstrap.json; the CLI as a child process.
 * The processes run the compiled build of our source (scripts/build.mjs), built once per test
 * process into .tmp/test-bundles/<pid>, so a test always runs the source it sees. The real
 * entries, `dist/` as `npm start` and bin/switchyard.js run it (`realDist`), are started by their
 * own tests (process/start.test.ts, process/cli.test.ts).
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { call } from './server.js';

const runFile = promisify(execFile);

export const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

const BUNDLES = path.join(ROOT, '.tmp/test-bundles');
let bundleDir: string | undefined;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The build of `src/main.ts` (main), `src/worker.ts` (worker) or `src/cli/main.ts` (cli), made on first use in this process. */
export function bundled(entry: 'main' | 'worker' | 'cli'): string {
  if (!bundleDir) {
    mkdirSync(BUNDLES, { recursive: true });
    // Bundles of test processes that are gone (killed before their exit hook ran).
    for (const name of readdirSync(BUNDLES))
      if (/^\d+$/.test(name) && !alive(Number(name)))
        rmSync(path.join(BUNDLES, name), { recursive: true, force: true });
    const dir = path.join(BUNDLES, String(process.pid));
    execFileSync(process.execPath, [path.join(ROOT, 'scripts/build.mjs'), path.relative(ROOT, dir)], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    bundleDir = dir;
  }
  const file = path.join(bundleDir, `${entry}.js`);
  if (!existsSync(file)) throw new Error(`the test build ${file} is missing`);
  return file;
}

let distChecked = false;

/** The newest modification time under a folder (ms). */
function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) latest = Math.max(latest, statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return latest;
}

/**
 * `dist/`, the build `npm start` and bin/switchyard.js run. `npm test` builds it first (pretest);
 * a test process that finds it older than src/ (mocha run directly after an edit) builds it again,
 * one process at a time (a lock folder), since the suite's parallel workers share it.
 */
export function realDist(): string {
  const dist = path.join(ROOT, 'dist');
  if (distChecked) return dist;
  const stamp = path.join(dist, 'BUILD');
  const fresh = () => existsSync(stamp) && statSync(stamp).mtimeMs >= newest(path.join(ROOT, 'src'));
  const lock = path.join(ROOT, '.tmp/dist-build.lock');
  mkdirSync(path.dirname(lock), { recursive: true });
  for (let waited = 0; !fresh(); waited += 100) {
    try {
      mkdirSync(lock);
    } catch {
      if (waited > 60_000) throw new Error(`${lock} is held for over a minute: remove it if no test runs`);
      execFileSync('sleep', ['0.1']);
      continue;
    }
    try {
      if (!fresh())
        execFileSync(process.execPath, [path.join(ROOT, 'scripts/build.mjs')], {
          cwd: ROOT,
          stdio: ['ignore', 'ignore', 'inherit'],
        });
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
  distChecked = true;
  return dist;
}

/** The service (`src/main.ts`, built) on 127.0.0.1:port, silent, loopback calls allowed; `env` adds to or overrides that. */
export function startServer(dataDir: string, port: number, env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, [bundled('main')], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      OUTBOUND_ALLOWLIST: '127.0.0.0/8',
      ...env,
    },
    stdio: 'ignore',
  });
}

export interface WorkerProcess {
  child: ChildProcess;
  /** Its "worker started" log line came (its run consumers are up). */
  started: Promise<void>;
  exited: Promise<number | null>;
}

/** The worker-only process (`src/worker.ts`, bundled) over a DATA_DIR; `env` adds REDIS_URL and the rest. */
export function startWorker(dataDir: string, env: Record<string, string> = {}): WorkerProcess {
  const child = spawn(process.execPath, [bundled('worker')], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'info', OUTBOUND_ALLOWLIST: '127.0.0.0/8', ...env },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const started = new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('switchyard worker started')) resolve();
    });
    void exited.then((code) => reject(new Error(`the worker exited (${code}) before it started:\n${out}`)));
  });
  started.catch(() => undefined);
  return { child, started, exited };
}

/** A PostgreSQL test store's DATABASE_URL for a child process (test/helpers/store.ts: its schema on the search path). */
export function pgDatabaseUrl(store: { databaseUrl: string | undefined; pgSchema: string | undefined }): string {
  return `${store.databaseUrl!}?options=${encodeURIComponent(`-c search_path=${store.pgSchema!}`)}`;
}

/** Waits for /readyz to answer 200. */
export async function waitReady(base: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${base}/readyz`)).status === 200) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not become ready');
}

/** A runtime token for the demo organisation of DATA_DIR/bootstrap.json, with that file's contents. */
export async function bootstrapToken(base: string, dataDir: string): Promise<{ token: string; b: any }> {
  const b = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8'));
  const res = await call(base, 'POST', '/oauth/token', {
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    raw: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: b.clientId,
      client_secret: b.clientSecret,
      scope: `org:${b.orgId}`,
    }).toString(),
  });
  expect(res.status, res.text).to.equal(200);
  return { token: res.body.access_token, b };
}

/**
 * A workflow of one `http` step that GETs `url` (a loopback server that answers slowly keeps
 * steps in flight without burning CPU), and an API trigger for it, made through the management
 * API of the service at `base`.
 */
export async function slowCallTrigger(
  base: string,
  token: string,
  url: string,
): Promise<{ automationId: string; triggerId: string }> {
  const wf = await call(base, 'POST', '/v1/workflows', {
    token,
    body: { name: 'Slow call', steps: [{ type: 'http', name: 'Nap', request: { method: 'GET', url } }] },
  });
  expect(wf.status, wf.text).to.equal(201);
  const trg = await call(base, 'POST', '/v1/triggers', {
    token,
    body: { automationId: wf.body.automationId, kind: 'api' },
  });
  expect(trg.status, trg.text).to.equal(201);
  return { automationId: wf.body.automationId, triggerId: trg.body.triggerId };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * SWITCHYARD_CLI: an installed `switchyard` executable (scripts/package-check.sh) that the CLI
 * tests run instead of this checkout's build; SWITCHYARD_CLI_VERBS: a file each call's arguments
 * are appended to (one JSON array a line), so the package check can tell which verbs ran.
 */
const INSTALLED_CLI = process.env.SWITCHYARD_CLI;
const VERBS_LOG = process.env.SWITCHYARD_CLI_VERBS;

/** `switchyard …args` (the CLI, built) with `env` over this process's environment; a non-zero exit is a result, not a throw. */
export function runCli(args: string[], env: Record<string, string>): Promise<CliResult> {
  return INSTALLED_CLI ? runInstalled(args, env) : runNode([bundled('cli'), ...args], env);
}

/** The same through the real entry, bin/switchyard.js (dist/cli.js), as `npx switchyard` runs it. */
export function runBin(args: string[], env: Record<string, string>): Promise<CliResult> {
  if (INSTALLED_CLI) return runInstalled(args, env);
  realDist();
  return runNode([path.join(ROOT, 'bin/switchyard.js'), ...args], env);
}

function runInstalled(args: string[], env: Record<string, string>): Promise<CliResult> {
  if (VERBS_LOG) appendFileSync(VERBS_LOG, `${JSON.stringify(args)}\n`);
  return runFileResult(INSTALLED_CLI!, args, env);
}

function runNode(args: string[], env: Record<string, string>): Promise<CliResult> {
  return runFileResult(process.execPath, args, env);
}

async function runFileResult(file: string, args: string[], env: Record<string, string>): Promise<CliResult> {
  try {
    const { stdout, stderr } = await runFile(file, args, { cwd: ROOT, env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** The command line, MALLOC_ARENA_MAX and resident memory (MB) of a process. */
export function processOf(pid: number): { argv: string[]; arenas: string | undefined; rssMb: number } {
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  const arenas = env.find((e) => e.startsWith('MALLOC_ARENA_MAX='))?.slice('MALLOC_ARENA_MAX='.length);
  const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]!;
  return { argv, arenas, rssMb: Number(rss) / 1024 };
}
