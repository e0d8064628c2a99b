import type { Knex } from 'knex';
import { insertRuns, MAX_RUNS_PER_INSERT, type RunRows } from './runs.js';

/**
 * Group commit for run creation (bench/triggers.ts): trigger calls that arrive together are
 * written in one transaction. Each caller's promise settles only after the transaction that
 * holds its run committed, so a 200 is never sent for a run that is not durable. While one
 * batch commits, the next one accumulates; there is no timer and no added latency when idle.
 */
export class GroupCommitter {
  private pending: { rows: RunRows; resolve: () => void; reject: (err: unknown) => void }[] = [];
  private flushing = false;

  constructor(private readonly db: Knex, private readonly maxBatch = MAX_RUNS_PER_INSERT) {}

  add(rows: RunRows): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ rows, resolve, reject });
      if (!this.flushing) {
        this.flushing = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    while (this.pending.length) {
      const batch = this.pending.splice(0, this.maxBatch);
      try {
        await insertRuns(this.db, batch.map((b) => b.rows));
        for (const b of batch) b.resolve();
      } catch (err) {
        // One bad row must not fail its neighbours: retry them one by one.
        if (batch.length === 1) batch[0]!.reject(err);
        else {
          for (const b of batch) {
            try {
              await insertRuns(this.db, [b.rows]);
              b.resolve();
            } catch (e) {
              b.reject(e);
            }
          }
        }
      }
    }
    this.flushing = false;
  }
}
