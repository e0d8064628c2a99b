/**
 * A throwaway client project under the OS temp directory, built the way a user's CI builds
 * one from our bundle: run each generator's CLI on generated/openapi/switchyard.json, drop a
 * hand-written program (flows/*.ts.txt) next to the output, typecheck it with the real
 * TypeScript compiler in strict mode, then run it with tsx.
 *
 * The project links the repository's node_modules, so the generators, openapi-fetch and
 * TypeScript are exactly the pinned devDependencies.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../../../', import.meta.url));
const modules = path.join(repo, 'node_modules');
const BUNDLE = path.join(repo, 'generated/openapi/switchyard.json');
const FLOWS = fileURLToPath(new URL('./flows/', import.meta.url));

/** The two TypeScript stacks checked: openapi-typescript + openapi-fetch, and Hey API's SDK. */
export const CLIENTS = ['openapi-fetch', 'hey-api'] as const;
export type ClientKind = (typeof CLIENTS)[number];

/** A user's settings: strict, indexed access checked, ESM on Node, fetch types from lib.dom. */
const TSCONFIG = {
  compilerOptions: {
    target: 'es2022',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    lib: ['es2022', 'dom'],
    types: ['node'],
    strict: true,
    noUncheckedIndexedAccess: true,
    noEmit: true,
    // The openapi-typescript output is a .d.ts: only checking declaration files checks it.
    // TypeScript's own lib files are left out (two thirds of the compile time, and not ours).
    skipLibCheck: false,
    skipDefaultLibCheck: true,
  },
  include: ['**/*.ts'],
};

export interface Generated {
  dir: string;
  /** Each flow program, keyed by client kind. */
  flows: Record<ClientKind, string>;
  /** What each generator printed (stdout and stderr), for the report. */
  logs: Record<ClientKind, string>;
  remove(): void;
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Why the process failed (exit code, signal, timeout), when it did. */
  failure: string | undefined;
}

function run(
  file: string,
  args: string[],
  opts: { cwd: string; env?: Record<string, string>; timeoutMs?: number },
): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [file, ...args],
      {
        cwd: opts.cwd,
        env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', ...opts.env },
        timeout: opts.timeoutMs ?? 30_000,
        maxBuffer: 16 * 1024 * 1024,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({
          code,
          stdout,
          stderr,
          failure: err ? `${err.message}${err.signal ? ` (${err.signal})` : ''}` : undefined,
        });
      },
    );
  });
}

function expectExit(what: string, r: Ran): string {
  // Hey API colours its output whatever NO_COLOR says.
  const out = `${r.stdout}${r.stderr}`.replace(/\u001b\[[0-9;]*m/g, '').trim();
  if (r.code !== 0) throw new Error(`${what} exited with ${r.code}: ${r.failure}\n${out}`);
  return out;
}

/** Generates both clients (the two CLIs in parallel) and places the flow programs beside them. */
export async function generateClients(): Promise<Generated> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-clients-'));
  try {
    symlinkSync(modules, path.join(dir, 'node_modules'), 'dir');
    writeFileSync(
      path.join(dir, 'package.json'),
      `${JSON.stringify({ name: 'switchyard-client-check', private: true, type: 'module' }, null, 2)}\n`,
    );
    writeFileSync(path.join(dir, 'tsconfig.json'), `${JSON.stringify(TSCONFIG, null, 2)}\n`);
    for (const kind of CLIENTS) mkdirSync(path.join(dir, kind));
    // Each CLI runs in the project directory, as in a user's repository: neither reads our
    // redocly.yaml (openapi/README.md, tooling notes) nor any config of ours.
    const [oat, hey] = await Promise.all([
      run(path.join(modules, 'openapi-typescript/bin/cli.js'), [BUNDLE, '-o', 'openapi-fetch/schema.d.ts'], {
        cwd: dir,
      }),
      run(
        path.join(modules, '@hey-api/openapi-ts/bin/run.js'),
        ['-i', BUNDLE, '-o', 'hey-api/client', '-c', '@hey-api/client-fetch', '--no-log-file'],
        { cwd: dir },
      ),
    ]);
    const logs = {
      'openapi-fetch': expectExit('openapi-typescript', oat),
      'hey-api': expectExit('@hey-api/openapi-ts', hey),
    };
    const flows = {} as Record<ClientKind, string>;
    for (const kind of CLIENTS) {
      flows[kind] = path.join(dir, kind, 'flow.ts');
      copyFileSync(path.join(FLOWS, `${kind}.flow.ts.txt`), flows[kind]);
    }
    return { dir, flows, logs, remove: () => rmSync(dir, { recursive: true, force: true }) };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** Files a generator wrote, relative to its folder (for the report). */
export function listFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

/**
 * One `tsc` run over the whole project with its tsconfig (a child process, so it overlaps
 * the live runs); diagnostics grouped by the client folder they belong to, anything outside
 * both folders (a library, @types/node) under `other`.
 */
export async function typecheck(dir: string): Promise<Record<ClientKind | 'other', string[]>> {
  const r = await run(path.join(modules, 'typescript/bin/tsc'), ['-p', dir, '--pretty', 'false'], {
    cwd: dir,
    timeoutMs: 120_000,
  });
  const grouped: Record<ClientKind | 'other', string[]> = { 'openapi-fetch': [], 'hey-api': [], other: [] };
  // One diagnostic per unindented line (`file(line,col): error TSnnnn: ...`); indented lines continue it.
  const entries = `${r.stdout}${r.stderr}`.split('\n').reduce<string[]>((all, line) => {
    if (/^\s/.test(line) && all.length) all[all.length - 1] += `\n${line}`;
    else if (line.trim()) all.push(line);
    return all;
  }, []);
  for (const entry of entries) grouped[CLIENTS.find((k) => entry.startsWith(`${k}/`)) ?? 'other'].push(entry);
  if (r.code !== 0 && !entries.length) grouped.other.push(`tsc printed no diagnostic but failed: ${r.failure}`);
  return grouped;
}

/** Runs a flow program with tsx on the Node running the tests; its stdout is one JSON line. */
export async function runFlow(file: string, env: Record<string, string>): Promise<unknown> {
  const r = await run(path.join(modules, 'tsx/dist/cli.mjs'), [file], {
    cwd: path.dirname(file),
    env,
    timeoutMs: 40_000,
  });
  const out = expectExit(`flow ${path.basename(path.dirname(file))}`, r);
  const last = r.stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(last);
  } catch {
    throw new Error(`flow printed no JSON report:\n${out}`);
  }
}
