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
 * (src/browser/relay.ts); what it sends back is checked again (script-task.ts, one task).
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
  RUNNER_PROTOCOL,
  runnerOptionsArg,
  superviseRunner,
  type ContainSpec,
  type Isolation,
  type StartFailure,
  type TreeBreach,
} from '../containment/index.js';
import { RELAY_DIR_IN_SANDBOX } from './relay.js';
import { alive, runIn, SCRIPT_LIMITS, stop, type Runner, type ScriptOutcome, type ScriptRun } from './script-task.js';

export { DEFAULT_VIEWPORT, SCRIPT_LIMITS, type ScriptFile, type ScriptOutcome, type ScriptRun } from './script-task.js';

const RUNNER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'script-runner.cjs');
/** Version of the messages between the service and a runner (runner-common.cjs PROTOCOL, read by script-runner.cjs too). */
const SCRIPT_PROTOCOL = RUNNER_PROTOCOL.script;
const PLAYWRIGHT = path.dirname(createRequire(import.meta.url).resolve('playwright-core/package.json'));
const MiB = 1024 * 1024;
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

export interface RunnerOptions {
  isolation: Isolation;
  /** Tests only (src/app.ts AppOptions.assumeBreach): scripts get the runner's own `process`. */
  breach: boolean;
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
