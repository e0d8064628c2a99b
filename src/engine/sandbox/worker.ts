/**
 * One sandbox process: spawn, one execution at a time, and the watchdogs that stop it from
 * the outside — wall clock (the vm timeout inside the child covers synchronous loops; this
 * covers everything else), resident memory (the V8 heap limit does not count ArrayBuffers)
 * and the caller's AbortSignal. A process that was killed, crashed or misbehaved is never
 * reused; the pool replaces it.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import type { SandboxLimits } from './limits.js';
import { RUNNER_PATH, runnerArgs, sandboxForkOptions } from './flags.js';
import { PROTOCOL_VERSION, parseChildMessage, type DoneOutcome, type ExecMessage } from './protocol.js';

/** How an execution ended when the child did not answer it. */
export type KillReason = 'timeout' | 'memory' | 'abort' | 'crash' | 'protocol';

export type WorkerOutcome = { done: DoneOutcome } | { killed: KillReason; detail: string };

export interface WorkerOptions {
  memoryMb: number;
  cwd: string;
  limits: SandboxLimits;
  spawnTimeoutMs: number;
  /** Extra wall-clock time after `timeoutMs` before the child is killed from outside. */
  killGraceMs: number;
  /** Resident-memory ceiling in MiB above the heap limit (Node itself, files, buffers). */
  rssHeadroomMb: number;
  /** vm contexts the runner keeps for reuse (0: a fresh context per execution). */
  contexts: number;
}

const STDERR_TAIL = 4096;
const RSS_POLL_MS = 100;
const PAGE = 4096;

export class SandboxWorker {
  executions = 0;
  /** Set once the process is gone or condemned; it takes no more work. */
  dead = false;
  /** Due for recycling: serves only until its replacement is ready. */
  retiring = false;
  /**
   * Context keys the runner probably holds, least recently used first: the runner's own rule
   * (kept after an `ok` outcome, at most `contexts`) replayed here. A hint for routing only: the
   * runner may have dropped one (globals it could not reset, a full heap).
   */
  private readonly keys = new Set<string>();
  private readonly child: ChildProcess;
  private stderr = '';
  private nextId = 1;
  private pending: { id: number; key: string | undefined; finish: (o: WorkerOutcome) => void; onLog: (line: string) => void } | undefined;
  private readonly exitHandlers: Array<() => void> = [];
  private readyHook: (() => void) | undefined;

  private constructor(readonly options: WorkerOptions) {
    this.child = fork(RUNNER_PATH, runnerArgs(options.limits, options.contexts), sandboxForkOptions(options.memoryMb, options.cwd));
    this.child.stderr?.setEncoding('utf8');
    this.child.stderr?.on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-STDERR_TAIL);
    });
    this.child.on('message', (raw) => this.onMessage(raw));
    // 'close' rather than 'exit': stderr is complete by then (the heap-limit message).
    this.child.on('close', (code, signal) => this.onExit(code, signal));
    this.child.on('error', () => this.kill('crash', 'the sandbox process could not be started or signalled'));
  }

  get memoryMb(): number {
    return this.options.memoryMb;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Starts a process and resolves once its runner reports ready. */
  static start(options: WorkerOptions): Promise<SandboxWorker> {
    const worker = new SandboxWorker(options);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        worker.kill('crash', 'start timed out');
        reject(new Error(`The sandbox process did not start within ${options.spawnTimeoutMs} ms`));
      }, options.spawnTimeoutMs);
      worker.readyHook = () => {
        clearTimeout(timer);
        resolve(worker);
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

  /** Runs one execution; never rejects (every failure is an outcome). */
  exec(req: Omit<ExecMessage, 'v' | 't' | 'id'>, onLog: (line: string) => void, signal?: AbortSignal): Promise<WorkerOutcome> {
    if (this.dead || this.pending) return Promise.resolve({ killed: 'crash', detail: 'the sandbox process is not available' });
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timers: NodeJS.Timeout[] = [];
      const onAbort = () => this.kill('abort', 'the run was stopped');
      const finish = (o: WorkerOutcome) => {
        if (this.pending?.id !== id) return;
        this.pending = undefined;
        timers.forEach(clearTimeout);
        signal?.removeEventListener('abort', onAbort);
        resolve(o);
      };
      this.pending = { id, key: req.key, finish, onLog };
      if (req.key !== undefined) this.keys.delete(req.key); // taken out for this execution
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      timers.push(setTimeout(() => this.kill('timeout', `no answer within ${req.timeoutMs} ms`), req.timeoutMs + this.options.killGraceMs));
      this.watchMemory(id, timers);
      const msg: ExecMessage = { v: PROTOCOL_VERSION, t: 'exec', id, code: req.code, data: req.data, timeoutMs: req.timeoutMs };
      if (req.key !== undefined && this.options.contexts > 0) msg.key = req.key;
      this.child.send(msg, (err) => {
        if (err) this.kill('crash', 'the sandbox process did not accept the step');
      });
    });
  }

  /** Kills the process; an execution in flight ends with `reason`. */
  kill(reason: KillReason, detail: string): void {
    if (!this.dead) {
      this.dead = true;
      this.child.kill('SIGKILL');
    }
    this.pending?.finish({ killed: reason, detail });
  }

  /** Polls /proc for the child's resident size (Linux); elsewhere only the heap limit applies. */
  private watchMemory(id: number, timers: NodeJS.Timeout[]): void {
    const pid = this.child.pid;
    if (process.platform !== 'linux' || pid === undefined) return;
    const ceiling = (this.options.memoryMb + this.options.rssHeadroomMb) * 1024 * 1024;
    const tick = () => {
      readFile(`/proc/${pid}/statm`, 'utf8').then(
        (statm) => {
          if (this.pending?.id !== id) return;
          const rss = Number(statm.split(' ')[1]) * PAGE;
          if (rss > ceiling) this.kill('memory', `resident memory ${Math.round(rss / 1048576)} MiB over the ${Math.round(ceiling / 1048576)} MiB ceiling`);
          else timers.push(setTimeout(tick, RSS_POLL_MS));
        },
        () => undefined, // the process is gone; the exit handler reports it
      );
    };
    timers.push(setTimeout(tick, RSS_POLL_MS));
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
      if (this.keys.size > this.options.contexts) this.keys.delete(this.keys.values().next().value!);
    }
    pending.finish({ done });
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    this.dead = true;
    if (this.pending) {
      const oom = /heap limit|out of memory/i.test(this.stderr);
      this.pending.finish(
        oom
          ? { killed: 'memory', detail: `the JavaScript heap limit of ${this.options.memoryMb} MB was reached` }
          : { killed: 'crash', detail: `the sandbox process exited (${signal ?? `code ${code}`})${this.stderrSummary()}` },
      );
    }
    for (const fn of this.exitHandlers.splice(0)) fn();
  }

  private stderrSummary(): string {
    const line = this.stderr.trim().split('\n').filter(Boolean).pop();
    return line ? `: ${line.slice(0, 200)}` : '';
  }
}
