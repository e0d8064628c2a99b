/**
 * Runs `playwright_run` scripts in script runner processes (src/browser/script-runner.cjs), one
 * organisation's tasks per process and one task at a time, isolated from the service the way
 * code steps are (src/engine/sandbox/README.md): Node's permission model (no file writes, no child processes, no workers, no addons; reads limited
 * to the runner and playwright-core), an empty environment, an empty working folder, a heap
 * limit, and a kill from outside at the time limit. The runner connects to the organisation's
 * browser (src/browser/pool.ts); what it sends back is checked again here.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { permissionFlag } from '../engine/sandbox/flags.js';

const RUNNER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'script-runner.cjs');
const PLAYWRIGHT = path.dirname(createRequire(import.meta.url).resolve('playwright-core/package.json'));
const MiB = 1024 * 1024;
/**
 * A task's limits (src/browser/README.md). The runner gets the first five with each task and
 * enforces them there (a file over them fails inside the script); the parent checks them again.
 * `logChars` bounds the whole log, which the heartbeat rewrites every 5 s.
 */
export const SCRIPT_LIMITS = { files: 20, fileBytes: 25 * MiB, totalBytes: 100 * MiB, resultChars: 1024 * 1024, lineChars: 8 * 1024, heapMb: 256, logLines: 2000, logChars: 256 * 1024 };
const RUNNER_LIMITS = { files: SCRIPT_LIMITS.files, fileBytes: SCRIPT_LIMITS.fileBytes, totalBytes: SCRIPT_LIMITS.totalBytes, resultChars: SCRIPT_LIMITS.resultChars, lineChars: SCRIPT_LIMITS.lineChars };

export interface ScriptFile {
  fileName: string;
  data: Buffer;
  /** script: returned by a script; download: a download of the browser; extract: made by the operator (extract, screenshot, the session trace). */
  source: 'script' | 'download' | 'extract';
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
  /** The guarded proxy every context of the task uses (src/browser/proxy.ts). */
  proxyUrl: string;
  timeoutMs: number;
  /** The task's whole time limit (BROWSER_TASK_TIMEOUT_MS), named in the message when the script overruns; timeoutMs is what is left of it. */
  taskLimitMs: number;
  /** The task's start (epoch ms): the log's clock. */
  startedAt: number;
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

interface Runner {
  child: ChildProcess;
  stderr: { tail: string };
  /** Tasks this process has been given. */
  tasks: number;
}

/** A runner process: started with the boundary's flags, playwright-core loaded, waiting for tasks. */
function spawnRunner(): Runner {
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
  const stderr = { tail: '' };
  child.stderr?.on('data', (b: Buffer) => {
    stderr.tail = (stderr.tail + b.toString('utf8')).slice(-4000);
  });
  child.once('exit', () => rmSync(cwd, { recursive: true, force: true }));
  child.once('error', () => undefined);
  return { child, stderr, tasks: 0 };
}

/** The viewport of a task that names none (spec section 12 defaults). */
export const DEFAULT_VIEWPORT = { width: 1288, height: 711 };

const alive = (r: Runner) => r.child.exitCode === null && r.child.signalCode === null && r.child.connected;

/**
 * Script runner processes, per organisation. Loading playwright-core under the permission model
 * costs about half a second of CPU and a new context with its page about 0.2 s, so a process
 * runs up to `tasksPerProcess` tasks of one organisation, one at a time, each in a context of
 * its own, and opens the context of its next task while the current one runs. A process is
 * never given another organisation's task; it is killed instead of reused after a time limit,
 * a shutdown or a crash, and when idle for `idleMs`.
 */
export class ScriptRunners {
  private readonly idle = new Map<string, Array<{ runner: Runner; timer: NodeJS.Timeout }>>();
  private readonly all = new Set<Runner>();
  /** Processes whose task has its outcome but which are still closing its context and opening the next. */
  private readonly finishing = new Map<string, Array<{ runner: Runner; ready: Promise<boolean>; claimed: boolean }>>();
  private closed = false;

  constructor(private readonly opts: { idleMs: number; tasksPerProcess: number }) {}

  /** Runs the script to its end: never rejects; a crash, a kill or the time limit is a failed outcome. */
  async run(orgId: string, run: ScriptRun): Promise<ScriptOutcome> {
    const runner = this.takeIdle(orgId) ?? (await this.takeFinishing(orgId)) ?? this.spawn();
    runner.tasks++;
    const reuse = runner.tasks < this.opts.tasksPerProcess;
    const { outcome, ready } = await runIn(runner, run, reuse);
    const entry = { runner, ready, claimed: false };
    const list = this.finishing.get(orgId) ?? [];
    list.push(entry);
    this.finishing.set(orgId, list);
    void ready.then((ok) => {
      const i = list.indexOf(entry);
      if (i >= 0) list.splice(i, 1);
      if (list.length === 0 && this.finishing.get(orgId) === list) this.finishing.delete(orgId);
      if (entry.claimed) return;
      if (ok && reuse && !this.closed && alive(runner)) this.park(orgId, runner);
      else runner.child.kill('SIGKILL');
    });
    return outcome;
  }

  /**
   * A process of the organisation that has just finished a task and is opening its next context
   * is ready sooner than a new process (back-to-back tasks), so a task with no idle process waits for it.
   */
  private async takeFinishing(orgId: string): Promise<Runner | undefined> {
    const entry = this.finishing.get(orgId)?.find((e) => !e.claimed);
    if (!entry) return undefined;
    entry.claimed = true;
    const ok = await entry.ready;
    if (ok && !this.closed && alive(entry.runner)) return entry.runner;
    entry.runner.child.kill('SIGKILL');
    return undefined;
  }

  close(): void {
    this.closed = true;
    for (const r of this.all) r.child.kill('SIGKILL');
    for (const list of this.idle.values()) for (const { timer } of list) clearTimeout(timer);
    this.idle.clear();
  }

  private spawn(): Runner {
    const runner = spawnRunner();
    this.all.add(runner);
    runner.child.once('exit', () => this.all.delete(runner));
    return runner;
  }

  private takeIdle(orgId: string): Runner | undefined {
    const list = this.idle.get(orgId);
    while (list && list.length > 0) {
      const { runner, timer } = list.pop()!;
      clearTimeout(timer);
      if (alive(runner)) return runner;
    }
    this.idle.delete(orgId);
    return undefined;
  }

  private park(orgId: string, runner: Runner): void {
    const list = this.idle.get(orgId) ?? [];
    const entry = {
      runner,
      timer: setTimeout(() => {
        const i = list.indexOf(entry);
        if (i >= 0) list.splice(i, 1);
        runner.child.kill('SIGKILL');
      }, this.opts.idleMs),
    };
    entry.timer.unref();
    list.push(entry);
    this.idle.set(orgId, list);
  }
}

let nextTask = 1;

/**
 * One task in a runner. Resolves with the outcome as soon as it is known, and `ready`, which
 * says whether the process may take another task: true once it reports 'idle' (context closed,
 * the next one open), false after the time limit, an abort, a crash, or no 'idle' within 10 s.
 */
function runIn(runner: Runner, run: ScriptRun, reuse: boolean): Promise<{ outcome: ScriptOutcome; ready: Promise<boolean> }> {
  const { child, stderr } = runner;
  const n = nextTask++;
  let markReady!: (ok: boolean) => void;
  const ready = new Promise<boolean>((r) => {
    markReady = r;
  });
  return new Promise((resolve) => {
    let outcome: ScriptOutcome | undefined;
    let lines = 0;
    let chars = 0;
    let idleTimer: NodeJS.Timeout | undefined;
    const cleanup = () => {
      clearTimeout(timer);
      clearTimeout(idleTimer);
      run.signal.removeEventListener('abort', aborted);
      child.off('message', onMessage);
      child.off('exit', ended);
    };
    const report = (o: ScriptOutcome) => {
      if (outcome) return;
      outcome = o;
      resolve({ outcome: o, ready });
    };
    /** Ends the task as failed (unless its outcome is already in) and the process with it. */
    const fail = (o: ScriptOutcome) => {
      cleanup();
      report(o);
      if (alive(runner)) child.kill('SIGKILL');
      markReady(false);
    };
    const timer = setTimeout(() => fail({ ok: false, result: `The script did not finish within the task's time limit (${Math.round(run.taskLimitMs / 1000)} s) and was stopped.`, files: [] }), run.timeoutMs);
    const aborted = () => fail({ ok: false, result: 'The task was stopped before the script finished (the service is shutting down).', files: [] });
    const onMessage = (msg: Record<string, unknown>) => {
      if (msg?.task !== n) return;
      if (msg.type === 'log' && typeof msg.line === 'string' && !outcome) {
        const line = msg.line.slice(0, SCRIPT_LIMITS.lineChars);
        chars += line.length + 1;
        if (++lines <= SCRIPT_LIMITS.logLines && chars <= SCRIPT_LIMITS.logChars) run.onLog(line);
        else if (lines !== Infinity) {
          run.onLog('[log truncated: further lines dropped]');
          lines = Infinity;
        }
      } else if (msg.type === 'done' && !outcome) {
        const files = checkedFiles(msg.files);
        const text = typeof (msg.ok ? msg.result : msg.error) === 'string' ? String(msg.ok ? msg.result : msg.error).slice(0, SCRIPT_LIMITS.resultChars) : '';
        const o: ScriptOutcome = msg.ok === true ? { ok: true, result: text, files } : { ok: false, result: text || 'The script failed.', files };
        if (!reuse) {
          fail(o);
          return;
        }
        clearTimeout(timer);
        report(o);
        idleTimer = setTimeout(() => fail(o), 10_000);
      } else if (msg.type === 'idle' && outcome) {
        cleanup();
        markReady(true);
      }
    };
    const ended = (code: number | null, sig: NodeJS.Signals | null) => {
      const heap = /heap out of memory|Allocation failed/i.test(stderr.tail);
      fail({ ok: false, result: heap ? `The script ran out of memory (limit ${SCRIPT_LIMITS.heapMb} MB of heap).` : `The script's process ended unexpectedly (${sig ?? `exit code ${code}`}).`, files: [] });
    };
    run.signal.addEventListener('abort', aborted, { once: true });
    if (!alive(runner)) {
      ended(child.exitCode, child.signalCode);
      return;
    }
    child.on('message', onMessage);
    child.once('exit', ended);
    child.send({ type: 'run', v: 1, task: n, reuse, defaultViewport: DEFAULT_VIEWPORT, startedAt: run.startedAt, wsEndpoint: run.wsEndpoint, code: run.code, viewport: run.viewport, storageState: run.storageState, proxy: run.proxyUrl, limits: RUNNER_LIMITS });
  });
}
