/**
 * A pool of code runner processes (README.md "Pool"). A process is bound to one organisation at
 * its first execution and never serves another:
 * - processes are sized by the tenant memory budget (src/containment/budget.ts), not counted:
 *   each is admitted with the idle runner's expected size (RUNNER_EXPECTED_BYTES), refined from
 *   measurements of its tree's proportional set size; it is busy in the budget while it executes
 *   or waits as a spare, idle (evictable, least recently used first) when idle, and released when
 *   it exits; when the budget would be passed, idle processes of any organisation (and idle
 *   browser boxes) are stopped to make room, otherwise the step waits;
 * - `size` unbound processes that never executed anything are kept warm (spares): an
 *   organisation's step without an idle process of its own takes one and binds it, and a new
 *   spare starts in its place in the background;
 * - an organisation has at most `size` processes, so that one organisation's burst cannot take
 *   the whole budget, and takes a second one only when its steps queue (GROW_QUEUE, GROW_AFTER_MS);
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
import { MemoryBudget, pssBytes, type BudgetMember } from '../../containment/index.js';
import { sampleOnScrape, sandboxRunners, sandboxRunnerStart, tenantMemory } from '../../kernel/metrics.js';
import { DEFAULT_LIMITS, type SandboxLimits } from './limits.js';
import { MAX_CONTEXT_KEY } from './protocol.js';
import { checkFiles, LogCollector } from './results.js';
import type { SandboxPoolOptions, SandboxRequest, SandboxRun } from './types.js';
import { SandboxWorker, type WorkerOptions } from './worker.js';

export type { SandboxPoolOptions, SandboxRequest, SandboxRun, SandboxFile } from './types.js';

const MiB = 1024 * 1024;

/**
 * The memory an idle runner is admitted with, until its tree is measured: its proportional set
 * size (PSS: shared pages divided between the processes that map them), rounded up. Measured
 * (bench/README.md "Many organisations"): an idle contained runner's tree (bubblewrap, the
 * namespace's first process, the runner) holds 53 MiB resident but 11.6–14.9 MiB PSS (10.7 MiB of
 * it private) with 40 to 4 runners alive, and 12.2–16.4 MiB after its first execution; Node's
 * own code pages are shared by every runner.
 */
export const RUNNER_EXPECTED_BYTES = 16 * MiB;

/**
 * The budget of a pool given none (unit tests, embedded uses without a service): the smallest
 * TENANT_MEMORY_MB, 256 MiB, about 16 idle runners.
 */
export const FALLBACK_BUDGET_BYTES = 256 * MiB;

/**
 * How often processes that executed since they were last measured have their tree's PSS read
 * (about 1.5 ms of CPU per tree here: 200 busy runners cost 10 ms a second).
 */
const MEASURE_EVERY_MS = 30_000;

/** A step waiting for room in a budget full of busy members looks again this often (memory freed elsewhere, e.g. a browser box). */
const RETRY_ROOM_MS = 100;

/**
 * An organisation that has a runner gets another (up to `size`) only when its steps queue: at
 * least GROW_QUEUE of them wait, or one has waited GROW_AFTER_MS while a runner of it has been
 * executing one step as long (a long step). A runner answers a short step in well under a
 * millisecond, so a step waiting behind a short one of its organisation costs less than a new
 * process (about 50 ms of CPU) and a spare taken from the organisations that have none.
 */
const GROW_QUEUE = 4;
const GROW_AFTER_MS = 200;

/** Spares beyond `size` exit after this long idle. */
const EXCESS_SPARE_MS = 30_000;

/** Start durations kept for `stats()` (the last ones). */
const START_SAMPLES = 512;

interface Waiter {
  orgId: string;
  key: string | undefined;
  /** When it began to wait (performance.now()). */
  since: number;
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

function percentile(sorted: number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export class SandboxPool {
  readonly size: number;
  readonly defaultMemoryMb: number;
  readonly limits: SandboxLimits;
  /** The memory budget its processes are admitted to (the service's, or one of its own). */
  readonly budget: MemoryBudget;
  private readonly expectedBytes: number;
  private readonly maxExecutions: number;
  private readonly idleTimeoutMs: number;
  private readonly workerOptions: Omit<WorkerOptions, 'cwd'>;
  private readonly log: Logger | undefined;
  private readonly workers = new Set<SandboxWorker>();
  /** Each live process's place in the budget. */
  private readonly members = new Map<SandboxWorker, BudgetMember>();
  /** Executions a process had when its tree was last measured. */
  private readonly measured = new Map<SandboxWorker, number>();
  /** Idle processes, with the timer that stops a bound one after idleTimeoutMs. */
  private readonly idle = new Map<SandboxWorker, NodeJS.Timeout | undefined>();
  /** The same, by organisation (spares under `undefined`): a step looks only at its own. */
  private readonly idleByOrg = new Map<string | undefined, Set<SandboxWorker>>();
  private starting = 0;
  private readonly spawning = new Set<Promise<void>>();
  private waiters: Waiter[] = [];
  private cwd: string | undefined;
  private warm = false;
  private closed = false;
  private spawnFailedAt = 0;
  private executions = 0;
  private reused = 0;
  private evicted = 0;
  private starts = 0;
  private readonly startMs: number[] = [];
  private measureTimer: NodeJS.Timeout | undefined;
  private measuring = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly stopSampling: Array<() => void> = [];

  constructor(options: SandboxPoolOptions) {
    this.size = Math.max(1, options.size ?? 2);
    this.defaultMemoryMb = options.defaultMemoryMb ?? 128;
    this.budget = options.budget ?? new MemoryBudget(FALLBACK_BUDGET_BYTES);
    this.expectedBytes = options.runnerBytes ?? RUNNER_EXPECTED_BYTES;
    this.maxExecutions = Math.max(1, options.maxExecutionsPerProcess ?? 10_000);
    this.idleTimeoutMs = options.idleTimeoutMs ?? 300_000;
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
    // Only the service's pool (given the service's budget) reports to the metrics.
    if (options.budget) {
      this.stopSampling.push(
        sampleOnScrape(sandboxRunners, () => {
          const s = this.stats();
          sandboxRunners.set({ state: 'spare' }, s.spares);
          sandboxRunners.set({ state: 'idle' }, s.idle - s.spares);
          sandboxRunners.set({ state: 'busy' }, s.processes - s.idle);
          sandboxRunners.set({ state: 'starting' }, s.starting);
          sandboxRunners.set({ state: 'waiting' }, s.waiting);
        }),
        sampleOnScrape(tenantMemory, () => {
          tenantMemory.set({ state: 'total' }, this.budget.totalBytes);
          tenantMemory.set({ state: 'used' }, this.budget.usedBytes());
        }),
      );
    }
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
      { orgId: req.orgId, code: req.code, data, timeoutMs: req.timeoutMs, memoryMb, key },
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
    clearInterval(this.measureTimer);
    clearTimeout(this.retryTimer);
    for (const stop of this.stopSampling.splice(0)) stop();
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
   * context, as the processes report it; `spares`: started processes no organisation has yet;
   * `evicted`: idle processes stopped to make room in the budget; `starts`, `startP50Ms`,
   * `startP99Ms`: process starts (spawn to ready) and their durations over the last 512;
   * `bytes`: the memory of its processes as the budget counts it.
   */
  stats(): {
    processes: number;
    idle: number;
    starting: number;
    waiting: number;
    spares: number;
    executions: number;
    reusedContexts: number;
    evicted: number;
    starts: number;
    startP50Ms: number | undefined;
    startP99Ms: number | undefined;
    bytes: number;
  } {
    const spares = this.counts().get(undefined) ?? 0;
    const sorted = [...this.startMs].sort((a, b) => a - b);
    return {
      processes: this.workers.size,
      idle: this.idle.size,
      starting: this.starting,
      waiting: this.waiters.length,
      spares,
      executions: this.executions,
      reusedContexts: this.reused,
      evicted: this.evicted,
      starts: this.starts,
      startP50Ms: percentile(sorted, 50),
      startP99Ms: percentile(sorted, 99),
      bytes: this.memberBytes(),
    };
  }

  private acquire(orgId: string, key: string | undefined, signal?: AbortSignal): Promise<SandboxWorker> {
    if (this.closed) return Promise.reject(new Error('The sandbox pool is closed'));
    if (this.expectedBytes > this.budget.totalBytes) {
      return Promise.reject(
        new Error(
          `A code runner needs about ${Math.ceil(this.expectedBytes / MiB)} MiB; the tenant memory budget (TENANT_MEMORY_MB) is ${Math.floor(this.budget.totalBytes / MiB)} MiB`,
        ),
      );
    }
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error('aborted'));
      };
      const waiter: Waiter = {
        orgId,
        key,
        since: performance.now(),
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

  /**
   * Idle: a bound process becomes evictable in the budget (the most recently used last) and
   * exits after idleTimeoutMs; a spare stays reserved (busy in the budget), as it is the
   * fast path of the next organisation, and exits after 30 s idle only while more than `size`
   * spares are warm.
   */
  private makeIdle(worker: SandboxWorker): void {
    const spare = worker.orgId === undefined;
    const timer = setTimeout(
      () => {
        // Spares beyond `size` (started for steps that were served otherwise meanwhile) go too.
        if (spare && (this.counts().get(undefined) ?? 0) <= this.size) return this.makeIdle(worker);
        this.takeIdle(worker);
        worker.kill('crash', 'idle');
      },
      spare ? Math.min(this.idleTimeoutMs, EXCESS_SPARE_MS) : this.idleTimeoutMs,
    );
    timer.unref();
    if (worker.orgId !== undefined) this.members.get(worker)?.idle();
    this.idle.set(worker, timer);
    let set = this.idleByOrg.get(worker.orgId);
    if (!set) this.idleByOrg.set(worker.orgId, (set = new Set()));
    set.add(worker);
  }

  /** Out of the idle set: in use (busy in the budget) or on its way out. */
  private takeIdle(worker: SandboxWorker): void {
    clearTimeout(this.idle.get(worker));
    this.idle.delete(worker);
    const set = this.idleByOrg.get(worker.orgId);
    set?.delete(worker);
    if (set?.size === 0) this.idleByOrg.delete(worker.orgId);
    this.members.get(worker)?.busy();
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

  private memberBytes(): number {
    let bytes = 0;
    for (const w of this.workers) bytes += this.members.get(w)?.bytes ?? 0;
    return bytes;
  }

  /**
   * Hands idle processes to waiters (oldest first), binds spares, starts processes for waiting
   * organisations within the budget, keeps `size` spares warm. Linear in the waiters: once an
   * organisation's waiter finds no process, its later waiters are not looked at again in this
   * pass.
   */
  private pump(): void {
    if (this.closed) return;
    const counts = this.counts();
    const now = performance.now();
    const queued = new Map<string, number>();
    for (const waiter of this.waiters) queued.set(waiter.orgId, (queued.get(waiter.orgId) ?? 0) + 1);
    /** Organisations with a waiter left, and since when their oldest waits. */
    const stuck = new Map<string, number>();
    const left: Waiter[] = [];
    for (const waiter of this.waiters) {
      const own = counts.get(waiter.orgId) ?? 0;
      const worker = stuck.has(waiter.orgId)
        ? undefined
        : this.pick(waiter, {
            grow: this.mayGrow(waiter.orgId, { own, queued: queued.get(waiter.orgId) ?? 0, since: waiter.since, now }),
          });
      if (!worker) {
        if (!stuck.has(waiter.orgId)) stuck.set(waiter.orgId, waiter.since);
        left.push(waiter);
        continue;
      }
      this.takeIdle(worker);
      if (worker.orgId === undefined) {
        // A spare: it never executed anything (bind() refuses any other), so nothing of another
        // organisation is in it.
        worker.bind(waiter.orgId);
        this.members.get(worker)!.orgId = waiter.orgId;
        counts.set(undefined, (counts.get(undefined) ?? 1) - 1);
        counts.set(waiter.orgId, (counts.get(waiter.orgId) ?? 0) + 1);
      }
      waiter.resolve(worker);
    }
    this.waiters = left;
    // Processes for waiting organisations first (within their share), then warm spares.
    const recentFailure = Date.now() - this.spawnFailedAt < 5_000;
    const spares = () => this.starting + (counts.get(undefined) ?? 0);
    let need = 0;
    let growIn: number | undefined;
    for (const [orgId, since] of stuck) {
      const own = counts.get(orgId) ?? 0;
      if (own >= this.size) continue;
      if (this.mayGrow(orgId, { own, queued: queued.get(orgId) ?? 0, since, now })) need += 1;
      else growIn = Math.min(growIn ?? GROW_AFTER_MS, Math.max(1, since + GROW_AFTER_MS - now));
    }
    need = Math.max(0, need - spares());
    let refused = false;
    while (need > 0) {
      if (!this.spawn()) {
        refused = true;
        break;
      }
      need -= 1;
    }
    while (this.warm && !recentFailure && spares() < this.size) if (!this.spawn()) break;
    // Look again when a process of ours changes state, and also: shortly, when the budget is full
    // of busy members (another owner may free memory meanwhile); when a waiting organisation
    // may grow.
    const again = refused ? RETRY_ROOM_MS : growIn;
    if (again !== undefined && this.retryTimer === undefined) {
      this.retryTimer = setTimeout(
        () => {
          this.retryTimer = undefined;
          this.pump();
        },
        Math.max(1, Math.ceil(again)),
      );
      this.retryTimer.unref();
    }
  }

  /**
   * Whether an organisation with `own` processes (all busy) may take another: none yet, or its
   * steps queue (GROW_QUEUE waiting, or one waiting GROW_AFTER_MS behind a step running as long).
   */
  private mayGrow(
    orgId: string,
    { own, queued, since, now }: { own: number; queued: number; since: number; now: number },
  ): boolean {
    if (own === 0) return true;
    if (own >= this.size) return false;
    if (queued >= GROW_QUEUE) return true;
    if (now - since < GROW_AFTER_MS) return false;
    for (const w of this.workers) {
      if (w.orgId === orgId && w.busySince !== undefined && now - w.busySince >= GROW_AFTER_MS) return true;
    }
    return false;
  }

  /**
   * The idle process for a waiter: one of its organisation holding its context (affinity), else
   * one of its organisation, else a spare when the organisation may take another (`grow`).
   */
  private pick(waiter: Waiter, { grow }: { grow: boolean }): SandboxWorker | undefined {
    let mine: SandboxWorker | undefined;
    for (const w of this.idleByOrg.get(waiter.orgId) ?? []) {
      if (w.dead) continue;
      if (waiter.key !== undefined && w.holds(waiter.key)) return w;
      mine ??= w;
    }
    if (mine || !grow) return mine;
    for (const w of this.idleByOrg.get(undefined) ?? []) if (!w.dead) return w;
    return undefined;
  }

  /** Stops an idle process the budget evicted (its memory is counted free already). */
  private evict(worker: SandboxWorker): void {
    this.takeIdle(worker);
    this.workers.delete(worker); // counted out now; its exit follows
    this.members.delete(worker);
    this.evicted += 1;
    worker.kill('crash', 'evicted');
  }

  /**
   * Starts a process if the budget admits one (evicting idle processes least recently used
   * first as needed); false when it does not. It starts unbound (a spare), reserved in the budget.
   */
  private spawn(): boolean {
    const slot: { worker?: SandboxWorker } = {};
    const member = this.budget.admit('runner', {
      orgId: undefined,
      expectedBytes: this.expectedBytes,
      evict: () => {
        if (slot.worker) this.evict(slot.worker);
      },
    });
    if (!member) return false;
    this.cwd ??= mkdtempSync(path.join(os.tmpdir(), 'switchyard-sandbox-'));
    this.starting += 1;
    const began = performance.now();
    const spawning: Promise<void> = SandboxWorker.start({ ...this.workerOptions, cwd: this.cwd }).then(
      async (worker) => {
        this.starting -= 1;
        this.recordStart(performance.now() - began);
        if (this.closed) {
          member.release();
          const exited = new Promise<void>((r) => worker.onExitOnce(r));
          worker.kill('crash', 'the sandbox pool was closed');
          return exited;
        }
        slot.worker = worker;
        this.workers.add(worker);
        this.members.set(worker, member);
        worker.onExitOnce(() => {
          this.workers.delete(worker);
          this.takeIdle(worker);
          this.members.delete(worker);
          this.measured.delete(worker);
          member.release();
          this.pump();
        });
        this.makeIdle(worker);
        this.measureSoon();
        this.pump();
      },
      (err: Error) => {
        this.starting -= 1;
        member.release();
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
    return true;
  }

  private recordStart(ms: number): void {
    this.starts += 1;
    this.startMs.push(ms);
    if (this.startMs.length > START_SAMPLES) this.startMs.shift();
    sandboxRunnerStart.observe(ms / 1000);
  }

  /** Starts the periodic measurement of the processes' memory (once; it stops with close()). */
  private measureSoon(): void {
    if (this.measureTimer !== undefined || process.platform !== 'linux') return;
    this.measureTimer = setInterval(() => void this.measure(), MEASURE_EVERY_MS);
    this.measureTimer.unref();
  }

  /**
   * Reads the PSS of the tree of each process that executed since it was last measured (or was
   * never measured) and tells the budget: off the path of any step, a few /proc reads per
   * process that ran.
   */
  private async measure(): Promise<void> {
    if (this.measuring || this.closed) return;
    this.measuring = true;
    try {
      for (const worker of [...this.workers]) {
        if (worker.dead || worker.tree.length === 0 || this.measured.get(worker) === worker.executions) continue;
        const runs = worker.executions;
        const bytes = await pssBytes(worker.tree);
        const member = this.members.get(worker);
        if (!member || worker.dead || bytes <= 0) continue;
        this.measured.set(worker, runs);
        member.setBytes(bytes);
      }
    } finally {
      this.measuring = false;
    }
  }
}
