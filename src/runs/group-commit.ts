import type { WriteQueue } from '../storage/write-queue.js';
import type { RunRows } from './runs.js';

/**
 * Group commit for run creation (bench/triggers.ts): trigger calls that arrive together are
 * written in one multi-row INSERT, through the store's write queue (src/storage/write-queue.ts):
 * on sqlite that is the queue the run workers, agents and resource events write through, so new
 * runs share a transaction with the finishes of runs executing instead of waiting for the
 * file's write lock. Each caller's promise settles only after the statement or transaction that
 * holds its run committed, so a 200 is never sent for a run that is not durable. While one batch
 * commits, the next one accumulates; there is no timer and no added latency when idle. A batch
 * whose INSERT fails is retried one call at a time, so one bad row fails only its own caller.
 */
export class GroupCommitter {
  constructor(private readonly writes: WriteQueue) {}

  add(rows: RunRows): Promise<void> {
    return this.writes.run(async (_trx, batch) => batch.insertLater('runs', [rows.run]), { autocommit: true });
  }
}
