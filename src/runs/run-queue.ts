/**
 * The run queue. The runs table is the source of truth: a run is
 * claimed by a conditional UPDATE (PENDING → RUNNING with a lease), so a delivery that
 * arrives twice, or late, never runs a run twice. The queue only says "work is there":
 * - in-process (default): an EventEmitter wakes the local workers, which claim the oldest
 *   PENDING runs; a restarted process finds its PENDING runs in the store (durable).
 * - bee-queue on Redis (REDIS_URL): one job per run id, shared by every process started
 *   with `npm start` or `npm run worker`.
 */
import { createRequire } from 'node:module';
import type BeeQueue from 'bee-queue';

/**
 * Claims and executes one run (the given one, or the oldest PENDING); false when there was none,
 * `released` when the process began to shut down while the claim was under way and the run was
 * given back unstarted (PENDING again): the queue announces it again for another process.
 * `deferred` (a given run): its organisation has no run slot free in this process now; the
 * handler is done with the job, and the queue tells `onDeferred` once the job is gone, so that
 * the run can be announced again later (src/runs/README.md "Sharing the run slots").
 */
export type RunHandler = (runId: string | undefined) => Promise<boolean | 'released' | 'deferred'>;

export interface RunQueue {
  readonly kind: 'in-process' | 'redis';
  /** Called after the run row is durable. */
  enqueue(runIds: string[]): Promise<void>;
  /** Starts `concurrency` consumers; the handler claims (a given or the oldest) PENDING run. */
  consume(concurrency: number, handler: RunHandler): void;
  /** In-process only: a sleeping consumer lent out for one run handed over directly (InProcessRunQueue). */
  borrowIdle?(): { release(): void } | undefined;
  /** In-process only: one sleeping consumer claims again (an organisation has a run slot free again). */
  wake?(): void;
  /** Redis only: a job its handler deferred is removed; its run may be announced again (`announceFirst`). */
  onDeferred?(listener: (runId: string) => void): void;
  /** Redis only: `enqueue`, the jobs put at the head of the waiting list (popped next). */
  announceFirst?(runIds: string[]): Promise<void>;
  /** Where failures the queue survives go (a handler that threw, a Redis connection lost). */
  onError(listener: (err: unknown) => void): void;
  /**
   * Takes no more runs (shutdown): no consumer asks for another one, and runs it delivered but
   * no handler took yet go back for another process. Resolves once every handler under way
   * returned.
   */
  stop(): Promise<void>;
  /** `stop`, then the connections go. */
  close(): Promise<void>;
}

/**
 * A sleeping consumer's wake-up; `woken` once it ran (by an enqueue, its idle check or close).
 * `timer` is its idle check, stopped while the consumer is lent (`borrowIdle`).
 */
type Sleeper = (() => void) & { woken: boolean; timer: NodeJS.Timeout | undefined };

export class InProcessRunQueue implements RunQueue {
  readonly kind = 'in-process' as const;
  private closed = false;
  private readonly loops: Promise<void>[] = [];
  /** Consumers waiting for work, oldest first. */
  private sleepers: Sleeper[] = [];
  /** Bumped by every enqueue, so a consumer that was busy claiming when work arrived does not sleep. */
  private wakeups = 0;
  private errorListener: (err: unknown) => void = () => undefined;

  constructor(private readonly idleCheckMs: number) {}

  /** Wakes one sleeping consumer per run (not all of them: the others would only race to claim). */
  async enqueue(runIds: string[]): Promise<void> {
    if (runIds.length) {
      this.wakeups += 1;
      for (let i = 0; i < runIds.length && this.sleepers.length; i++) this.sleepers.shift()!();
    }
  }

  onError(listener: (err: unknown) => void): void {
    this.errorListener = listener;
  }

  /** Like an enqueue of one run: one sleeping consumer claims, and one busy claiming does not sleep. */
  wake(): void {
    this.wakeups += 1;
    this.sleepers.shift()?.();
  }

  /**
   * Each consumer claims until nothing is PENDING, then sleeps until woken (or the idle check).
   * An enqueue that lands while the consumer is inside the handler (its claim saw no run yet)
   * finds no listener: the wakeup counter catches it, so that run does not wait for the idle
   * check. A handler that throws (store unavailable) is reported and retried after a sleep;
   * it must not end the consumer (nor reject its loop, which nobody awaits until close).
   */
  consume(concurrency: number, handler: RunHandler): void {
    for (let i = 0; i < concurrency; i++) {
      this.loops.push(
        (async () => {
          while (!this.closed) {
            const seen = this.wakeups;
            let ran: boolean | 'released' | 'deferred';
            try {
              ran = await handler(undefined);
            } catch (err) {
              this.errorListener(err);
              if (!this.closed) await this.sleep();
              continue;
            }
            if (!ran && !this.closed && this.wakeups === seen) await this.sleep();
          }
        })(),
      );
    }
  }

  /**
   * A sleeping consumer, lent out to execute one run handed over directly (RunWorkers.adopt): it
   * stays asleep, out of the wake list and without its idle check, until `release`, so the process
   * never runs more runs at once than its consumers. Undefined when every consumer is busy (there
   * is a backlog) or the queue is closing. The one who borrows must call `release` exactly once.
   */
  borrowIdle(): { release(): void } | undefined {
    if (this.closed) return undefined;
    const wake = this.sleepers.pop();
    if (!wake) return undefined;
    clearTimeout(wake.timer);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        // Woken to end if the queue closed meanwhile; otherwise back to sleep, its idle check anew.
        if (this.closed) wake();
        else {
          wake.timer = setTimeout(wake, this.idleCheckMs);
          this.sleepers.push(wake);
        }
      },
    };
  }

  private sleep(): Promise<void> {
    return new Promise((resolve) => {
      const done: Sleeper = Object.assign(
        () => {
          if (done.woken) return;
          done.woken = true;
          clearTimeout(done.timer);
          const i = this.sleepers.indexOf(done);
          if (i >= 0) this.sleepers.splice(i, 1);
          resolve();
        },
        { woken: false, timer: undefined as NodeJS.Timeout | undefined },
      );
      done.timer = setTimeout(done, this.idleCheckMs);
      this.sleepers.push(done);
    });
  }

  /** Each consumer ends after the run it is executing (a lent one once its run ends). */
  async stop(): Promise<void> {
    this.closed = true;
    for (const wake of this.sleepers.splice(0)) wake();
    await Promise.all(this.loops);
  }

  close(): Promise<void> {
    return this.stop();
  }
}

/** What RedisRunQueue uses of bee-queue beyond its typed surface (bee-queue 2.0). */
interface BeeInternals {
  /** Set by `close`: the queue pops no more jobs. */
  paused: boolean;
  /** The command connection (node-redis 3). */
  client: {
    multi(): {
      lrem(key: string, n: number, v: string): unknown;
      rpush(key: string, v: string): unknown;
      exec(cb: (err: Error | null) => void): void;
    };
    client(...args: [...string[], (err: Error | null, reply: unknown) => void]): void;
    eval(...args: [string, number, string, string, (err: Error | null, reply: unknown) => void]): void;
    quit(cb: () => void): void;
  };
  /** The blocking connection of a worker (node-redis 3), once ready. */
  bclient?: { stream?: { localPort?: number } } | null;
  toKey(name: string): string;
  /** The blocking pop of the next job id (BRPOPLPUSH, no timeout) and the read of its job. */
  _waitForJob?: () => Promise<{ id: string } | null>;
}

/** Moves a job id to the popping end of the waiting list, if it is in the list. */
const TO_HEAD = `if redis.call('lrem', KEYS[1], 0, ARGV[1]) > 0 then redis.call('rpush', KEYS[1], ARGV[1]) end`;

export class RedisRunQueue implements RunQueue {
  readonly kind = 'redis' as const;
  private readonly queue: BeeQueue<{ runId: string }>;
  private readonly internals: BeeInternals;
  private readonly stallIntervalMs: number;
  private readonly closeTimeoutMs: number;
  private errorListener: (err: unknown) => void = () => undefined;
  private deferredListener: (runId: string) => void = () => undefined;
  private stopping: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  /** Blocking pops under way (the consumer's BRPOPLPUSH calls, pipelined on one connection). */
  private popping = 0;
  /** Pops under way, and runs given back at shutdown being announced again, before the connection goes. */
  private readonly handingBack = new Set<Promise<unknown>>();

  /** `closeTimeoutMs`: how long `stop` waits for the handlers under way (SHUTDOWN_GRACE_MS). */
  constructor(
    redisUrl: string,
    opts: { isWorker: boolean; prefix?: string; stallIntervalMs?: number; closeTimeoutMs?: number },
  ) {
    const u = new URL(redisUrl);
    this.stallIntervalMs = opts.stallIntervalMs ?? 5000;
    this.closeTimeoutMs = Math.max(1, opts.closeTimeoutMs ?? 10_000);
    // Loaded on first use: a start without REDIS_URL never pays for bee-queue and its Redis client.
    const Bee = createRequire(import.meta.url)('bee-queue') as typeof BeeQueue;
    this.queue = new Bee<{ runId: string }>('runs', {
      prefix: opts.prefix ?? 'switchyard',
      // bee-queue 2 carries its own redis@3 client: it takes host/port, not a URL.
      redis: {
        host: u.hostname,
        port: Number(u.port || 6379),
        db: u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0,
        password: u.password || undefined,
      },
      isWorker: opts.isWorker,
      getEvents: false,
      sendEvents: false,
      removeOnSuccess: true,
      removeOnFailure: true,
      activateDelayedJobs: false,
      stallInterval: this.stallIntervalMs,
      // Runs given back at shutdown are announced on it after bee-queue's close: `close` quits it.
      quitCommandClient: false,
    });
    this.internals = this.queue as unknown as BeeInternals;
    // bee-queue reports a lost Redis connection as an 'error' event and reconnects by itself;
    // an EventEmitter 'error' without a listener throws and would end the process.
    this.queue.on('error', (err: Error) => this.errorListener(err));
  }

  onError(listener: (err: unknown) => void): void {
    this.errorListener = listener;
  }

  onDeferred(listener: (runId: string) => void): void {
    this.deferredListener = listener;
  }

  async enqueue(runIds: string[]): Promise<void> {
    if (runIds.length === 0) return;
    // The job id is the run id: a run queued twice (recovery, restart) is one job.
    const jobs = runIds.map((runId) => this.queue.createJob({ runId }).setId(runId));
    const errors = await this.queue.saveAll(jobs);
    if (errors.size) throw [...errors.values()][0];
  }

  /**
   * Jobs made as by `enqueue`, then each moved to the head of the waiting list (the end bee-queue
   * pops next) if it is waiting there: a job already taken by a consumer is left alone.
   */
  async announceFirst(runIds: string[]): Promise<void> {
    await this.enqueue(runIds);
    const waiting = this.internals.toKey('waiting');
    for (const runId of runIds)
      await new Promise<void>((resolve, reject) =>
        this.internals.client.eval(TO_HEAD, 1, waiting, runId, (err) => (err ? reject(err) : resolve())),
      );
  }

  consume(concurrency: number, handler: RunHandler): void {
    this.queue.process(concurrency, async (job) => handler(job.data.runId));
    // A run given back at shutdown: its job is done (and removed) now, so it can be queued again.
    // A deferred run: its job is removed, so a new job of the same id (the run id) can be made.
    this.queue.on('succeeded', (job: BeeQueue.Job<{ runId: string }>, result: unknown) => {
      if (result === 'released') this.handBack(this.enqueue([job.data.runId]));
      else if (result === 'deferred') this.deferredListener(job.data.runId);
    });
    // Every blocking pop is counted, so that `stop` can end them one by one. A job popped once the
    // queue is stopping goes back to the head of the waiting list at once (bee-queue would leave it
    // "active" for the stalled-job check to find seconds later).
    const wait = this.internals._waitForJob?.bind(this.queue);
    if (wait)
      this.internals._waitForJob = () => {
        this.popping += 1;
        const popped = wait().then(
          (job) => {
            if (job && this.internals.paused) {
              this.handBack(this.putBack(job.id));
              return null;
            }
            return job;
          },
          (err: unknown) => {
            // A pop ended by `stop` answers no job id, which bee-queue cannot read.
            if (this.internals.paused) return null;
            throw err;
          },
        );
        void popped.then(
          () => (this.popping -= 1),
          () => (this.popping -= 1),
        );
        return popped;
      };
    // A job whose worker died stays "active", and its id (= the run id) makes a later enqueue
    // of that run (lease recovery, restart) a no-op: the run would stay PENDING for ever. The
    // periodic stalled-job check (bee-queue README) puts such jobs back on the waiting list.
    this.queue.checkStalledJobs(this.stallIntervalMs).catch((err: unknown) => this.errorListener(err));
  }

  private handBack(p: Promise<unknown>): void {
    const tracked = p.catch((err: unknown) => this.errorListener(err)).finally(() => this.handingBack.delete(tracked));
    this.handingBack.add(tracked);
  }

  /** An active job nobody handles, moved to the end of the waiting list that is popped next. */
  private putBack(jobId: string): Promise<void> {
    const { client } = this.internals;
    return new Promise((resolve, reject) => {
      const multi = client.multi();
      multi.lrem(this.internals.toKey('active'), 0, jobId);
      multi.rpush(this.internals.toKey('waiting'), jobId);
      multi.exec((err) => (err ? reject(err) : resolve()));
    });
  }

  /**
   * Pops no more jobs, then bee-queue's close, which waits for the handlers under way, at most
   * `closeTimeoutMs`. bee-queue's close alone drops its blocking connection, and a job Redis
   * handed to a pop just before (its answer still on the way) would be lost to the stalled-job
   * check: so the pops under way are first ended one by one (CLIENT UNBLOCK), each job one of
   * them still brings going back to the waiting list.
   */
  stop(): Promise<void> {
    this.stopping ??= this.endPops()
      .catch((err: unknown) => this.errorListener(err))
      .then(() => {
        this.internals.paused = false; // bee-queue's close starts from a running queue
        return this.queue.close(this.closeTimeoutMs);
      })
      .catch((err: unknown) => this.errorListener(err));
    return this.stopping;
  }

  /** Stops bee-queue from popping (its own flag) and unblocks the pops under way, for at most 2 s. */
  private async endPops(): Promise<void> {
    if (this.popping === 0) return;
    this.internals.paused = true;
    const port = this.internals.bclient?.stream?.localPort;
    const { client } = this.internals;
    const command = (...args: string[]) =>
      new Promise<unknown>((resolve, reject) =>
        client.client(...args, (err: Error | null, reply: unknown) => (err ? reject(err) : resolve(reply))),
      );
    const list = String(await command('list'));
    const id = list
      .split('\n')
      .find((line) => port !== undefined && / addr=(\S+)/.exec(line)?.[1]?.endsWith(`:${port}`))
      ?.match(/^id=(\d+)/)?.[1];
    if (!id) return;
    const deadline = Date.now() + 2000;
    while (this.popping > 0 && Date.now() < deadline) {
      await command('unblock', id);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.stop();
      while (this.handingBack.size) await Promise.allSettled([...this.handingBack]);
      await new Promise<void>((resolve) => this.internals.client.quit(() => resolve()));
    })();
    return this.closing;
  }
}
