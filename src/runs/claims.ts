/**
 * Claims for the in-process queue's consumers. Consumers that ask for a run while the
 * previous claim is still waiting in the write queue share one statement, which claims as many of
 * the oldest PENDING runs as there are consumers asking (`claimRuns`). So a run is claimed only
 * for a consumer that is free to execute it at once, and never waits with a lease running. The
 * claim is one statement in the workers' write queue: alone it autocommits, beside other runs'
 * finishes it shares their transaction.
 *
 * When RUN_ORG_CONCURRENCY can bind (below RUN_CONCURRENCY), the claims are fair across
 * organisations (`claimRunsFairly`, `claimRunUnderCap`): they leave out the organisations at their
 * cap here and take at most the slots each has left (README.md "Sharing the run slots"). The slots
 * are taken in the claim's operation, as soon as its statement answers, so the next claim in the
 * write queue sees them; an operation run again (its batch failed) gives back what its earlier
 * try took.
 */
import type { WriteQueue } from '../storage/write-queue.js';
import { claimRun, claimRuns, type RunRow } from './runs.js';
import { claimRunsFairly, claimRunUnderCap, type FairClaim } from './fair-claims.js';
import type { OrgSlots } from './org-slots.js';

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
    private readonly slots: OrgSlots,
    private readonly lease: { workerId: string; leaseMs: number },
  ) {}

  /** The oldest PENDING run (of an organisation under its cap) claimed for this worker; undefined when there is none. */
  next(): Promise<RunRow | undefined> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      if (!this.queued) {
        this.queued = true;
        void this.claim();
      }
    });
  }

  /**
   * Claims the given run (Redis queue: one job per run id) if it is still PENDING and its
   * organisation is under its cap here.
   */
  async byId(runId: string): Promise<RunRow | undefined> {
    const took: RunRow[] = [];
    try {
      const runs = await this.writes.run(
        async (trx) => {
          this.giveBack(took);
          const run = this.slots.binding
            ? await claimRunUnderCap(trx, this.fair(), runId)
            : await claimRun(trx, this.lease.workerId, this.lease.leaseMs, runId);
          return this.took(took, run ? [run] : []);
        },
        { autocommit: true },
      );
      return runs[0];
    } catch (err) {
      this.giveBack(took);
      throw err;
    }
  }

  private fair(): FairClaim {
    return { ...this.lease, cap: this.slots.cap, left: this.slots.budget() };
  }

  private took(took: RunRow[], runs: RunRow[]): RunRow[] {
    for (const run of runs) this.slots.take(run.org_id);
    took.push(...runs);
    return runs;
  }

  /** The slots an earlier try of a claim took, given back: its batch failed, so its runs were not claimed. */
  private giveBack(took: RunRow[]): void {
    for (const run of took.splice(0)) this.slots.give(run.org_id);
  }

  private async claim(): Promise<void> {
    let taken: Waiter[] | undefined;
    const took: RunRow[] = [];
    try {
      const runs = await this.writes.run(
        async (trx) => {
          // Taken when the operation runs; a retry of it (its batch failed) serves the same waiters.
          if (!taken) {
            taken = this.waiting.splice(0);
            this.queued = false;
          }
          this.giveBack(took);
          const { workerId, leaseMs } = this.lease;
          const claimed = this.slots.binding
            ? await claimRunsFairly(trx, this.fair(), taken.length)
            : await claimRuns(trx, workerId, leaseMs, taken.length);
          return this.took(took, claimed);
        },
        { autocommit: true },
      );
      taken!.forEach((w, i) => w.resolve(runs[i]));
    } catch (err) {
      this.giveBack(took);
      if (!taken) {
        taken = this.waiting.splice(0);
        this.queued = false;
      }
      for (const w of taken) w.reject(err);
    }
  }
}
