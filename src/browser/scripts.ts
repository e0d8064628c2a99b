/**
 * Runs one `playwright_run` script in its own child process (src/browser/script-runner.cjs),
 * isolated from the service the way code steps are (src/engine/sandbox/README.md): Node's
 * permission model (no file writes, no child processes, no workers, no addons; reads limited
 * to the runner and playwright-core), an empty environment, an empty working folder, a heap
 * limit, and a kill from outside at the time limit. The child connects to the organisation's
 * browser (src/browser/pool.ts); what it sends back is checked again here.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { permissionFlag } from '../engine/sandbox/flags.js';

const RUNNER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'script-runner.cjs');
const PLAYWRIGHT = path.dirname(createRequire(import.meta.url).resolve('playwright-core/package.json'));
const MiB = 1024 * 1024;
export const SCRIPT_LIMITS = { files: 20, fileBytes: 25 * MiB, totalBytes: 100 * MiB, resultChars: 1024 * 1024, heapMb: 256, logLines: 2000, logChars: 256 * 1024 };

export interface ScriptFile {
  fileName: string;
  data: Buffer;
  source: 'script' | 'download';
  mimeType?: string | undefined;
}

export interface ScriptOutcome {
  ok: boolean;
  /** The script's return value as text (ok) or the reason it failed. */
  result: string;
  files: ScriptFile[];
}

export interface ScriptRun {
  wsEndpoint: string;
  code: string;
  viewport: { width: number; height: number };
  storageState?: unknown;
  timeoutMs: number;
  signal: AbortSignal;
  onLog(line: string): void;
}

function checkedFiles(raw: unknown): ScriptFile[] {
  if (!Array.isArray(raw)) return [];
  const files: ScriptFile[] = [];
  let total = 0;
  for (const f of raw.slice(0, SCRIPT_LIMITS.files) as Array<Record<string, unknown>>) {
    if (!f || typeof f.fileName !== 'string' || !(f.data instanceof Uint8Array)) continue;
    const data = Buffer.from(f.data.buffer, f.data.byteOffset, f.data.byteLength);
    if (data.length > SCRIPT_LIMITS.fileBytes || total + data.length > SCRIPT_LIMITS.totalBytes) continue;
    total += data.length;
    files.push({
      fileName: f.fileName.slice(0, 255),
      data,
      source: f.source === 'download' ? 'download' : 'script',
      mimeType: typeof f.mimeType === 'string' ? f.mimeType.slice(0, 255) : undefined,
    });
  }
  return files;
}

/** Runs the script to its end: never rejects; a crash, a kill or the time limit is a failed outcome. */
export function runScript(run: ScriptRun): Promise<ScriptOutcome> {
  const cwd = mkdtempSync(path.join(os.tmpdir(), 'sy-browser-'));
  const child = fork(RUNNER, [PLAYWRIGHT], {
    cwd,
    env: {},
    execArgv: [
      permissionFlag(), `--allow-fs-read=${RUNNER}`, `--allow-fs-read=${PLAYWRIGHT}`,
      `--max-old-space-size=${SCRIPT_LIMITS.heapMb}`, '--disallow-code-generation-from-strings', '--no-warnings',
    ],
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => {
    stderr = (stderr + b.toString('utf8')).slice(-4000);
  });
  return new Promise<ScriptOutcome>((resolve) => {
    let outcome: ScriptOutcome | undefined;
    let lines = 0;
    const finish = (o: ScriptOutcome) => {
      outcome ??= o;
      clearTimeout(timer);
      run.signal.removeEventListener('abort', aborted);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    };
    const timer = setTimeout(() => finish({ ok: false, result: `The script did not finish within the task's time limit (${Math.round(run.timeoutMs / 1000)} s) and was stopped.`, files: [] }), run.timeoutMs);
    const aborted = () => finish({ ok: false, result: 'The task was stopped before the script finished (the service is shutting down).', files: [] });
    run.signal.addEventListener('abort', aborted, { once: true });
    child.on('message', (msg: Record<string, unknown>) => {
      if (msg?.type === 'log' && typeof msg.line === 'string') {
        if (++lines <= SCRIPT_LIMITS.logLines) run.onLog(msg.line.slice(0, 8192));
        else if (lines === SCRIPT_LIMITS.logLines + 1) run.onLog('[log truncated: further lines dropped]');
        return;
      }
      if (msg?.type === 'done') {
        const files = checkedFiles(msg.files);
        const text = typeof (msg.ok ? msg.result : msg.error) === 'string' ? String(msg.ok ? msg.result : msg.error).slice(0, SCRIPT_LIMITS.resultChars) : '';
        finish(msg.ok === true ? { ok: true, result: text, files } : { ok: false, result: text || 'The script failed.', files });
      }
    });
    child.once('exit', (code, sig) => {
      rmSync(cwd, { recursive: true, force: true });
      if (!outcome) {
        const heap = /heap out of memory|Allocation failed/i.test(stderr);
        finish({ ok: false, result: heap ? `The script ran out of memory (limit ${SCRIPT_LIMITS.heapMb} MB of heap).` : `The script's process ended unexpectedly (${sig ?? `exit code ${code}`}).`, files: [] });
      }
      resolve(outcome!);
    });
    child.once('error', (err) => finish({ ok: false, result: `The script's process could not start: ${err.message}`, files: [] }));
    child.send({ type: 'run', v: 1, wsEndpoint: run.wsEndpoint, code: run.code, viewport: run.viewport, storageState: run.storageState });
  });
}
