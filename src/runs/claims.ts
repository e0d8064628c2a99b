/**
 * Claims for the in-process queue's consumers. Consumers that ask for a run while the
 * previous claim is still waiting in the write queue share one statement, which claims as many of
 * the oldest PENDING runs as there are consumers asking (`claimRuns`). So a run is claimed only
 * for a consumer that is free to execute it at once, and never waits with a lease running. The
 * claim is one statement in the workers' write queue: alone it autocommits, beside other runs'
 * finishes it shares their transaction.
 */
import type { WriteQueue } from '../storage/write-queue.js';
import { claimRun, claimRuns, type RunRow } from './runs.js';

interface Waiter {
  resolve: (run: RunRow | undefined) => void;
  reject: (err: unknown) => void;
}

export class RunClaimer {
  private waiting: Waiter[] = [];
  /** A claim is queued that has not taken its waiters yet: newcomers join it. */
  private queued = false;

  constructor(
    private readonly writes: WriteQueue,
    private readonly workerId: string,
    private readonly leaseMs: number,
  ) {}

  /** The oldest PENDING run not claimed by another consumer, claimed for this worker; undefined when there is none. */
  next(): Promise<RunRow | undefined> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      if (!this.queued) {
        this.queued = true;
        void this.claim();
      }
    });
  }

  /** Claims the given run (Redis queue: one job per run id) if it is still PENDING. */
  byId(runId: string): Promise<RunRow | undefined> {
    return this.writes.run((trx) => claimRun(trx, this.workerId, this.leaseMs, runId), { autocommit: true });
  }

  private async claim(): Promise<void> {
    let taken: Waiter[] | undefined;
    try {
      const runs = await this.writes.run(
        (trx) => {
          // Taken when the operation runs; a retry of it (its batch failed) serves the same waiters.
          if (!taken) {
            taken = this.waiting.splice(0);
            this.queued = false;
          }
          return claimRuns(trx, this.workerId, this.leaseMs, taken.length);
        },
        { autocommit: true },
      );
      taken!.forEach((w, i) => w.resolve(runs[i]));
    } catch (err) {
      if (!taken) {
        taken = this.waiting.splice(0);
        this.queued = false;
      }
      for (const w of taken) w.reject(err);
    }
  }
}
