/**
 * Runs `playwright_run` scripts in script runner processes (src/browser/script-runner.cjs), one
 * organisation's tasks per process and one task at a time (src/browser/README.md "Script
 * isolation"). Each runner is contained through src/containment: where the operating-system
 * layer is in force, bubblewrap (no network, its own PID and IPC namespaces, a read-only view of
 * only the Node binary, the runner, the runners' shared module (src/containment/runner-common.cjs)
 * and playwright-core, a private /tmp, the organisation's relay socket folder); always an unprivileged user of its own when the service runs as root (the
 * runner switches to it once playwright-core is loaded, before any script), an empty
 * environment, Node's permission model, a heap limit, RLIMIT_NPROC, and a watchdog that polls
 * the whole contained tree from outside (resident memory, process count) and kills it over a
 * limit. The runner connects to the organisation's browser through the relay
 * (src/browser/relay.ts); what it sends back is checked again here.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  RUNNER_COMMON_PATH,
  RUNNER_MESSAGE,
  RUNNER_PROTOCOL,
  runnerOptionsArg,
  superviseRunner,
  type ContainSpec,
  type Isolation,
  type StartFailure,
  type SupervisedRunner,
  type TreeBreach,
} from '../containment/index.js';
import { parentDirs } from './contain.js';
import { RELAY_DIR_IN_SANDBOX } from './relay.js';

const RUNNER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'script-runner.cjs');
/** Version of the messages between the service and a runner (runner-common.cjs PROTOCOL, read by script-runner.cjs too). */
const SCRIPT_PROTOCOL = RUNNER_PROTOCOL.script;
const PLAYWRIGHT = path.dirname(createRequire(import.meta.url).resolve('playwright-core/package.json'));
const MiB = 1024 * 1024;
/**
 * A task's limits (src/browser/README.md). The runner gets the first five with each task and
 * enforces them there (a file over them fails inside the script); the parent checks them again.
 * `logChars` bounds the whole log, which the heartbeat rewrites every 5 s. `runnerRssMb` is the
 * watchdog's ceiling on the resident memory of the runner's whole contained tree: the heap, the
 * task's files (up to `totalBytes`, held in memory) and their copies in transit, and Node with
 * playwright-core loaded (about 100 MiB).
 */
export const SCRIPT_LIMITS = {
  files: 20,
  fileBytes: 25 * MiB,
  totalBytes: 100 * MiB,
  resultChars: 1024 * 1024,
  lineChars: 8 * 1024,
  heapMb: 256,
  logLines: 2000,
  logChars: 256 * 1024,
  runnerRssMb: 1024,
};
const RUNNER_LIMITS = {
  files: SCRIPT_LIMITS.files,
  fileBytes: SCRIPT_LIMITS.fileBytes,
  totalBytes: SCRIPT_LIMITS.totalBytes,
  resultChars: SCRIPT_LIMITS.resultChars,
  lineChars: SCRIPT_LIMITS.lineChars,
};
/** RLIMIT_NPROC of a runner's user: Node's own threads (about 12) with room to spare; scripts start none. */
const RUNNER_MAX_THREADS = 64;
const WATCH_BUSY_MS = 100;
const WATCH_IDLE_MS = 1000;
/**
 * The whole tree is walked (new processes found) once a second: every tenth sample while a task
 * runs, every sample at rest; in between only its known processes' memory is read.
 */
const WALK_EVERY = { busy: 10, idle: 1 };
/** Characters of a runner's stderr kept (its last ones: a heap exhaustion is read there). */
const STDERR_TAIL = 4000;
/** A runner that has not said it is ready (playwright-core loaded, user switched) by then is killed. */
const START_TIMEOUT_MS = 30_000;

export interface ScriptFile {
  fileName: string;
  data: Buffer;
  /**
   * script: returned by a script; download: a download of the browser; extract: made by the
   * operator (extract, screenshot, the session trace).
   */
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
  /** The relay endpoint, as the runner connects to it (src/browser/relay.ts RelayEndpoint.url). */
  wsEndpoint: string;
  /** The organisation's relay socket folder, bound into the runner's view (Unix socket relays only). */
  relaySocketDir?: string | undefined;
  code: string;
  viewport: { width: number; height: number };
  storageState?: unknown;
  /** The guarded proxy every context of the task uses (src/browser/proxy.ts). */
  proxyUrl: string;
  timeoutMs: number;
  /**
   * The task's whole time limit (BROWSER_TASK_TIMEOUT_MS), named in the message when the script
   * overruns; timeoutMs is what is left of it.
   */
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

export interface RunnerOptions {
  isolation: Isolation;
  /** SANDBOX_TEST_BREACH (tests only): scripts get the runner's own `process`. */
  breach: boolean;
}

interface Runner {
  /** The process, started and watched by src/containment's supervisor. */
  proc: SupervisedRunner;
  /** Tasks this process has been given. */
  tasks: number;
  /** Resolves once the runner said it is ready and runs as its own user; false when it never will. */
  ready: Promise<boolean>;
  /** Why the process was stopped (the watchdog, a failed start, a retirement), if it was. */
  stopped: string | undefined;
}

/** What a runner sees inside the operating-system layer. */
function runnerView(relaySocketDir: string | undefined): ContainSpec {
  const readOnly = [process.execPath, RUNNER, RUNNER_COMMON_PATH, PLAYWRIGHT];
  return {
    readOnly,
    binds: relaySocketDir ? [{ source: relaySocketDir, target: RELAY_DIR_IN_SANDBOX }] : [],
    // The runner reads playwright-core's files after switching users, so their folders must be passable.
    dirs: parentDirs([...readOnly, RELAY_DIR_IN_SANDBOX]),
    maxProcesses: RUNNER_MAX_THREADS,
  };
}

/**
 * A runner process: started contained, with the boundary's flags; it loads playwright-core,
 * switches users and waits for tasks. The supervisor watches the whole contained tree (with a PID
 * namespace the child started here is bubblewrap, not the runner) from the start: every 100 ms
 * while a task runs and every second at rest. A runner may start no process (its permission model
 * refuses children and RLIMIT_NPROC bounds them).
 */
function spawnRunner(opts: RunnerOptions, relaySocketDir: string | undefined): Runner {
  const { isolation } = opts;
  const contained = isolation.plan.bwrap !== undefined;
  const cwd = contained ? undefined : mkdtempSync(path.join(os.tmpdir(), 'sy-browser-'));
  const runner: Runner = { proc: undefined!, tasks: 0, ready: Promise.resolve(false), stopped: undefined };
  runner.proc = superviseRunner({
    isolation,
    argv: (uid) => [
      process.execPath,
      '--permission',
      `--allow-fs-read=${RUNNER}`,
      `--allow-fs-read=${RUNNER_COMMON_PATH}`,
      `--allow-fs-read=${PLAYWRIGHT}`,
      `--max-old-space-size=${SCRIPT_LIMITS.heapMb}`,
      '--disallow-code-generation-from-strings',
      '--no-warnings',
      RUNNER,
      // src/containment/runner-common.cjs startOptions
      runnerOptionsArg({ playwright: PLAYWRIGHT, uid, breach: opts.breach ? 'process' : 'off' }),
    ],
    view: runnerView(relaySocketDir),
    cwd: cwd ?? '/',
    protocol: SCRIPT_PROTOCOL,
    readyTimeoutMs: START_TIMEOUT_MS,
    stderrChars: STDERR_TAIL,
    watch: {
      busyMs: WATCH_BUSY_MS,
      idleMs: WATCH_IDLE_MS,
      walkEvery: WALK_EVERY,
      ceilingBytes: () => SCRIPT_LIMITS.runnerRssMb * MiB,
      from: 'spawn',
    },
    onLimit: (breach) => {
      runner.stopped ??= overLimit(breach);
    },
  });
  runner.proc.onExit(() => {
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });
  runner.ready = runner.proc.ready.then((failure) => {
    if (failure && failure.kind !== 'exit') runner.stopped ??= startFailure(failure);
    return failure === undefined;
  });
  return runner;
}

/** Why a runner never became ready, as the task's failure names it (a runner that exits on its own is reported by its exit). */
function startFailure(failure: Exclude<StartFailure, { kind: 'exit' }>): string {
  if (failure.kind === 'failed') return `could not start (${failure.error})`;
  return failure.kind === 'timeout'
    ? `did not start within ${START_TIMEOUT_MS / 1000} s`
    : `ran as user ${failure.uid ?? 'unknown'}, not as its own unprivileged user`;
}

/** The limit the watchdog found the runner's tree over, as the task's failure names it. */
function overLimit(breach: TreeBreach): string {
  if (breach.kind === 'owner') return breach.reason;
  return breach.kind === 'memory'
    ? `used more than ${SCRIPT_LIMITS.runnerRssMb} MiB of memory (${Math.round(breach.rssBytes / MiB)} MiB resident)`
    : `started processes of its own (${breach.count - breach.max} besides the runner)`;
}

/** Kills the whole contained tree; the task it runs fails with `why` (ended() reads it). */
function stop(runner: Runner, why: string): void {
  runner.stopped ??= why;
  runner.proc.kill();
}

/** The viewport of a task that names none (spec section 12 defaults). */
export const DEFAULT_VIEWPORT = { width: 1288, height: 711 };

const alive = (r: Runner) => r.proc.alive;

/**
 * Script runner processes, per organisation. Loading playwright-core under the permission model,
 * and a new context with its page, cost more than most scripts take, so a process
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

  constructor(private readonly opts: RunnerOptions & { idleMs: number; tasksPerProcess: number }) {}

  /** Runs the script to its end: never rejects; a crash, a kill or the time limit is a failed outcome. */
  async run(orgId: string, run: ScriptRun): Promise<ScriptOutcome> {
    const runner = this.takeIdle(orgId) ?? (await this.takeFinishing(orgId)) ?? this.spawn(run.relaySocketDir);
    runner.tasks++;
    const reuse = runner.tasks < this.opts.tasksPerProcess;
    const { outcome, ready } = await runIn(runner, run, { reuse });
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
      else stop(runner, 'was retired');
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
    stop(entry.runner, 'was retired');
    return undefined;
  }

  close(): void {
    this.closed = true;
    for (const r of this.all) stop(r, 'was stopped (the service is shutting down)');
    for (const list of this.idle.values()) for (const { timer } of list) clearTimeout(timer);
    this.idle.clear();
  }

  private spawn(relaySocketDir: string | undefined): Runner {
    const runner = spawnRunner(this.opts, relaySocketDir);
    this.all.add(runner);
    runner.proc.onExit(() => this.all.delete(runner));
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
        stop(runner, 'was idle');
      }, this.opts.idleMs),
    };
    entry.timer.unref();
    list.push(entry);
    this.idle.set(orgId, list);
  }
}

let nextTask = 1;

/**
 * One task in a runner, in three states:
 * - `running`: the task is sent once the runner is ready; its log lines are taken (bounded) and
 *   its `done` message gives the outcome;
 * - `closing`: the outcome is in; the runner closes the task's context and opens the next one,
 *   and says `idle` within 10 s (a process that is not reused never gets here: it is stopped);
 * - `ended`: its timers and listeners are gone, and `ready` says whether the process may take
 *   another task: true after `idle`, false after the time limit, an abort, a crash, or no
 *   `idle` in time (the process is then stopped).
 */
class ScriptTask {
  private state: 'running' | 'closing' | 'ended' = 'running';
  private readonly reuse: boolean;
  private readonly n = nextTask++;
  private outcome: ScriptOutcome | undefined;
  private lines = 0;
  private chars = 0;
  private readonly deadline: NodeJS.Timeout;
  private idleTimer: NodeJS.Timeout | undefined;
  private offExit: () => void = () => undefined;
  private reported!: (outcome: ScriptOutcome) => void;
  private markReady!: (ok: boolean) => void;
  /** Resolves as soon as the outcome is known. */
  readonly result = new Promise<ScriptOutcome>((resolve) => {
    this.reported = resolve;
  });
  readonly ready = new Promise<boolean>((resolve) => {
    this.markReady = resolve;
  });

  constructor(
    private readonly runner: Runner,
    private readonly run: ScriptRun,
    { reuse }: { reuse: boolean },
  ) {
    this.reuse = reuse;
    this.deadline = setTimeout(
      () =>
        this.fail({
          ok: false,
          result: `The script did not finish within the task's time limit (${Math.round(run.taskLimitMs / 1000)} s) and was stopped.`,
          files: [],
        }),
      run.timeoutMs,
    );
    run.signal.addEventListener('abort', this.aborted, { once: true });
    const { proc } = runner;
    if (!alive(runner)) {
      this.ended(proc.child.exitCode, proc.child.signalCode);
      return;
    }
    proc.child.on('message', this.onMessage);
    this.offExit = proc.onExit(this.ended);
    proc.busy = true;
    // A new runner first loads playwright-core and switches users; one that fails to is stopped (ended() says why).
    void runner.ready.then((ok) => {
      if (ok && this.state === 'running' && alive(runner)) this.send();
    });
  }

  private send(): void {
    const { run } = this;
    this.runner.proc.child.send({
      v: SCRIPT_PROTOCOL,
      t: RUNNER_MESSAGE.run,
      task: this.n,
      reuse: this.reuse,
      defaultViewport: DEFAULT_VIEWPORT,
      startedAt: run.startedAt,
      wsEndpoint: run.wsEndpoint,
      code: run.code,
      viewport: run.viewport,
      storageState: run.storageState,
      proxy: run.proxyUrl,
      limits: RUNNER_LIMITS,
    });
  }

  private readonly onMessage = (msg: Record<string, unknown>) => {
    if (msg?.v !== SCRIPT_PROTOCOL || msg.task !== this.n) return;
    if (this.state === 'running' && msg.t === RUNNER_MESSAGE.log && typeof msg.line === 'string') this.log(msg.line);
    else if (this.state === 'running' && msg.t === RUNNER_MESSAGE.done) this.done(msg);
    else if (this.state === 'closing' && msg.t === RUNNER_MESSAGE.idle) {
      this.end();
      this.markReady(true);
    }
  };

  /** A line of the script's log, within the log's bounds; past them, one line says the rest was dropped. */
  private log(raw: string): void {
    const line = raw.slice(0, SCRIPT_LIMITS.lineChars);
    this.chars += line.length + 1;
    if (++this.lines <= SCRIPT_LIMITS.logLines && this.chars <= SCRIPT_LIMITS.logChars) this.run.onLog(line);
    else if (this.lines !== Infinity) {
      this.run.onLog('[log truncated: further lines dropped]');
      this.lines = Infinity;
    }
  }

  /** The runner's `done`: the outcome, checked again here; a process that is not reused is stopped with it. */
  private done(msg: Record<string, unknown>): void {
    const files = checkedFiles(msg.files);
    const said = msg.ok ? msg.result : msg.error;
    const text = typeof said === 'string' ? said.slice(0, SCRIPT_LIMITS.resultChars) : '';
    const o: ScriptOutcome =
      msg.ok === true ? { ok: true, result: text, files } : { ok: false, result: text || 'The script failed.', files };
    if (!this.reuse) {
      this.fail(o);
      return;
    }
    clearTimeout(this.deadline);
    this.runner.proc.busy = false;
    this.report(o);
    this.state = 'closing';
    this.idleTimer = setTimeout(() => this.fail(o), 10_000);
  }

  private readonly aborted = () =>
    this.fail({
      ok: false,
      result: 'The task was stopped before the script finished (the service is shutting down).',
      files: [],
    });

  /** The process exited: the task fails with why (a stop of ours, its heap, or a crash). */
  private readonly ended = (code: number | null, sig: NodeJS.Signals | null) => {
    const { runner } = this;
    const heap = /heap out of memory|Allocation failed/i.test(runner.proc.stderr);
    const why = runner.stopped
      ? `The script was stopped: its process ${runner.stopped}.`
      : heap
        ? `The script ran out of memory (limit ${SCRIPT_LIMITS.heapMb} MB of heap).`
        : `The script's process ended unexpectedly (${sig ?? `exit code ${code}`}).`;
    this.fail({ ok: false, result: why, files: [] });
  };

  private report(o: ScriptOutcome): void {
    if (this.outcome) return;
    this.outcome = o;
    this.reported(o);
  }

  /** Ends the task as failed (unless its outcome is already in) and the process with it. */
  private fail(o: ScriptOutcome): void {
    this.end();
    this.report(o);
    if (alive(this.runner)) stop(this.runner, 'was stopped with its task');
    this.markReady(false);
  }

  private end(): void {
    this.state = 'ended';
    const { proc } = this.runner;
    if (proc.busy) proc.busy = false;
    clearTimeout(this.deadline);
    clearTimeout(this.idleTimer);
    this.run.signal.removeEventListener('abort', this.aborted);
    proc.child.off('message', this.onMessage);
    this.offExit();
  }
}

/**
 * One task in a runner (ScriptTask). Resolves with the outcome as soon as it is known, and
 * `ready`, which says whether the process may take another task.
 */
async function runIn(
  runner: Runner,
  run: ScriptRun,
  { reuse }: { reuse: boolean },
): Promise<{ outcome: ScriptOutcome; ready: Promise<boolean> }> {
  const task = new ScriptTask(runner, run, { reuse });
  return { outcome: await task.result, ready: task.ready };
}
