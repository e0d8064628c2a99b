/**
 * A pool of code runner processes (README.md "Pool"). A process is bound to one organisation at
 * its first execution and never serves another:
 * - `size` unbound processes are kept warm from `start()` on (spares); an organisation's first
 *   step takes one and binds it, and a new spare starts in its place;
 * - an organisation has at most `size` processes; all processes together at most
 *   `maxProcesses`: an idle process of another organisation is stopped to make room, otherwise
 *   the step waits;
 * - a bound process idle for `idleTimeoutMs` exits; a process is replaced after
 *   `maxExecutionsPerProcess` executions, a timeout, a crash or a kill.
 * An execution runs in a fresh context of its memory class's isolate, or (`reuseContexts`,
 * README.md "Context reuse") in the kept context of an earlier execution of the same step code
 * of the same organisation and workflow; it goes to an idle process of its organisation that
 * holds that context when there is one. Waiting for a process counts against the caller's
 * AbortSignal (the run deadline), not against the step's own timeoutMs.
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
  orgId: string;
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
  private readonly workerOptions: Omit<WorkerOptions, 'cwd'>;
  private readonly log: Logger | undefined;
  private readonly workers = new Set<SandboxWorker>();
  /** Idle processes, with the timer that stops a bound one after idleTimeoutMs. */
  private readonly idle = new Map<SandboxWorker, NodeJS.Timeout | undefined>();
  private starting = 0;
  private readonly spawning = new Set<Promise<void>>();
  private waiters: Waiter[] = [];
  private cwd: string | undefined;
  private warm = false;
  private closed = false;
  private spawnFailedAt = 0;
  private executions = 0;
  private reused = 0;

  constructor(options: SandboxPoolOptions) {
    this.size = Math.max(1, options.size ?? 2);
    this.defaultMemoryMb = options.defaultMemoryMb ?? 128;
    this.maxProcesses = Math.max(this.size, options.maxProcesses ?? this.size * 2);
    this.maxExecutions = Math.max(1, options.maxExecutionsPerProcess ?? 10_000);
    this.idleTimeoutMs = options.idleTimeoutMs ?? 30_000;
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.log = options.log;
    this.workerOptions = {
      isolation: options.isolation,
      limits: this.limits,
      spawnTimeoutMs: options.spawnTimeoutMs ?? 10_000,
      killGraceMs: options.killGraceMs ?? 500,
      rssHeadroomMb: options.rssHeadroomMb ?? 384,
      contexts: (options.reuseContexts ?? true) ? contextsPerProcess(options.contextsPerProcess) : 0,
      defaultMemoryMb: this.defaultMemoryMb,
      breach: options.breach ?? 'off',
    };
  }

  /** Starts the warm spares; resolves when they are ready (or failed). */
  async start(): Promise<void> {
    this.warm = true;
    this.pump();
    const deadline = Date.now() + this.workerOptions.spawnTimeoutMs;
    while (!this.closed && this.starting > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /** Runs one code step; never rejects. */
  async run(req: SandboxRequest): Promise<SandboxRun> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    // Messages are capped again here: the child is not trusted.
    const fail = (outcome: SandboxRun['outcome'], text: string, logs: string[] = [], runner?: number): SandboxRun => ({
      outcome,
      text: text.slice(0, 65_536),
      files: [],
      logs,
      durationMs: elapsed(),
      runner,
    });
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
      worker = await this.acquire(req.orgId, key, req.signal);
    } catch (err) {
      return req.signal?.aborted
        ? fail('aborted', 'The run was stopped before the step started')
        : fail('unavailable', (err as Error).message);
    }
    if (req.signal?.aborted) {
      this.release(worker, { reusable: true, ran: false }); // untouched: back to the pool
      return fail('aborted', 'The run was stopped before the step started');
    }
    const logs = new LogCollector(this.limits);
    const memoryMb = req.memoryMb ?? this.defaultMemoryMb;
    const out = await worker.exec(
      { code: req.code, data, timeoutMs: req.timeoutMs, memoryMb, key },
      (line) => logs.push(line),
      req.signal,
    );
    this.executions += 1;
    if ('done' in out && out.done.reused) this.reused += 1;
    // Only a process that answered normally is reused; after a timeout it is replaced too.
    this.release(worker, { reusable: 'done' in out && out.done.outcome !== 'timeout' });
    const runner = worker.serial;
    if ('killed' in out) {
      const outcome = {
        timeout: 'timeout',
        memory: 'memory',
        abort: 'aborted',
        crash: 'killed',
        protocol: 'killed',
      } as const;
      return fail(outcome[out.killed], out.detail, logs.lines, runner);
    }
    const done = out.done;
    if (done.outcome === 'stalled') return fail('timeout', done.message, logs.lines, runner);
    if (done.outcome !== 'ok') return fail(done.outcome, done.message, logs.lines, runner);
    const checked = checkFiles(done.files, this.limits);
    if (typeof checked === 'string') return fail('error', checked, logs.lines, runner);
    if (Buffer.byteLength(done.text) > this.limits.maxResultBytes) {
      return fail(
        'error',
        `The step result is ${Buffer.byteLength(done.text)} bytes; the limit is ${this.limits.maxResultBytes} bytes`,
        logs.lines,
        runner,
      );
    }
    return {
      outcome: 'ok',
      kind: done.kind,
      text: done.text,
      files: checked,
      logs: logs.lines,
      durationMs: elapsed(),
      runner,
    };
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

  /** Process ids of the live runner processes as the service started them (observability and tests). */
  pids(): number[] {
    return [...this.workers].filter((w) => !w.dead && w.pid !== undefined).map((w) => w.pid!);
  }

  /** The contained trees of the live runners, by organisation (unbound: `''`); the runner is each tree's last pid. */
  trees(): Array<{ orgId: string; pids: readonly number[] }> {
    return [...this.workers].filter((w) => !w.dead).map((w) => ({ orgId: w.orgId ?? '', pids: w.tree }));
  }

  /**
   * `executions` that reached a process; `reusedContexts`: how many of them ran in a kept
   * context, as the processes report it; `spares`: started processes no organisation has yet.
   */
  stats(): {
    processes: number;
    idle: number;
    starting: number;
    waiting: number;
    spares: number;
    executions: number;
    reusedContexts: number;
  } {
    const spares = this.counts().get(undefined) ?? 0;
    return {
      processes: this.workers.size,
      idle: this.idle.size,
      starting: this.starting,
      waiting: this.waiters.length,
      spares,
      executions: this.executions,
      reusedContexts: this.reused,
    };
  }

  private acquire(orgId: string, key: string | undefined, signal?: AbortSignal): Promise<SandboxWorker> {
    if (this.closed) return Promise.reject(new Error('The sandbox pool is closed'));
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error('aborted'));
      };
      const waiter: Waiter = {
        orgId,
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

  private release(worker: SandboxWorker, { reusable, ran = true }: { reusable: boolean; ran?: boolean }): void {
    if (ran) worker.executions += 1;
    const due = worker.executions >= this.maxExecutions;
    if (!reusable || due || worker.dead || this.closed) {
      worker.kill('crash', 'recycled'); // its exit removes it; pump() starts a spare in its place
      return;
    }
    this.makeIdle(worker);
    this.pump();
  }

  private makeIdle(worker: SandboxWorker): void {
    let timer: NodeJS.Timeout | undefined;
    if (worker.orgId !== undefined) {
      timer = setTimeout(() => {
        this.takeIdle(worker);
        worker.kill('crash', 'idle');
      }, this.idleTimeoutMs);
      timer.unref();
    }
    this.idle.set(worker, timer);
  }

  private takeIdle(worker: SandboxWorker): void {
    clearTimeout(this.idle.get(worker));
    this.idle.delete(worker);
  }

  /** Live processes per organisation (spares under `undefined`). */
  private counts(): Map<string | undefined, number> {
    const counts = new Map<string | undefined, number>();
    for (const w of this.workers) if (!w.dead) counts.set(w.orgId, (counts.get(w.orgId) ?? 0) + 1);
    return counts;
  }

  private spareCount(): number {
    return this.starting + (this.counts().get(undefined) ?? 0);
  }

  private total(): number {
    return this.workers.size + this.starting;
  }

  /**
   * Hands idle processes to waiters, binds spares, keeps `size` spares warm within maxProcesses.
   * Linear in the waiters: once an organisation's waiter finds no process, its later waiters
   * are not looked at again in this pass.
   */
  private pump(): void {
    if (this.closed) return;
    const counts = this.counts();
    const stuck = new Set<string>();
    const left: Waiter[] = [];
    for (const waiter of this.waiters) {
      const worker = stuck.has(waiter.orgId) ? undefined : this.pick(waiter, counts.get(waiter.orgId) ?? 0);
      if (!worker) {
        stuck.add(waiter.orgId);
        left.push(waiter);
        continue;
      }
      this.takeIdle(worker);
      if (worker.orgId === undefined) {
        worker.orgId = waiter.orgId;
        counts.set(undefined, (counts.get(undefined) ?? 1) - 1);
        counts.set(waiter.orgId, (counts.get(waiter.orgId) ?? 0) + 1);
      }
      waiter.resolve(worker);
    }
    this.waiters = left;
    // Spares for waiting organisations first (within their share), then warm ones for the next.
    const recentFailure = Date.now() - this.spawnFailedAt < 5_000;
    const spares = () => this.starting + (counts.get(undefined) ?? 0);
    let need = 0;
    for (const orgId of stuck) if ((counts.get(orgId) ?? 0) < this.size) need += 1;
    need = Math.max(0, need - spares());
    while (need > 0 && this.makeRoom()) {
      this.spawn();
      need -= 1;
    }
    while (this.warm && !recentFailure && spares() < this.size && this.total() < this.maxProcesses) this.spawn();
  }

  /**
   * The idle process for a waiter: one of its organisation holding its context (affinity), else
   * one of its organisation, else a spare while the organisation (with `own` processes) is under
   * its share.
   */
  private pick(waiter: Waiter, own: number): SandboxWorker | undefined {
    let mine: SandboxWorker | undefined;
    let spare: SandboxWorker | undefined;
    for (const w of this.idle.keys()) {
      if (w.dead) continue;
      if (w.orgId === waiter.orgId) {
        if (waiter.key !== undefined && w.holds(waiter.key)) return w;
        mine ??= w;
      } else if (w.orgId === undefined) {
        spare ??= w;
      }
    }
    if (mine) return mine;
    return spare && own < this.size ? spare : undefined;
  }

  /** True when a process may start, stopping an idle process of an organisation if needed. */
  private makeRoom(): boolean {
    if (this.total() < this.maxProcesses) return true;
    const victim = [...this.idle.keys()].find((w) => w.orgId !== undefined);
    if (!victim) return false;
    this.takeIdle(victim);
    this.workers.delete(victim); // counted out now; its exit follows
    victim.kill('crash', 'evicted');
    return true;
  }

  private spawn(): void {
    this.cwd ??= mkdtempSync(path.join(os.tmpdir(), 'switchyard-sandbox-'));
    this.starting += 1;
    const spawning: Promise<void> = SandboxWorker.start({ ...this.workerOptions, cwd: this.cwd }).then(
      async (worker) => {
        this.starting -= 1;
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
        this.pump();
      },
      (err: Error) => {
        this.starting -= 1;
        this.spawnFailedAt = Date.now();
        this.log?.error({ err }, 'sandbox process failed to start');
        // Waiters fail unless another process is on its way.
        if (this.spareCount() === 0) {
          const counts = this.counts();
          const failing = this.waiters.filter((x) => !counts.has(x.orgId));
          this.waiters = this.waiters.filter((x) => counts.has(x.orgId));
          for (const w of failing) w.reject(new Error(`The code sandbox is unavailable: ${err.message}`));
        }
      },
    );
    this.spawning.add(spawning);
    void spawning.finally(() => this.spawning.delete(spawning));
  }
}
