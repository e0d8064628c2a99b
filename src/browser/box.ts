/**
 * One organisation's browser box as the service sees it (src/browser/README.md "Pool"): the
 * contained process of src/browser/box-server.cjs (playwright-core's browser server with
 * Chromium as its child), started and watched by src/containment's supervisor like the runners of
 * tenant code — the contained start from the command line src/browser/contain.ts makes, the tail
 * of its stderr, its ready message (with the server's path), the check from outside that every
 * process of the box runs as the box's own unprivileged user, and the watch of its whole tree,
 * here with the box's own limits (src/browser/watchdog.ts) — and reached on its Unix socket.
 */
import {
  RUNNER_PROTOCOL,
  superviseRunner,
  type StartFailure,
  type SupervisedRunner,
  type TreeBreach,
} from '../containment/index.js';
import type { BoxLaunch } from './contain.js';
import { BOX_WATCH, BrowserWatchdog, type BrowserLimits, type CpuShare } from './watchdog.js';

/** Version of the messages between the service and a box (runner-common.cjs PROTOCOL, read by box-server.cjs too). */
const BOX_PROTOCOL = RUNNER_PROTOCOL.box;
/** A box that has not said it is ready (Chromium started, the server listening) by then is killed. */
const START_TIMEOUT_MS = 30_000;
/** Characters of a box's stderr kept (the last lines name why it exited during its start). */
const STDERR_TAIL = 4000;
/** The Playwright server's path, as the box's ready message names it. */
const WS_PATH = /^\/[\w-]+$/;

export class BoxStartError extends Error {}

/** The box's limits (src/browser/watchdog.ts) and what to do when they are crossed or measured. */
export interface BoxWatch {
  limits: BrowserLimits;
  /** The box crossed a limit, named in words; it is killed right after. */
  onBreach(reason: string): void;
  /** The box's proportional set size, every 5 s (src/browser/watchdog.ts). */
  onMeasure?: ((bytes: number) => void) | undefined;
}

/** No limits but the supervisor's own (tests of the box itself). */
const UNLIMITED: BrowserLimits = {
  memoryBytes: Number.POSITIVE_INFINITY,
  diskBytes: 0,
  taskCpuMs: Number.POSITIVE_INFINITY,
};

/** A running box: its endpoint, its process, and its end. */
export class BrowserBox {
  private constructor(
    private readonly proc: SupervisedRunner,
    private readonly watchdog: BrowserWatchdog,
    private readonly endpoint: string,
    readonly launch: BoxLaunch,
  ) {}

  /**
   * Starts the box and waits until its Playwright server listens and its processes run as its
   * user; from then on its tree is watched with `watch`'s limits.
   */
  static async start(launch: BoxLaunch, watch?: BoxWatch): Promise<BrowserBox> {
    let proc: SupervisedRunner | undefined;
    let spawnError: Error | undefined;
    const watchdog = new BrowserWatchdog({
      namespaces: launch.namespaces,
      limits: watch?.limits ?? UNLIMITED,
      onMeasure: watch?.onMeasure,
      onTasks: (count) => {
        if (proc) proc.busy = count > 0;
      },
      onFull: (reason) => {
        watch?.onBreach(reason);
        void proc?.end();
      },
    });
    try {
      proc = superviseRunner({
        isolation: launch.isolation,
        argv: launch.argv,
        view: launch.view,
        cwd: '/',
        // Only what the box is given: the service's environment (secrets included) is not its business.
        env: launch.env,
        protocol: BOX_PROTOCOL,
        readyWhen: (msg) => typeof msg.wsPath === 'string' && WS_PATH.test(msg.wsPath),
        failedMessage: true,
        readyTimeoutMs: START_TIMEOUT_MS,
        stderrChars: STDERR_TAIL,
        watch: {
          ...BOX_WATCH,
          // The box's memory is its proportional set size (the watchdog's); Chromium's processes are bounded by RLIMIT_NPROC.
          ceilingBytes: () => Number.POSITIVE_INFINITY,
          maxProcesses: Number.POSITIVE_INFINITY,
          from: 'ready',
          inspect: watchdog.inspect,
        },
        onLimit: (breach) => {
          watchdog.stop();
          watch?.onBreach(breachReason(breach));
        },
        onError: (err) => {
          spawnError ??= err;
        },
      });
    } catch (err) {
      launch.release();
      throw err;
    }
    proc.onExit(() => {
      watchdog.stop();
      launch.release();
    });
    const failure = await proc.ready;
    if (failure) {
      await proc.end();
      throw new BoxStartError(startFailure(failure, proc, spawnError));
    }
    const wsPath = String(proc.readyMessage?.wsPath);
    return new BrowserBox(proc, watchdog, `ws+unix://${launch.socket}:${wsPath}`, launch);
  }

  /** The Playwright server's endpoint, for the relay and the service's own operator; never for a script runner. */
  wsEndpoint(): string {
    return this.endpoint;
  }

  /** The box's first process (bubblewrap's, where the operating-system layer is in force). */
  get pid(): number | undefined {
    return this.proc.pid;
  }

  get alive(): boolean {
    return !this.proc.dead;
  }

  /** A task starts on this box: its CPU share is counted until `end()`, and the box is sampled as busy meanwhile. */
  task(): CpuShare {
    return this.watchdog.task();
  }

  /** Calls `cb` once the box's process has exited (at once, in a microtask, when it has). */
  onExit(cb: () => void): void {
    this.proc.onExit(() => cb());
  }

  /** Ends the box and everything in it; resolves once its process has exited. */
  close(): Promise<void> {
    this.watchdog.stop();
    return this.proc.end();
  }
}

/** The limit the supervisor found the box over, in words (the box's own limits come named). */
function breachReason(breach: TreeBreach): string {
  if (breach.kind === 'owner') return breach.reason;
  return breach.kind === 'memory'
    ? `used more than ${Math.round(breach.ceilingBytes / 1048576)} MiB of resident memory`
    : `ran ${breach.count} processes (at most ${breach.max})`;
}

/** Why the box never became ready, as its start error says. */
function startFailure(failure: StartFailure, proc: SupervisedRunner, spawnError: Error | undefined): string {
  switch (failure.kind) {
    case 'timeout':
      return `did not start within ${START_TIMEOUT_MS / 1000} s`;
    case 'failed':
      return failure.error.slice(0, 2000);
    case 'user':
      return failure.uid === undefined
        ? 'its processes could not be found'
        : `a process of the box ran as user ${failure.uid}, not as its own unprivileged user`;
    case 'exit': {
      if (spawnError) return `could not be started: ${spawnError.message}`;
      const { exitCode, signalCode } = proc.child;
      const stderr = proc.stderr.trim();
      const tail = stderr ? `: ${stderr.split('\n').slice(-3).join(' | ')}` : '';
      return `exited before it was ready (${signalCode ?? `exit code ${exitCode}`})${tail}`;
    }
  }
}
