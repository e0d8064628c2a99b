/**
 * A runner of tenant code supervised from outside (README.md "Supervisor"): the one way the code
 * runners (src/engine/sandbox), the script runners and the browser boxes (src/browser) are started
 * and watched. It starts the runner contained (launchCommand: bubblewrap where the level is
 * `namespaces`, the environment its owner gives — empty for the runners — and Node's IPC
 * channel), keeps a bounded tail of its stderr, waits for its ready message and then checks from
 * outside that every process of the runner runs as its own unprivileged user (never root),
 * watches the whole contained tree (resident memory, process count, and the owner's own limits)
 * and kills the whole tree over a limit, and reports its exit. What a runner is for — its tasks,
 * messages and the words of its failures — stays with its owner.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { launchCommand, type ContainSpec } from './launch.js';
import type { Isolation } from './probe.js';
import { RUNNER_MESSAGE as MESSAGE } from './runners.js';
import { killTree, processTree, sampleKnown, sampleTree, uidOf, type TreeSample } from './tree.js';

/**
 * Why a runner never became ready. The supervisor kills it for `timeout`, `user` (`uid`
 * undefined: no process of the runner could be read) and `failed` (the runner said it cannot
 * start, with `failedMessage`); `exit`: it ended by itself.
 */
export type StartFailure =
  | { kind: 'timeout' }
  | { kind: 'user'; uid: number | undefined; expected: number | undefined }
  | { kind: 'failed'; error: string }
  | { kind: 'exit' };

/** The limit the watchdog found the contained tree over (it ends the runner right after `onLimit`: `end()`). */
export type TreeBreach =
  | { kind: 'memory'; rssBytes: number; ceilingBytes: number }
  | { kind: 'processes'; count: number; max: number }
  | { kind: 'owner'; reason: string };

export interface WatchOptions {
  /** Sampling interval while the runner is busy (`busy` true). */
  busyMs: number;
  /** Sampling interval at rest. */
  idleMs: number;
  /**
   * Every this many samples walks the whole tree (new processes found), busy and at rest; the
   * others read only the memory of the processes known from the last walk (a walk reads each
   * thread's `children` file: about 2 ms of CPU per runner).
   */
  walkEvery: { busy: number; idle: number };
  /** Resident memory the whole tree may use, asked at each sample. */
  ceilingBytes: () => number;
  /** `spawn`: the first sample comes `busyMs` after the start; `ready`: `idleMs` after the runner is ready. */
  from: 'spawn' | 'ready';
  /**
   * Processes the tree may hold (default: the runner alone, plus bubblewrap's two). A program
   * that starts processes of its own (the browser box: Chromium) is bounded by RLIMIT_NPROC instead.
   */
  maxProcesses?: number;
  /**
   * The owner's own limits, looked at after the supervisor's on every sample: `pids` is the tree
   * as last walked, `rssBytes` its resident memory now. A reason in words is a breach (`owner`).
   */
  inspect?: (sample: TreeSample) => Promise<string | undefined>;
}

export interface SupervisorOptions {
  isolation: Isolation;
  /**
   * The runner's command line, given the user id it is to switch to (undefined: it keeps the
   * service's). Called once, before the start: an owner may set up what that user needs there
   * (the box's own folder); if it throws, the user id is given back and nothing starts.
   */
  argv: (uid: number | undefined) => string[];
  /** What the runner sees inside the operating-system layer. */
  view: ContainSpec;
  /** Working folder when the operating-system layer is not in force (with it: `/`). */
  cwd: string;
  /** The runner's environment (default: none; Node adds only its IPC channel's variables). */
  env?: Record<string, string>;
  /** The runner's protocol version: `{v, t: 'ready'}` is its ready message (runner-common.cjs channel). */
  protocol: number;
  /** What else the ready message must carry (the box: its server's path); one without it is not the ready message. */
  readyWhen?: (msg: Record<string, unknown>) => boolean;
  /** A `{v, t: 'failed', error}` before the ready message ends the start (`failed`): the box says so when Chromium cannot start. */
  failedMessage?: boolean;
  readyTimeoutMs: number;
  /** Characters of stderr kept (the last ones). */
  stderrChars: number;
  watch: WatchOptions;
  /** The watchdog found the tree over a limit; the runner is dead once this returns, its tree killed after a fresh walk. */
  onLimit: (breach: TreeBreach) => void;
  /** The process could not be started, signalled or sent to (the child's `error` event). */
  onError?: (err: Error) => void;
}

/** Processes of a contained runner's tree: bubblewrap, its namespace's first process and the runner. */
const MAX_TREE = 3;

/** One supervised runner process. */
export class SupervisedRunner {
  readonly child: ChildProcess;
  /** The unprivileged user id the runner was given (undefined: the service's own user); handed back at exit. */
  readonly uid: number | undefined;
  /** Resolves once the runner is ready and runs as its user (undefined), or with why it never will be. */
  readonly ready: Promise<StartFailure | undefined>;
  /** The runner's ready message, once it came. */
  readyMessage: Record<string, unknown> | undefined;
  /** The last `stderrChars` characters the runner wrote to stderr. */
  stderr = '';
  /** Processes of the contained tree at the last walk (the runner is the last). */
  tree: number[] = [];
  private killed = false;
  private exited = false;
  private busyNow = false;
  private timer: NodeJS.Timeout | undefined;
  private looking = false;
  private samples = 0;
  private readonly exitHandlers = new Set<(code: number | null, signal: NodeJS.Signals | null) => void>();
  private exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private readonly closed: Promise<void>;

  constructor(private readonly options: SupervisorOptions) {
    const { isolation } = options;
    this.uid = isolation.users?.take();
    try {
      const { file, args } = launchCommand(isolation.plan, options.view, options.argv(this.uid));
      this.child = spawn(file, args, {
        // The service's environment never reaches the runner: only what its owner gives it.
        env: { ...options.env },
        cwd: isolation.plan.bwrap !== undefined ? '/' : options.cwd,
        serialization: 'advanced',
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      });
    } catch (err) {
      isolation.users?.give(this.uid);
      throw err;
    }
    this.child.stderr?.setEncoding('utf8');
    this.child.stderr?.on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-options.stderrChars);
    });
    this.child.on('error', (err) => options.onError?.(err));
    // 'close' rather than 'exit': stderr is complete by then.
    this.closed = new Promise((resolve) =>
      this.child.once('close', (code, signal) => {
        this.exited = true;
        this.exit = { code, signal };
        clearTimeout(this.timer);
        // The namespace's processes end with its first process; the tree's pids are not signalled
        // after this, as they may already belong to other processes.
        isolation.users?.give(this.uid);
        for (const fn of [...this.exitHandlers]) fn(code, signal);
        this.exitHandlers.clear();
        resolve();
      }),
    );
    this.ready = this.handshake();
    if (options.watch.from === 'spawn') this.arm(options.watch.busyMs);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Killed, or gone: it takes no more work. */
  get dead(): boolean {
    return this.killed || this.exited;
  }

  /** Not killed, not exited, and its IPC channel open. */
  get alive(): boolean {
    return !this.dead && this.child.exitCode === null && this.child.signalCode === null && this.child.connected;
  }

  /** Whether the runner has work now: the watchdog samples every `busyMs` (at once when it becomes busy). */
  get busy(): boolean {
    return this.busyNow;
  }

  set busy(value: boolean) {
    this.busyNow = value;
    this.arm(value ? this.options.watch.busyMs : this.options.watch.idleMs);
  }

  /**
   * Calls `fn` once, when the process has exited and its stderr is complete (in a microtask when
   * it already has); answers the function that unregisters it.
   */
  onExit(fn: (code: number | null, signal: NodeJS.Signals | null) => void): () => void {
    const exit = this.exit;
    if (exit) {
      let off = false;
      queueMicrotask(() => {
        if (!off) fn(exit.code, exit.signal);
      });
      return () => (off = true);
    }
    this.exitHandlers.add(fn);
    return () => this.exitHandlers.delete(fn);
  }

  /** The last line the runner wrote to stderr (at most 200 characters), or ''. */
  stderrLine(): string {
    return this.stderr.trim().split('\n').filter(Boolean).pop()?.slice(0, 200) ?? '';
  }

  /** SIGKILL to the whole contained tree as last walked (the deepest first) and the child; nothing once it is dead. */
  kill(): void {
    if (this.dead) return;
    this.killed = true;
    clearTimeout(this.timer);
    killTree(this.tree);
    this.child.kill('SIGKILL');
  }

  /**
   * Ends the runner: the tree walked afresh (a long-lived runner such as the box starts processes
   * between samples) and killed with the processes known from the last walk, deepest first, and
   * the child; resolves once it has exited. Takes no more work from the moment it is called.
   */
  async end(): Promise<void> {
    if (this.exited || this.child.pid === undefined) return this.closed;
    this.killed = true;
    clearTimeout(this.timer);
    const fresh = process.platform === 'linux' ? await processTree(this.child.pid) : [];
    if (!this.exited) {
      killTree([...new Set([...this.tree, ...fresh])]);
      this.child.kill('SIGKILL');
    }
    return this.closed;
  }

  private handshake(): Promise<StartFailure | undefined> {
    return new Promise((resolve) => {
      let settled = false;
      const done = (failure: StartFailure | undefined) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.child.off('message', onMessage);
        offExit();
        if (failure && failure.kind !== 'exit') void this.end();
        else if (!failure && this.options.watch.from === 'ready') this.arm(this.options.watch.idleMs);
        resolve(failure);
      };
      const timer = setTimeout(() => done({ kind: 'timeout' }), this.options.readyTimeoutMs);
      const onMessage = (msg: unknown) => {
        const m = msg as Record<string, unknown> | null;
        if (m === null || typeof m !== 'object' || m.v !== this.options.protocol) return;
        if (m.t === MESSAGE.failed && this.options.failedMessage) {
          done({ kind: 'failed', error: String(m.error) });
          return;
        }
        if (m.t !== MESSAGE.ready || (this.options.readyWhen && !this.options.readyWhen(m))) return;
        this.child.off('message', onMessage);
        this.readyMessage = m;
        this.checkUser().then(done, () => done({ kind: 'user', uid: undefined, expected: this.expectedUid() }));
      };
      const offExit = this.onExit(() => done({ kind: 'exit' }));
      this.child.on('message', onMessage);
    });
  }

  private expectedUid(): number | undefined {
    return this.uid ?? process.getuid?.();
  }

  /**
   * Every process of the runner (the tree below bubblewrap's two) must run as the user it was
   * given, never as root; one that has exited since the walk is passed over, but at least one must
   * be there.
   */
  private async checkUser(): Promise<StartFailure | undefined> {
    const pid = this.child.pid;
    if (process.platform !== 'linux' || pid === undefined) return undefined;
    this.tree = (await sampleTree(pid)).pids;
    const expected = this.expectedUid();
    let seen = false;
    for (const p of this.tree.slice(this.options.isolation.plan.bwrap ? MAX_TREE - 1 : 0)) {
      const uid = await uidOf(p);
      if (uid === undefined) continue;
      if (uid === 0 || uid !== expected) return { kind: 'user', uid, expected };
      seen = true;
    }
    return seen ? undefined : { kind: 'user', uid: undefined, expected };
  }

  /** bubblewrap adds its own two processes; without it the runner is alone. */
  private maxTree(): number {
    return this.options.watch.maxProcesses ?? (this.options.isolation.plan.bwrap ? MAX_TREE : 1);
  }

  /** The watchdog's next sample in `ms`; Linux only (/proc). */
  private arm(ms: number): void {
    clearTimeout(this.timer);
    if (process.platform !== 'linux' || this.child.pid === undefined || this.dead || this.looking) return;
    this.timer = setTimeout(() => void this.look(this.child.pid!), ms);
    this.timer.unref();
  }

  private async look(pid: number): Promise<void> {
    const { walkEvery, ceilingBytes, busyMs, idleMs } = this.options.watch;
    const walk = this.tree.length === 0 || ++this.samples % (this.busyNow ? walkEvery.busy : walkEvery.idle) === 0;
    this.looking = true;
    let breach: TreeBreach | undefined;
    try {
      const sample = await (walk ? sampleTree(pid) : sampleKnown(this.tree));
      if (this.dead) return;
      if (walk && sample.pids.length > 0) this.tree = sample.pids;
      const ceiling = ceilingBytes();
      const max = this.maxTree();
      if (sample.rssBytes > ceiling) breach = { kind: 'memory', rssBytes: sample.rssBytes, ceilingBytes: ceiling };
      else if (sample.pids.length > max) breach = { kind: 'processes', count: sample.pids.length, max };
      else {
        const reason = await this.options.watch.inspect?.({ pids: this.tree, rssBytes: sample.rssBytes });
        if (reason !== undefined) breach = { kind: 'owner', reason };
      }
    } finally {
      this.looking = false;
    }
    if (this.dead) return;
    if (breach) {
      this.options.onLimit(breach);
      void this.end();
    } else {
      this.arm(this.busyNow ? busyMs : idleMs);
    }
  }
}

/** Starts a supervised runner; its `ready` says when (and whether) it may be given work. */
export function superviseRunner(options: SupervisorOptions): SupervisedRunner {
  return new SupervisedRunner(options);
}
