/**
 * A pool of warm sandbox processes for code steps (src/engine/README.md). Processes are grouped by heap
 * limit (`memoryMb`), because a V8 heap limit is fixed when a process starts:
 * - the default class (128 MB) keeps `size` processes warm from `start()` on;
 * - any other memoryMb gets its own class on first use, up to `size` processes, and its idle
 *   processes exit after `idleTimeoutMs`;
 * - all classes together hold at most `maxProcesses` processes: an idle process of another
 *   class is stopped to make room, otherwise the step waits.
 * A process serves one execution at a time, is recycled after `maxExecutionsPerProcess`
 * executions, and is replaced after a timeout, a crash or a kill. An execution runs in a fresh
 * vm context, or (`reuseContexts`, README.md "Context reuse") in the kept context of an earlier
 * execution of the same step code of the same organisation and workflow; such an execution
 * goes to an idle process that holds its context when there is one, else to any idle process.
 * Waiting for a process counts against the caller's AbortSignal (the run deadline), not
 * against the step's own timeoutMs, which starts when the step reaches a process.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../../config/logger.js';
import { DEFAULT_LIMITS, type SandboxLimits } from './limits.js';
import { MAX_CONTEXT_KEY } from './protocol.js';
import { checkFiles, LogCollector } from './results.js';
import type { SandboxPoolOptions, SandboxRequest, SandboxRun } from './types.js';
import { SandboxWorker, type WorkerOptions } from './worker.js';

export type { SandboxPoolOptions, SandboxRequest, SandboxRun, SandboxFile } from './types.js';

interface Waiter {
  memoryMb: number;
  key: string | undefined;
  resolve: (w: SandboxWorker) => void;
  reject: (e: Error) => void;
}

/** A key the runner accepts (it ends a process sent anything else), or none: a fresh context. */
function usableKey(key: string | undefined): string | undefined {
  return typeof key === 'string' && key.length > 0 && key.length <= MAX_CONTEXT_KEY ? key : undefined;
}

function contextsPerProcess(n: number | undefined): number {
  return n !== undefined && Number.isInteger(n) ? Math.min(Math.max(n, 0), 256) : 32;
}

export class SandboxPool {
  readonly size: number;
  readonly defaultMemoryMb: number;
  readonly limits: SandboxLimits;
  private readonly maxProcesses: number;
  private readonly maxExecutions: number;
  private readonly idleTimeoutMs: number;
  private readonly reuseContexts: boolean;
  private readonly workerOptions: Omit<WorkerOptions, 'memoryMb' | 'cwd'>;
  private readonly log: Logger | undefined;
  private readonly workers = new Set<SandboxWorker>();
  private readonly idle = new Map<SandboxWorker, NodeJS.Timeout | undefined>();
  private readonly starting = new Map<number, number>();
  private readonly spawning = new Set<Promise<void>>();
  /** Retiring processes whose replacement has started (or failed to): stopped when next idle. */
  private readonly replaced = new WeakSet<SandboxWorker>();
  private waiters: Waiter[] = [];
  private cwd: string | undefined;
  private warm = false;
  private closed = false;
  private spawnFailedAt = 0;
  private executions = 0;
  private reused = 0;

  constructor(options: SandboxPoolOptions = {}) {
    this.size = Math.max(1, options.size ?? 2);
    this.defaultMemoryMb = options.defaultMemoryMb ?? 128;
    this.maxProcesses = Math.max(this.size, options.maxProcesses ?? this.size * 2);
    this.maxExecutions = Math.max(1, options.maxExecutionsPerProcess ?? 1000);
    this.idleTimeoutMs = options.idleTimeoutMs ?? 30_000;
    this.reuseContexts = options.reuseContexts ?? true;
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.log = options.log;
    this.workerOptions = {
      limits: this.limits,
      spawnTimeoutMs: options.spawnTimeoutMs ?? 10_000,
      killGraceMs: options.killGraceMs ?? 500,
      rssHeadroomMb: options.rssHeadroomMb ?? 384,
      contexts: this.reuseContexts ? contextsPerProcess(options.contextsPerProcess) : 0,
    };
  }

  /** Starts the default class's warm processes; resolves when they are ready (or failed). */
  async start(): Promise<void> {
    this.warm = true;
    this.pump();
    const deadline = Date.now() + this.workerOptions.spawnTimeoutMs;
    while (!this.closed && (this.starting.get(this.defaultMemoryMb) ?? 0) > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /** Runs one code step; never rejects. */
  async run(req: SandboxRequest): Promise<SandboxRun> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    // Messages are capped again here: the child is not trusted.
    const fail = (outcome: SandboxRun['outcome'], text: string, logs: string[] = []): SandboxRun => ({ outcome, text: text.slice(0, 65_536), files: [], logs, durationMs: elapsed() });
    let data: string;
    try {
      data = JSON.stringify({ inputs: req.inputs ?? {}, steps: req.steps ?? [] });
    } catch (err) {
      return fail('error', `The step's inputs cannot be passed to the sandbox: ${(err as Error).message}`);
    }
    this.warm = true;
    const key = this.workerOptions.contexts > 0 ? usableKey(req.contextKey) : undefined;
    let worker: SandboxWorker;
    try {
      worker = await this.acquire(req.memoryMb ?? this.defaultMemoryMb, key, req.signal);
    } catch (err) {
      return req.signal?.aborted ? fail('aborted', 'The run was stopped before the step started') : fail('unavailable', (err as Error).message);
    }
    if (req.signal?.aborted) {
      this.release(worker, true, false); // untouched: back to the pool
      return fail('aborted', 'The run was stopped before the step started');
    }
    const logs = new LogCollector(this.limits);
    const out = await worker.exec({ code: req.code, data, timeoutMs: req.timeoutMs, key }, (line) => logs.push(line), req.signal);
    this.executions += 1;
    if ('done' in out && out.done.reused) this.reused += 1;
    // Only a process that answered normally is reused; after a timeout it is replaced too.
    this.release(worker, 'done' in out && out.done.outcome !== 'timeout');
    if ('killed' in out) {
      const outcome = { timeout: 'timeout', memory: 'memory', abort: 'aborted', crash: 'killed', protocol: 'killed' } as const;
      return fail(outcome[out.killed], out.detail, logs.lines);
    }
    const done = out.done;
    if (done.outcome === 'stalled') return fail('timeout', done.message, logs.lines);
    if (done.outcome !== 'ok') return fail(done.outcome, done.message, logs.lines);
    const checked = checkFiles(done.files, this.limits);
    if (typeof checked === 'string') return fail('error', checked, logs.lines);
    if (Buffer.byteLength(done.text) > this.limits.maxResultBytes) {
      return fail('error', `The step result is ${Buffer.byteLength(done.text)} bytes; the limit is ${this.limits.maxResultBytes} bytes`, logs.lines);
    }
    return { outcome: 'ok', kind: done.kind, text: done.text, files: checked, logs: logs.lines, durationMs: elapsed() };
  }

  /** Stops every process and refuses further work. */
  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.waiters.splice(0)) w.reject(new Error('The sandbox pool is closed'));
    const exits = [...this.workers].map((w) => new Promise<void>((r) => w.onExitOnce(r)));
    for (const w of this.workers) w.kill('crash', 'the sandbox pool was closed');
    // Processes still starting are killed as they come up (spawn()); wait for both kinds.
    const all = Promise.all([...exits, ...this.spawning]);
    await Promise.race([all, new Promise((r) => setTimeout(r, 2000).unref())]);
    if (this.cwd) rmSync(this.cwd, { recursive: true, force: true });
  }

  /** Process ids of the live sandbox processes (observability and tests). */
  pids(): number[] {
    return [...this.workers].filter((w) => !w.dead && w.pid !== undefined).map((w) => w.pid!);
  }

  /**
   * `executions` that reached a process; `reusedContexts`: how many of them ran in a kept
   * context, as the processes report it.
   */
  stats(): { processes: number; idle: number; starting: number; waiting: number; executions: number; reusedContexts: number } {
    let starting = 0;
    for (const n of this.starting.values()) starting += n;
    return { processes: this.workers.size, idle: this.idle.size, starting, waiting: this.waiters.length, executions: this.executions, reusedContexts: this.reused };
  }

  private acquire(memoryMb: number, key: string | undefined, signal?: AbortSignal): Promise<SandboxWorker> {
    if (this.closed) return Promise.reject(new Error('The sandbox pool is closed'));
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error('aborted'));
      };
      const waiter: Waiter = {
        memoryMb,
        key,
        resolve: (w) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(w);
        },
        reject: (e) => {
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
      };
      if (signal?.aborted) return reject(new Error('aborted'));
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
      this.pump();
    });
  }

  private release(worker: SandboxWorker, reusable: boolean, ran = true): void {
    if (ran) worker.executions += 1;
    const due = worker.executions >= this.maxExecutions;
    if (!reusable || worker.dead || this.closed || this.replaced.has(worker) || (due && !this.retire(worker))) {
      worker.kill('crash', 'recycled'); // its exit removes it and starts a replacement if needed
      return;
    }
    this.makeIdle(worker);
    this.pump();
  }

  /**
   * Recycling without a cold start on the critical path: a process due for recycling keeps
   * serving until its replacement is ready, then exits (so "recycled after N" means after N
   * or a few more). False when there is no room for the replacement or every step must have a
   * fresh process (the process is then stopped at once).
   */
  private retire(worker: SandboxWorker): boolean {
    if (worker.retiring) return true;
    // maxExecutionsPerProcess 1 promises a fresh process per step: no extra execution.
    if (this.maxExecutions === 1 || this.total() >= this.maxProcesses) return false;
    worker.retiring = true;
    this.spawn(worker.memoryMb, () => {
      this.replaced.add(worker); // also when the replacement failed: recycle it anyway
      if (this.idle.has(worker)) {
        this.takeIdle(worker);
        worker.kill('crash', 'recycled');
      }
    });
    return true;
  }

  private makeIdle(worker: SandboxWorker): void {
    let timer: NodeJS.Timeout | undefined;
    if (worker.memoryMb !== this.defaultMemoryMb) {
      timer = setTimeout(() => worker.kill('crash', 'idle'), this.idleTimeoutMs);
      timer.unref();
    }
    this.idle.set(worker, timer);
  }

  private takeIdle(worker: SandboxWorker): void {
    clearTimeout(this.idle.get(worker));
    this.idle.delete(worker);
  }

  private classCount(memoryMb: number): number {
    let n = this.starting.get(memoryMb) ?? 0;
    for (const w of this.workers) if (w.memoryMb === memoryMb && !w.dead) n += 1;
    return n;
  }

  private total(): number {
    let n = this.workers.size;
    for (const s of this.starting.values()) n += s;
    return n;
  }

  /** Hands idle processes to waiters, starts processes where needed, keeps the default warm. */
  private pump(): void {
    if (this.closed) return;
    for (const waiter of [...this.waiters]) {
      const worker = this.pick(waiter);
      if (!worker) continue;
      this.takeIdle(worker);
      this.waiters = this.waiters.filter((w) => w !== waiter);
      waiter.resolve(worker);
    }
    const wanted = new Map<number, number>();
    for (const w of this.waiters) wanted.set(w.memoryMb, (wanted.get(w.memoryMb) ?? 0) + 1);
    for (const [memoryMb, count] of wanted) {
      let need = count - (this.starting.get(memoryMb) ?? 0);
      while (need > 0 && this.classCount(memoryMb) < this.size && this.makeRoom(memoryMb)) {
        this.spawn(memoryMb);
        need -= 1;
      }
    }
    // Keep the default class warm, but do not retry a failing start in a loop.
    const recentFailure = Date.now() - this.spawnFailedAt < 5_000;
    while (this.warm && !recentFailure && this.classCount(this.defaultMemoryMb) < this.size && this.total() < this.maxProcesses) {
      this.spawn(this.defaultMemoryMb);
    }
  }

  /**
   * The idle process for a waiter: one holding its context (affinity), else any; a process
   * not due for recycling before one that is.
   */
  private pick(waiter: Waiter): SandboxWorker | undefined {
    let best: SandboxWorker | undefined;
    let bestRank = 0;
    for (const w of this.idle.keys()) {
      if (w.memoryMb !== waiter.memoryMb || w.dead) continue;
      const rank = (w.retiring ? 1 : 3) + (waiter.key !== undefined && w.holds(waiter.key) ? 1 : 0);
      if (rank === 4) return w;
      if (rank > bestRank) [best, bestRank] = [w, rank];
    }
    return best;
  }

  /** True when a process of `memoryMb` may start, stopping an idle one of another class if needed. */
  private makeRoom(memoryMb: number): boolean {
    if (this.total() < this.maxProcesses) return true;
    const victim = [...this.idle.keys()].find((w) => w.memoryMb !== memoryMb);
    if (!victim) return false;
    this.takeIdle(victim);
    this.workers.delete(victim); // counted out now; its exit follows
    victim.kill('crash', 'evicted');
    return true;
  }

  private spawn(memoryMb: number, settled?: () => void): void {
    this.cwd ??= mkdtempSync(path.join(os.tmpdir(), 'switchyard-sandbox-'));
    this.starting.set(memoryMb, (this.starting.get(memoryMb) ?? 0) + 1);
    const done = () => this.starting.set(memoryMb, (this.starting.get(memoryMb) ?? 1) - 1);
    const spawning: Promise<void> = SandboxWorker.start({ ...this.workerOptions, memoryMb, cwd: this.cwd }).then(
      async (worker) => {
        done();
        if (this.closed) {
          const exited = new Promise<void>((r) => worker.onExitOnce(r));
          worker.kill('crash', 'the sandbox pool was closed');
          return exited;
        }
        this.workers.add(worker);
        worker.onExitOnce(() => {
          this.workers.delete(worker);
          this.takeIdle(worker);
          this.pump();
        });
        this.makeIdle(worker);
        settled?.();
        this.pump();
      },
      (err: Error) => {
        done();
        settled?.();
        this.spawnFailedAt = Date.now();
        this.log?.error({ err, memoryMb }, 'sandbox process failed to start');
        // Waiters of this class fail unless another process of the class is on its way.
        if (this.classCount(memoryMb) === 0) {
          for (const w of this.waiters.filter((x) => x.memoryMb === memoryMb)) {
            this.waiters = this.waiters.filter((x) => x !== w);
            w.reject(new Error(`The code sandbox is unavailable: ${err.message}`));
          }
        }
      },
    );
    this.spawning.add(spawning);
    void spawning.finally(() => this.spawning.delete(spawning));
  }
}
