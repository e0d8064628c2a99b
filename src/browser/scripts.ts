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
  parentDirs,
  programBinds,
  programPath,
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
  /** Tests only (src/app.ts AppOptions.assumeBreach): scripts get the runner's own `process`. */
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

/** The runner's own program: Node, the runner, the runners' shared module and playwright-core. */
const PROGRAM = [process.execPath, RUNNER, RUNNER_COMMON_PATH, PLAYWRIGHT];

/**
 * What a runner sees inside the operating-system layer: its program bound alone at neutral paths
 * (src/containment programPath), the relay's socket folder, a private /tmp.
 */
function runnerView(relaySocketDir: string | undefined): ContainSpec {
  const program = programBinds(PROGRAM);
  return {
    readOnly: [],
    binds: [...program, ...(relaySocketDir ? [{ source: relaySocketDir, target: RELAY_DIR_IN_SANDBOX }] : [])],
    // The runner reads playwright-core's files after switching users, so their folders must be passable.
    dirs: parentDirs([...program.map((b) => b.target), RELAY_DIR_IN_SANDBOX]),
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
    argv: (uid) => {
      const [node, runnerFile, common, playwright] = contained ? PROGRAM.map(programPath) : PROGRAM;
      return [
        node!,
        '--permission',
        `--allow-fs-read=${runnerFile}`,
        `--allow-fs-read=${common}`,
        `--allow-fs-read=${playwright}`,
        `--max-old-space-size=${SCRIPT_LIMITS.heapMb}`,
        '--disallow-code-generation-from-strings',
        '--no-warnings',
        runnerFile!,
        // src/containment/runner-common.cjs startOptions
        runnerOptionsArg({ playwright, uid, breach: opts.breach ? 'process' : 'off' }),
      ];
    },
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
  return failure.kind === 'timeout'
    ? `did not start within ${START_TIMEOUT_MS / 1000} s`
    : `ran as user ${failure.uid ?? 'unknown'}, not as its own unprivileged user`;
}

/** The limit the watchdog found the runner's tree over, as the task's failure names it. */
function overLimit(breach: TreeBreach): string {
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
 * One task in a runner. Resolves with the outcome as soon as it is known, and `ready`, which
 * says whether the process may take another task: true once it reports 'idle' (context closed,
 * the next one open), false after the time limit, an abort, a crash, or no 'idle' within 10 s.
 */
function runIn(
  runner: Runner,
  run: ScriptRun,
  { reuse }: { reuse: boolean },
): Promise<{ outcome: ScriptOutcome; ready: Promise<boolean> }> {
  const { proc } = runner;
  const { child } = proc;
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
    let offExit: () => void = () => undefined;
    const cleanup = () => {
      if (proc.busy) proc.busy = false;
      clearTimeout(timer);
      clearTimeout(idleTimer);
      run.signal.removeEventListener('abort', aborted);
      child.off('message', onMessage);
      offExit();
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
      if (alive(runner)) stop(runner, 'was stopped with its task');
      markReady(false);
    };
    const timer = setTimeout(
      () =>
        fail({
          ok: false,
          result: `The script did not finish within the task's time limit (${Math.round(run.taskLimitMs / 1000)} s) and was stopped.`,
          files: [],
        }),
      run.timeoutMs,
    );
    const aborted = () =>
      fail({
        ok: false,
        result: 'The task was stopped before the script finished (the service is shutting down).',
        files: [],
      });
    const onMessage = (msg: Record<string, unknown>) => {
      if (msg?.v !== SCRIPT_PROTOCOL || msg.task !== n) return;
      if (msg.t === RUNNER_MESSAGE.log && typeof msg.line === 'string' && !outcome) {
        const line = msg.line.slice(0, SCRIPT_LIMITS.lineChars);
        chars += line.length + 1;
        if (++lines <= SCRIPT_LIMITS.logLines && chars <= SCRIPT_LIMITS.logChars) run.onLog(line);
        else if (lines !== Infinity) {
          run.onLog('[log truncated: further lines dropped]');
          lines = Infinity;
        }
      } else if (msg.t === RUNNER_MESSAGE.done && !outcome) {
        const files = checkedFiles(msg.files);
        const text =
          typeof (msg.ok ? msg.result : msg.error) === 'string'
            ? String(msg.ok ? msg.result : msg.error).slice(0, SCRIPT_LIMITS.resultChars)
            : '';
        const o: ScriptOutcome =
          msg.ok === true
            ? { ok: true, result: text, files }
            : { ok: false, result: text || 'The script failed.', files };
        if (!reuse) {
          fail(o);
          return;
        }
        clearTimeout(timer);
        proc.busy = false;
        report(o);
        idleTimer = setTimeout(() => fail(o), 10_000);
      } else if (msg.t === RUNNER_MESSAGE.idle && outcome) {
        cleanup();
        markReady(true);
      }
    };
    const ended = (code: number | null, sig: NodeJS.Signals | null) => {
      const heap = /heap out of memory|Allocation failed/i.test(proc.stderr);
      const why = runner.stopped
        ? `The script was stopped: its process ${runner.stopped}.`
        : heap
          ? `The script ran out of memory (limit ${SCRIPT_LIMITS.heapMb} MB of heap).`
          : `The script's process ended unexpectedly (${sig ?? `exit code ${code}`}).`;
      fail({ ok: false, result: why, files: [] });
    };
    run.signal.addEventListener('abort', aborted, { once: true });
    if (!alive(runner)) {
      ended(child.exitCode, child.signalCode);
      return;
    }
    child.on('message', onMessage);
    offExit = proc.onExit(ended);
    proc.busy = true;
    // A new runner first loads playwright-core and switches users; one that fails to is stopped (ended() says why).
    void runner.ready.then((ok) => {
      if (!ok || outcome || !alive(runner)) return;
      child.send({
        v: SCRIPT_PROTOCOL,
        t: RUNNER_MESSAGE.run,
        task: n,
        reuse,
        defaultViewport: DEFAULT_VIEWPORT,
        startedAt: run.startedAt,
        wsEndpoint: run.wsEndpoint,
        code: run.code,
        viewport: run.viewport,
        storageState: run.storageState,
        proxy: run.proxyUrl,
        limits: RUNNER_LIMITS,
      });
    });
  });
}
