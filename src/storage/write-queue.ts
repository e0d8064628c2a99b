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
 *
 * Rows an operation only appends (the event outbox) can be handed to `batch.insertLater`: the
 * batch inserts every operation's rows of one table in a single multi-row statement just before
 * its commit, so they cost one statement per batch rather than one per operation, and commit
 * or roll back with the rest.
 */
import type { Knex } from 'knex';

export interface WriteBatch {
  /** Appends rows to `table` at the end of this transaction (before its commit). */
  insertLater(table: string, rows: readonly Record<string, unknown>[]): void;
}

type WriteOp<T> = (trx: Knex.Transaction, batch: WriteBatch) => Promise<T>;
type Op = { run: WriteOp<unknown>; resolve: (v: unknown) => void; reject: (err: unknown) => void };

/** Rows per multi-row INSERT: far under sqlite's bound-parameter limit for tables of ~20 columns. */
const INSERT_CHUNK = 200;

/** Runs `ops` in `trx`, then inserts the rows they deferred. */
async function runOps(trx: Knex.Transaction, ops: readonly Op[]): Promise<unknown[]> {
  const later = new Map<string, Record<string, unknown>[]>();
  const batch: WriteBatch = {
    insertLater(table, rows) {
      const list = later.get(table);
      if (list) list.push(...rows);
      else later.set(table, [...rows]);
    },
  };
  const out: unknown[] = [];
  for (const op of ops) out.push(await op.run(trx, batch));
  for (const [table, rows] of later) {
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) await trx(table).insert(rows.slice(i, i + INSERT_CHUNK));
  }
  return out;
}

export class WriteQueue {
  private pending: Op[] = [];
  private flushing = false;

  constructor(private readonly db: Knex, private readonly maxBatch = 64) {}

  run<T>(op: WriteOp<T>): Promise<T> {
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
        const results = await this.db.transaction((trx) => runOps(trx, batch));
        batch.forEach((op, i) => op.resolve(results[i]));
      } catch (err) {
        if (batch.length === 1) batch[0]!.reject(err);
        else {
          for (const op of batch) {
            try {
              op.resolve((await this.db.transaction((trx) => runOps(trx, [op])))[0]);
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
