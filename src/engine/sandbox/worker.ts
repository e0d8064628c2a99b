/**
 * One code runner process: started contained (src/containment), bound to one organisation at
 * its first execution, one execution at a time, and the watchdogs that stop it from the
 * outside — wall clock (the isolate's time limit covers the step's own code; this covers
 * everything else), resident memory and process count of the whole contained tree (with a PID
 * namespace the child started here is bubblewrap, not the runner) and the caller's
 * AbortSignal. A process that was killed, crashed or misbehaved is never reused.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { killTree, launchCommand, sampleKnown, sampleTree, uidOf, type Isolation } from '../../containment/index.js';
import type { SandboxLimits } from './limits.js';
import { runnerArgv, runnerView, RUNNER_PATH, sandboxExecArgv, type Breach } from './flags.js';
import { PROTOCOL_VERSION, parseChildMessage, type DoneOutcome, type ExecMessage } from './protocol.js';

/** How an execution ended when the child did not answer it. */
export type KillReason = 'timeout' | 'memory' | 'abort' | 'crash' | 'protocol';

export type WorkerOutcome = { done: DoneOutcome } | { killed: KillReason; detail: string };

export interface WorkerOptions {
  isolation: Isolation;
  /** Working folder of a runner started without the operating-system layer (an empty folder). */
  cwd: string;
  limits: SandboxLimits;
  spawnTimeoutMs: number;
  /** Extra wall-clock time after `timeoutMs` before the child is killed from outside. */
  killGraceMs: number;
  /** Resident memory of the tree allowed above the memory classes' heaps, in MiB (Node itself, files, buffers). */
  rssHeadroomMb: number;
  /** Contexts the runner keeps per isolate for reuse (0: a fresh context per execution). */
  contexts: number;
  /** The memory class made warm at start. */
  defaultMemoryMb: number;
  /** SANDBOX_TEST_BREACH (tests only). */
  breach: Breach;
}

const STDERR_TAIL = 4096;
const POLL_BUSY_MS = 100;
const POLL_IDLE_MS = 1000;
/**
 * At rest, every this many samples walks the whole tree (new processes); the others read only
 * the known processes' memory: a walk reads each thread's `children` file (about 2 ms of CPU per
 * runner here), which hundreds of idle runners cannot afford every second.
 */
const WALK_EVERY_IDLE = 5;
/** Processes of a runner's tree: bubblewrap, its namespace's first process and the runner; nothing else may appear. */
const MAX_TREE = 3;
/** Isolates (memory classes) a runner keeps (runner.cjs MAX_ISOLATES). */
const MAX_ISOLATES = 4;

let nextSerial = 1;

export class SandboxWorker {
  executions = 0;
  /** Set once the process is gone or condemned; it takes no more work. */
  dead = false;
  /** Executions sent to the runner (a process that has been sent none is a spare: it holds nothing of anyone). */
  private sent = 0;
  /** When the execution in flight began (performance.now()); undefined at rest. */
  busySince: number | undefined;
  private boundTo: string | undefined;
  /** An opaque name of this process (observability and tests: which runner ran a step). */
  readonly serial = nextSerial++;
  /**
   * Context keys the runner probably holds, least recently used first: the runner's own rule
   * (kept after an `ok` outcome, at most `contexts` per memory class) replayed here. A hint for
   * routing only.
   */
  private readonly keys = new Set<string>();
  /** Memory classes the runner has made an isolate for, least recently used first. */
  private readonly classes: number[] = [];
  private readonly child: ChildProcess;
  private readonly uid: number | undefined;
  private stderr = '';
  private nextId = 1;
  private pending:
    | { id: number; key: string | undefined; finish: (o: WorkerOutcome) => void; onLog: (line: string) => void }
    | undefined;
  private readonly exitHandlers: Array<() => void> = [];
  private readyHook: (() => void) | undefined;
  private watch: NodeJS.Timeout | undefined;
  private lastTree: number[] = [];
  private idleSamples = 0;

  private constructor(readonly options: WorkerOptions) {
    const { isolation } = options;
    this.uid = isolation.users?.take();
    const contained = isolation.plan.bwrap !== undefined;
    const argv = [
      process.execPath,
      ...sandboxExecArgv(options.breach),
      RUNNER_PATH,
      ...runnerArgv({
        limits: options.limits,
        contexts: options.contexts,
        uid: this.uid,
        warmMemoryMb: options.defaultMemoryMb,
        breach: options.breach,
      }),
    ];
    const { file, args } = launchCommand(isolation.plan, runnerView(), argv);
    this.classes.push(options.defaultMemoryMb);
    this.child = spawn(file, args, {
      // The service's environment never reaches the runner; Node adds only its IPC channel's variables.
      env: {},
      cwd: contained ? '/' : options.cwd,
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    this.child.stderr?.setEncoding('utf8');
    this.child.stderr?.on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-STDERR_TAIL);
    });
    this.child.on('message', (raw) => this.onMessage(raw));
    // 'close' rather than 'exit': stderr is complete by then.
    this.child.on('close', (code, signal) => this.onExit(code, signal));
    this.child.on('error', () => this.kill('crash', 'the sandbox process could not be started or signalled'));
  }

  /** The organisation this process serves (undefined: a spare), set once by `bind` and never changed. */
  get orgId(): string | undefined {
    return this.boundTo;
  }

  /** True while no execution was ever sent to it: nothing of any organisation is in it. */
  get pristine(): boolean {
    return this.sent === 0;
  }

  /**
   * Binds a spare to `orgId`. Only a process that never executed anything and serves nobody may
   * be bound: a process bound to one organisation never runs another's step, and a spare holds
   * nothing of anyone. Throws otherwise (a bug in the pool, never a tenant's doing).
   */
  bind(orgId: string): void {
    if (this.boundTo !== undefined || this.sent !== 0) {
      throw new Error(
        `runner ${this.serial} cannot be bound to another organisation: it ${this.boundTo !== undefined ? 'serves one already' : 'has executed steps'}`,
      );
    }
    this.boundTo = orgId;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Processes of the contained tree at the last watchdog look (the runner is the last). */
  get tree(): readonly number[] {
    return this.lastTree;
  }

  /** Starts a process and resolves once its runner reports ready and runs as the user it was given. */
  static start(options: WorkerOptions): Promise<SandboxWorker> {
    const worker = new SandboxWorker(options);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        worker.kill('crash', 'start timed out');
        reject(new Error(`The sandbox process did not start within ${options.spawnTimeoutMs} ms`));
      }, options.spawnTimeoutMs);
      worker.readyHook = () => {
        clearTimeout(timer);
        worker.checkUser().then(
          () => {
            worker.poll(POLL_IDLE_MS);
            resolve(worker);
          },
          (err: Error) => {
            worker.kill('crash', err.message);
            reject(err);
          },
        );
      };
      worker.onExitOnce(() => {
        clearTimeout(timer);
        reject(new Error(`The sandbox process exited during start${worker.stderrSummary()}`));
      });
    });
  }

  onExitOnce(fn: () => void): void {
    this.exitHandlers.push(fn);
  }

  /** True when the runner probably holds a warm context for `key`. */
  holds(key: string): boolean {
    return this.keys.has(key);
  }

  /**
   * Runs one execution of a step of `req.orgId`, the organisation this process is bound to (any
   * other, or none, is refused); never rejects (every failure is an outcome).
   */
  exec(
    req: Omit<ExecMessage, 'v' | 't' | 'id'> & { orgId: string },
    onLog: (line: string) => void,
    signal?: AbortSignal,
  ): Promise<WorkerOutcome> {
    if (this.dead || this.pending)
      return Promise.resolve({ killed: 'crash', detail: 'the sandbox process is not available' });
    if (this.boundTo === undefined || this.boundTo !== req.orgId) {
      return Promise.resolve({ killed: 'crash', detail: 'the sandbox process serves another organisation' });
    }
    this.sent += 1;
    const id = this.nextId++;
    return new Promise((resolve) => {
      const onAbort = () => this.kill('abort', 'the run was stopped');
      const timer = setTimeout(
        () => this.kill('timeout', `no answer within ${req.timeoutMs} ms`),
        req.timeoutMs + this.options.killGraceMs,
      );
      const finish = (o: WorkerOutcome) => {
        if (this.pending?.id !== id) return;
        this.pending = undefined;
        this.busySince = undefined;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (!this.dead) this.poll(POLL_IDLE_MS);
        resolve(o);
      };
      this.pending = { id, key: req.key, finish, onLog };
      this.busySince = performance.now();
      if (req.key !== undefined) this.keys.delete(req.key); // taken out for this execution
      this.useClass(req.memoryMb);
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.poll(POLL_BUSY_MS);
      const msg: ExecMessage = {
        v: PROTOCOL_VERSION,
        t: 'exec',
        id,
        code: req.code,
        data: req.data,
        timeoutMs: req.timeoutMs,
        memoryMb: req.memoryMb,
      };
      if (req.key !== undefined && this.options.contexts > 0) msg.key = req.key;
      this.child.send(msg, (err) => {
        if (err) this.kill('crash', 'the sandbox process did not accept the step');
      });
    });
  }

  /** Kills the whole contained tree; an execution in flight ends with `reason`. */
  kill(reason: KillReason, detail: string): void {
    if (!this.dead) {
      this.dead = true;
      clearTimeout(this.watch);
      killTree(this.lastTree);
      this.child.kill('SIGKILL');
    }
    this.pending?.finish({ killed: reason, detail });
  }

  /** The runner (the deepest process of the tree) must run as the user it was given, never as root. */
  private async checkUser(): Promise<void> {
    const pid = this.child.pid;
    if (process.platform !== 'linux' || pid === undefined) return;
    this.lastTree = (await sampleTree(pid)).pids;
    const runner = this.lastTree.at(-1);
    const uid = runner === undefined ? undefined : await uidOf(runner);
    const expected = this.uid ?? process.getuid?.();
    if (uid === undefined || uid === 0 || uid !== expected) {
      throw new Error(
        `The sandbox process runs as uid ${uid ?? 'unknown'}, not as its unprivileged user ${expected ?? ''}`,
      );
    }
  }

  /** Memory classes the runner holds isolates for (its rule replayed): they set the memory ceiling. */
  private useClass(memoryMb: number): void {
    const i = this.classes.indexOf(memoryMb);
    if (i >= 0) this.classes.splice(i, 1);
    this.classes.push(memoryMb);
    if (this.classes.length > MAX_ISOLATES) this.classes.shift();
  }

  private ceilingBytes(): number {
    // isolated-vm's heap limit is approximate (its documentation: a determined step may reach
    // two to three times it), so each live isolate is allowed twice its limit here.
    const heaps = this.classes.reduce((sum, mb) => sum + 2 * mb, 0);
    return (this.options.rssHeadroomMb + heaps) * 1024 * 1024;
  }

  /**
   * The watchdog: the contained tree's memory and size, every `ms` (busy) or at rest; Linux only.
   * Busy, every sample walks the tree; at rest, one in WALK_EVERY_IDLE does and the others read
   * the memory of the processes known from the last walk.
   */
  private poll(ms: number): void {
    const pid = this.child.pid;
    clearTimeout(this.watch);
    if (process.platform !== 'linux' || pid === undefined || this.dead) return;
    this.watch = setTimeout(() => {
      const walk =
        this.pending !== undefined || this.lastTree.length === 0 || ++this.idleSamples % WALK_EVERY_IDLE === 0;
      void (walk ? sampleTree(pid) : sampleKnown(this.lastTree)).then((sample) => {
        if (this.dead) return;
        if (walk && sample.pids.length > 0) this.lastTree = sample.pids;
        const ceiling = this.ceilingBytes();
        if (sample.rssBytes > ceiling) {
          this.kill(
            'memory',
            `resident memory ${Math.round(sample.rssBytes / 1048576)} MiB over the ${Math.round(ceiling / 1048576)} MiB ceiling`,
          );
        } else if (sample.pids.length > this.treeLimit()) {
          this.kill('crash', `the sandbox process started other processes (${sample.pids.length} in its tree)`);
        } else {
          this.poll(this.pending ? POLL_BUSY_MS : POLL_IDLE_MS);
        }
      });
    }, ms);
    this.watch.unref();
  }

  /** bubblewrap adds its own two processes; without it the runner is alone. */
  private treeLimit(): number {
    return this.options.isolation.plan.bwrap ? MAX_TREE : 1;
  }

  private onMessage(raw: unknown): void {
    const msg = parseChildMessage(raw);
    if (!msg) return this.kill('protocol', 'the sandbox process sent a malformed message');
    if (msg.t === 'ready') {
      this.readyHook?.();
      this.readyHook = undefined;
      return;
    }
    const pending = this.pending;
    if (!pending || msg.id !== pending.id) return; // a late message of an execution already ended
    if (msg.t === 'log') return pending.onLog(msg.line);
    const { t: _t, id: _id, ...done } = msg;
    const key = pending.key;
    if (key !== undefined && done.outcome === 'ok' && this.options.contexts > 0) {
      this.keys.add(key);
      if (this.keys.size > this.options.contexts * MAX_ISOLATES) this.keys.delete(this.keys.values().next().value!);
    }
    pending.finish({ done });
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    this.dead = true;
    clearTimeout(this.watch);
    // The namespace's processes end with its first process; the tree's pids are not signalled
    // here, as they may already belong to other processes.
    this.options.isolation.users?.give(this.uid);
    if (this.pending) {
      // runner-common.cjs EXIT.user
      const refused = code === 78 ? ': it could not switch to its unprivileged user, or refused to run as root' : '';
      this.pending.finish({
        killed: 'crash',
        detail: `the sandbox process exited (${signal ?? `code ${code}`})${refused}${this.stderrSummary()}`,
      });
    }
    for (const fn of this.exitHandlers.splice(0)) fn();
  }

  private stderrSummary(): string {
    const line = this.stderr.trim().split('\n').filter(Boolean).pop();
    return line ? `: ${line.slice(0, 200)}` : '';
  }
}
