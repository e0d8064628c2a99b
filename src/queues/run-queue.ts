/**
 * The run queue (DESIGN.md section 4). The runs table is the source of truth: a run is
 * claimed by a conditional UPDATE (PENDING → RUNNING with a lease), so a delivery that
 * arrives twice, or late, never runs a run twice. The queue only says "work is there":
 * - in-process (default): an EventEmitter wakes the local workers, which claim the oldest
 *   PENDING runs; a restarted process finds its PENDING runs in the store (durable).
 * - bee-queue on Redis (REDIS_URL): one job per run id, shared by every process started
 *   with `npm start` or `npm run worker`.
 */
import { EventEmitter } from 'node:events';
import BeeQueue from 'bee-queue';

/** Claims and executes one run (the given one, or the oldest PENDING); false when there was none. */
export type RunHandler = (runId: string | undefined) => Promise<boolean>;

export interface RunQueue {
  readonly kind: 'in-process' | 'redis';
  /** Called after the run row is durable. */
  enqueue(runIds: string[]): Promise<void>;
  /** Starts `concurrency` consumers; the handler claims (a given or the oldest) PENDING run. */
  consume(concurrency: number, handler: RunHandler): void;
  close(): Promise<void>;
}

export class InProcessRunQueue implements RunQueue {
  readonly kind = 'in-process' as const;
  private readonly wake = new EventEmitter();
  private closed = false;
  private readonly loops: Promise<void>[] = [];

  constructor(private readonly idleCheckMs: number) {
    this.wake.setMaxListeners(0);
  }

  async enqueue(runIds: string[]): Promise<void> {
    if (runIds.length) this.wake.emit('work', runIds.length);
  }

  /** Each consumer claims until nothing is PENDING, then sleeps until woken (or the idle check). */
  consume(concurrency: number, handler: RunHandler): void {
    for (let i = 0; i < concurrency; i++) {
      this.loops.push((async () => {
        while (!this.closed) {
          const ran = await handler(undefined);
          if (!ran && !this.closed) await this.sleep();
        }
      })());
    }
  }

  private sleep(): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake.off('work', done);
        this.wake.off('close', done);
        resolve();
      };
      const timer = setTimeout(done, this.idleCheckMs);
      this.wake.once('work', done);
      this.wake.once('close', done);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wake.emit('close');
    await Promise.all(this.loops);
  }
}

export class RedisRunQueue implements RunQueue {
  readonly kind = 'redis' as const;
  private readonly queue: BeeQueue<{ runId: string }>;

  constructor(redisUrl: string, opts: { isWorker: boolean; prefix?: string }) {
    const u = new URL(redisUrl);
    this.queue = new BeeQueue<{ runId: string }>('runs', {
      prefix: opts.prefix ?? 'switchyard',
      // bee-queue 2 carries its own redis@3 client: it takes host/port (DESIGN.md section 6).
      redis: { host: u.hostname, port: Number(u.port || 6379), db: u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0, password: u.password || undefined },
      isWorker: opts.isWorker,
      getEvents: false,
      sendEvents: false,
      removeOnSuccess: true,
      removeOnFailure: true,
      activateDelayedJobs: false,
    });
  }

  async enqueue(runIds: string[]): Promise<void> {
    if (runIds.length === 0) return;
    // The job id is the run id: a run queued twice (recovery, restart) is one job.
    const jobs = runIds.map((runId) => this.queue.createJob({ runId }).setId(runId));
    const errors = await this.queue.saveAll(jobs);
    if (errors.size) throw [...errors.values()][0];
  }

  consume(concurrency: number, handler: RunHandler): void {
    this.queue.process(concurrency, async (job) => {
      await handler(job.data.runId);
    });
  }

  async close(): Promise<void> {
    await this.queue.close(10_000);
  }
}
