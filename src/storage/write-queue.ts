/**
 * Group commit (as src/runs/group-commit.ts does for runs): writes that happen together commit
 * in one transaction — the start and end of agent turns (src/agents), item and file changes
 * with their outbox rows (src/events). On sqlite this keeps one writer at a time in the
 * process, so concurrent writes queue here instead of sleeping in SQLite's busy handler
 * (bench/channel.ts, bench/events.ts); on PostgreSQL it saves commits. Each caller's promise settles
 * after the transaction that holds its write committed. Every operation must start with a
 * write (it may be first in its transaction). One failing operation does not fail its
 * neighbours: the batch is retried one operation per transaction. An operation
 * that expects to fail (not found, conflict) should return its error instead of throwing, so
 * that its neighbours keep their shared commit.
 */
import type { Knex } from 'knex';

type Op = { run: (trx: Knex.Transaction) => Promise<unknown>; resolve: (v: unknown) => void; reject: (err: unknown) => void };

export class WriteQueue {
  private pending: Op[] = [];
  private flushing = false;

  constructor(private readonly db: Knex, private readonly maxBatch = 64) {}

  run<T>(op: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ run: op, resolve: resolve as (v: unknown) => void, reject });
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
        const results = await this.db.transaction(async (trx) => {
          const out: unknown[] = [];
          for (const op of batch) out.push(await op.run(trx));
          return out;
        });
        batch.forEach((op, i) => op.resolve(results[i]));
      } catch (err) {
        if (batch.length === 1) batch[0]!.reject(err);
        else {
          for (const op of batch) {
            try {
              op.resolve(await this.db.transaction((trx) => op.run(trx)));
            } catch (e) {
              op.reject(e);
            }
          }
        }
      }
    }
    this.flushing = false;
  }
}
