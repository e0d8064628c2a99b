/**
 * One code runner process: started contained (src/containment), bound to one organisation at
 * its first execution, one execution at a time, and the watchdogs that stop it from the
 * outside — wall clock (the isolate's time limit covers the step's own code; this covers
 * everything else), resident memory and process count of the whole contained tree (with a PID
 * namespace the child started here is bubblewrap, not the runner) and the caller's
 * AbortSignal. A process that was killed, crashed or misbehaved is never reused.
 */
import {
  RUNNER_EXIT,
  RUNNER_MESSAGE,
  superviseRunner,
  type Isolation,
  type SupervisedRunner,
  type TreeBreach,
} from '../../containment/index.js';
import type { SandboxLimits } from './limits.js';
import { runnerCommand, runnerView, type Breach } from './flags.js';
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
  /** Tests only (src/app.ts AppOptions.assumeBreach): `off` otherwise. */
  breach: Breach;
}

const STDERR_TAIL = 4096;
const POLL_BUSY_MS = 100;
const POLL_IDLE_MS = 1000;
/**
 * At rest, every this many samples walks the whole tree (new processes); the others read only
 * the known processes' memory: a walk reads each thread's `children` file (about 2 ms of CPU per
 * runner here), which hundreds of idle runners cannot afford every second. Busy, every sample walks.
 */
const WALK_EVERY_IDLE = 5;
/** Isolates (memory classes) a runner keeps (runner.cjs MAX_ISOLATES). */
const MAX_ISOLATES = 4;

let nextSerial = 1;

export class SandboxWorker {
  executions = 0;
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
  private readonly proc: SupervisedRunner;
  private nextId = 1;
  private pending:
    | { id: number; key: string | undefined; finish: (o: WorkerOutcome) => void; onLog: (line: string) => void }
    | undefined;

  private constructor(readonly options: WorkerOptions) {
    this.classes.push(options.defaultMemoryMb);
    this.proc = superviseRunner({
      isolation: options.isolation,
      argv: (uid) =>
        runnerCommand(
          {
            limits: options.limits,
            contexts: options.contexts,
            uid,
            warmMemoryMb: options.defaultMemoryMb,
            breach: options.breach,
          },
          { contained: options.isolation.plan.bwrap !== undefined },
        ),
      view: runnerView(),
      cwd: options.cwd,
      protocol: PROTOCOL_VERSION,
      readyTimeoutMs: options.spawnTimeoutMs,
      stderrChars: STDERR_TAIL,
      watch: {
        busyMs: POLL_BUSY_MS,
        idleMs: POLL_IDLE_MS,
        walkEvery: { busy: 1, idle: WALK_EVERY_IDLE },
        ceilingBytes: () => this.ceilingBytes(),
        from: 'ready',
      },
      onLimit: (breach) => this.overLimit(breach),
      onError: () => this.kill('crash', 'the sandbox process could not be started or signalled'),
    });
    this.proc.child.on('message', (raw) => this.onMessage(raw));
    this.proc.onExit((code, signal) => this.onExit(code, signal));
  }

  /** Set once the process is gone or condemned; it takes no more work. */
  get dead(): boolean {
    return this.proc.dead;
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
    return this.proc.pid;
  }

  /** Processes of the contained tree at the last watchdog look (the runner is the last). */
  get tree(): readonly number[] {
    return this.proc.tree;
  }

  /** Starts a process and resolves once its runner reports ready and runs as the user it was given. */
  static async start(options: WorkerOptions): Promise<SandboxWorker> {
    const worker = new SandboxWorker(options);
    const failure = await worker.proc.ready;
    if (failure?.kind === 'timeout')
      throw new Error(`The sandbox process did not start within ${options.spawnTimeoutMs} ms`);
    if (failure?.kind === 'user') {
      throw new Error(
        `The sandbox process runs as uid ${failure.uid ?? 'unknown'}, not as its unprivileged user ${failure.expected ?? ''}`,
      );
    }
    if (failure?.kind === 'exit') throw new Error(`The sandbox process exited during start${worker.stderrSummary()}`);
    if (failure?.kind === 'failed') throw new Error(`The sandbox process could not start: ${failure.error}`);
    return worker;
  }

  onExitOnce(fn: () => void): void {
    this.proc.onExit(() => fn());
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
        this.proc.busy = false;
        resolve(o);
      };
      this.pending = { id, key: req.key, finish, onLog };
      this.busySince = performance.now();
      if (req.key !== undefined) this.keys.delete(req.key); // taken out for this execution
      this.useClass(req.memoryMb);
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.proc.busy = true;
      const msg: ExecMessage = {
        v: PROTOCOL_VERSION,
        t: RUNNER_MESSAGE.exec,
        id,
        code: req.code,
        data: req.data,
        timeoutMs: req.timeoutMs,
        memoryMb: req.memoryMb,
      };
      if (req.key !== undefined && this.options.contexts > 0) msg.key = req.key;
      this.proc.child.send(msg, (err) => {
        if (err) this.kill('crash', 'the sandbox process did not accept the step');
      });
    });
  }

  /** Kills the whole contained tree; an execution in flight ends with `reason`. */
  kill(reason: KillReason, detail: string): void {
    this.proc.kill();
    this.pending?.finish({ killed: reason, detail });
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

  /** The watchdog found the contained tree over a limit (it kills the tree next). */
  private overLimit(breach: TreeBreach): void {
    if (breach.kind === 'memory') {
      this.kill(
        'memory',
        `resident memory ${Math.round(breach.rssBytes / 1048576)} MiB over the ${Math.round(breach.ceilingBytes / 1048576)} MiB ceiling`,
      );
    } else if (breach.kind === 'processes') {
      this.kill('crash', `the sandbox process started other processes (${breach.count} in its tree)`);
    } else {
      this.kill('crash', breach.reason);
    }
  }

  private onMessage(raw: unknown): void {
    const msg = parseChildMessage(raw);
    if (!msg) return this.kill('protocol', 'the sandbox process sent a malformed message');
    if (msg.t === RUNNER_MESSAGE.ready) return; // the supervisor's handshake
    const pending = this.pending;
    if (!pending || msg.id !== pending.id) return; // a late message of an execution already ended
    if (msg.t === RUNNER_MESSAGE.log) return pending.onLog(msg.line);
    const { t: _t, id: _id, ...done } = msg;
    const key = pending.key;
    if (key !== undefined && done.outcome === 'ok' && this.options.contexts > 0) {
      this.keys.add(key);
      if (this.keys.size > this.options.contexts * MAX_ISOLATES) this.keys.delete(this.keys.values().next().value!);
    }
    pending.finish({ done });
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.pending) {
      const refused =
        code === RUNNER_EXIT.user ? ': it could not switch to its unprivileged user, or refused to run as root' : '';
      this.pending.finish({
        killed: 'crash',
        detail: `the sandbox process exited (${signal ?? `code ${code}`})${refused}${this.stderrSummary()}`,
      });
    }
  }

  private stderrSummary(): string {
    const line = this.proc.stderrLine();
    return line ? `: ${line}` : '';
  }
}
