import { EventEmitter } from 'node:events';
import type { Logger } from '../config/logger.js';
import type { RedisClient } from '../storage/redis.js';
import type { FileRecord } from '../files/index.js';
import type { RunRow, StepRow } from './runs.js';
import type { RunStatus } from './states.js';
import { syncCallersWaiting } from '../kernel/metrics.js';

/**
 * A run as the finish that just committed it left it in the store, known to the process that
 * executed it: its row, its step rows and its step files, exactly as a read would return them
 * (src/runs/recorder.ts builds it only for a run whose rows that finish wrote whole). A
 * synchronous call waiting in that process answers from it instead of reading the run back
 * (src/triggers/call.ts). A thunk: built only when something waits.
 */
export type FinishedRun = () => { run: RunRow; steps: StepRow[]; files: FileRecord[] } | undefined;

/** A run's finish signal: its terminal status and, when it finished in this process, the run itself. */
export interface Finish {
  status: RunStatus;
  finished?: FinishedRun | undefined;
}

/**
 * Run-finished signals: a synchronous trigger call waits on a signal,
 * never by polling the store. In-process: an EventEmitter. Scaled out: Redis pub/sub, so a
 * run finished by a worker on another machine wakes the waiting HTTP process.
 */
export interface Signals {
  /** `finished`: the run as its finish left it, when it finished in this process. */
  runFinished(runId: string, status: RunStatus, finished?: FinishedRun): Promise<void>;
  /** Resolves with the terminal status, or undefined when `timeoutMs` passes first. */
  waitForRun(runId: string, timeoutMs: number): Promise<RunStatus | undefined>;
  /** waitForRun, with the finished run itself when it finished in this process. */
  waitForFinish(runId: string, timeoutMs: number): Promise<Finish | undefined>;
  /** Every run finished here or (Redis) in another process; returns the unsubscribe function. */
  onRunFinished(listener: (runId: string, status: RunStatus) => void): () => void;
  /**
   * Shutdown: every wait under way, and every later one, ends at once as at its timeout. Without
   * Redis no run it waits for can finish any more; with Redis, drain-waits.ts first keeps the
   * waits for runs that other processes execute.
   */
  endWaits(): void;
  /** The runs that synchronous callers of this process wait for now. */
  waitingRuns(): string[];
  /** Ends the waits under way for these runs as at their timeout (src/runs/drain-waits.ts). */
  endWaitsFor(runIds: Iterable<string>): void;
  close(): Promise<void>;
}

/** The emitter's event for "any run finished" (run ids are `run_…`, so it never names a run). */
const ANY_RUN = Symbol('any run finished');

class LocalSignals implements Signals {
  protected readonly emitter = new EventEmitter();
  /** The ends of the waits under way (`endWaits`), with the run each waits for. */
  private readonly waits = new Map<() => void, string>();
  private ended = false;
  constructor() {
    this.emitter.setMaxListeners(0);
  }
  async runFinished(runId: string, status: RunStatus, finished?: FinishedRun): Promise<void> {
    this.finished(runId, { status, finished });
  }
  protected finished(runId: string, finish: Finish): void {
    this.emitter.emit(runId, finish);
    this.emitter.emit(ANY_RUN, runId, finish.status);
  }
  onRunFinished(listener: (runId: string, status: RunStatus) => void): () => void {
    this.emitter.on(ANY_RUN, listener);
    return () => this.emitter.off(ANY_RUN, listener);
  }
  async waitForRun(runId: string, timeoutMs: number): Promise<RunStatus | undefined> {
    return (await this.waitForFinish(runId, timeoutMs))?.status;
  }
  waitForFinish(runId: string, timeoutMs: number): Promise<Finish | undefined> {
    if (this.ended) return Promise.resolve(undefined);
    syncCallersWaiting.inc();
    return new Promise((resolve) => {
      const onDone = (finish: Finish) => {
        clearTimeout(timer);
        syncCallersWaiting.dec();
        this.waits.delete(end);
        resolve(finish);
      };
      const end = () => {
        clearTimeout(timer);
        this.emitter.off(runId, onDone);
        syncCallersWaiting.dec();
        this.waits.delete(end);
        resolve(undefined);
      };
      const timer = setTimeout(end, timeoutMs);
      this.emitter.once(runId, onDone);
      this.waits.set(end, runId);
    });
  }
  endWaits(): void {
    this.ended = true;
    for (const end of [...this.waits.keys()]) end();
  }
  waitingRuns(): string[] {
    return [...new Set(this.waits.values())];
  }
  endWaitsFor(runIds: Iterable<string>): void {
    const ids = new Set(runIds);
    for (const [end, runId] of [...this.waits]) if (ids.has(runId)) end();
  }
  async close(): Promise<void> {
    this.emitter.removeAllListeners();
  }
}

class RedisSignals extends LocalSignals {
  private constructor(
    private readonly pub: RedisClient,
    private readonly sub: RedisClient,
    private readonly channel: string,
  ) {
    super();
  }
  static async create(client: RedisClient, log: Logger, prefix: string): Promise<RedisSignals> {
    const sub = client.duplicate();
    sub.on('error', (err: Error) => log.warn({ err: err.message }, 'redis subscriber error'));
    await sub.connect();
    const channel = `${prefix}:run-finished`;
    const signals = new RedisSignals(client, sub, channel);
    await sub.subscribe(channel, (message: string) => {
      const [runId, status] = message.split(' ');
      if (runId && status) signals.finished(runId, { status: status as RunStatus });
    });
    return signals;
  }
  override async runFinished(runId: string, status: RunStatus, finished?: FinishedRun): Promise<void> {
    // A waiter in this process is woken now, with the run; the published signal finds it gone.
    if (finished) this.emitter.emit(runId, { status, finished });
    await this.pub.publish(this.channel, `${runId} ${status}`);
  }
  override async close(): Promise<void> {
    await super.close();
    await this.sub.close();
  }
}

export async function createSignals(redis: RedisClient | undefined, log: Logger, prefix: string): Promise<Signals> {
  return redis ? RedisSignals.create(redis, log, prefix) : new LocalSignals();
}
