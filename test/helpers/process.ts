/**
 * Server processes for process tests: `src/main.ts` on loopback over a DATA_DIR, its readiness
 * and a token from its bootstrap.json; the CLI as a child process.
 * The processes run our source as bundles built once per test process
 * (scripts/bundle-entries.mjs, into .tmp/test-bundles/<pid>): the same code as `npm start` and
 * bin/switchyard.js without tsx's loader, about 1.3 s less per start and 0.6 s per CLI call.
 * The real entries themselves are started by their own tests (process/start.test.ts runs
 * `src/main.ts` through tsx, process/cli.test.ts runs bin/switchyard.js).
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
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

/** The bundle of `src/main.ts` (main), `src/worker.ts` (worker) or `src/cli/main.ts` (cli), built on first use in this process. */
export function bundled(entry: 'main' | 'worker' | 'cli'): string {
  if (!bundleDir) {
    mkdirSync(BUNDLES, { recursive: true });
    // Bundles of test processes that are gone (killed before their exit hook ran).
    for (const name of readdirSync(BUNDLES))
      if (/^\d+$/.test(name) && !alive(Number(name)))
        rmSync(path.join(BUNDLES, name), { recursive: true, force: true });
    const dir = path.join(BUNDLES, String(process.pid));
    execFileSync(process.execPath, [path.join(ROOT, 'scripts/bundle-entries.mjs'), dir], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    bundleDir = dir;
  }
  const file = path.join(bundleDir, `${entry}.mjs`);
  if (!existsSync(file)) throw new Error(`the test bundle ${file} is missing`);
  return file;
}

/** The service (`src/main.ts`, bundled) on 127.0.0.1:port, silent, loopback calls allowed; `env` adds to or overrides that. */
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

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `switchyard …args` (the CLI, bundled) with `env` over this process's environment; a non-zero exit is a result, not a throw. */
export function runCli(args: string[], env: Record<string, string>): Promise<CliResult> {
  return runNode([bundled('cli'), ...args], env);
}

/** The same through the real entry, bin/switchyard.js (tsx), as `npx switchyard` runs it. */
export function runBin(args: string[], env: Record<string, string>): Promise<CliResult> {
  return runNode([path.join(ROOT, 'bin/switchyard.js'), ...args], env);
}

async function runNode(args: string[], env: Record<string, string>): Promise<CliResult> {
  try {
    const { stdout, stderr } = await runFile(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
