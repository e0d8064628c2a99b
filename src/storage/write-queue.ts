/**
 * Group commit (as src/runs/group-commit.ts does for runs): writes that happen together commit
 * in one transaction — the start and end of agent turns (src/agents), item and file changes
 * with their outbox rows (src/events), the claims, progress, finishes and lease renewals of
 * runs being executed (src/runs/README.md). On sqlite this keeps one writer at a time in the
 * process, so concurrent writes queue here instead of sleeping in SQLite's busy handler
 * (bench/channel.ts, bench/events.ts); on PostgreSQL it saves commits. Each caller's promise
 * settles after the transaction that holds its write committed. Every operation must start with
 * a write (it may be first in its transaction), or make no statement of its own and only hand
 * rows or items to its batch (insertLater, joinLater), whose statements are all writes. One
 * failing operation does not fail its neighbours: the batch is retried one operation per
 * transaction. An operation that expects to fail (not found, conflict) should return its error
 * instead of throwing, so that its neighbours keep their shared commit.
 *
 * Rows an operation only appends (the event outbox) can be handed to `batch.insertLater`: the
 * batch inserts every operation's rows of one table in a single multi-row statement just before
 * its commit, so they cost one statement per batch rather than one per operation, and commit
 * or roll back with the rest.
 *
 * On sqlite the batch's transaction is not a knex transaction: the queue takes a connection from
 * the pool, sends BEGIN and COMMIT on it itself and gives the operations a `trx` whose builders
 * and raw queries run on that connection (boundTo). A knex transaction builds a whole knex
 * instance per transaction, a large share of an item edit's main-thread CPU (bench/README.md,
 * "sqlite statements"). The operations may use `trx(table)`,
 * `trx.raw`, `trx.client`, `trx.fn` and `trx.ref`; anything else throws rather than running
 * outside the transaction.
 *
 * An operation that needs no transaction can say so (`run(op, { autocommit: true })`): every
 * statement it makes stands on its own, like a claim or a lease renewal of runs (src/runs), or a
 * new run's row (src/runs/group-commit.ts). When it is alone in its batch, it runs without BEGIN
 * and COMMIT, so it costs one round trip instead of three; its `trx` is then the knex instance
 * itself, and the rows it deferred are inserted right after it, each multi-row statement
 * committing on its own. Beside other operations it joins their transaction as usual.
 *
 * On sqlite the file has one writer at a time. Writers of one process with a queue each would
 * meet at the file's write lock, and the one that lost would sleep in SQLite's busy handler
 * (1 ms, then 2, 5, 10 …) while the other committed. `WriteQueue.for(db)` therefore gives every
 * writer of a sqlite store the same queue: trigger intake, run workers, agents and resource
 * events share batches instead of waiting on each other (bench/runs.ts). PostgreSQL takes
 * concurrent writers, so there each caller gets a queue of its own and commits in parallel.
 */
import type { Knex } from 'knex';
import { activeTraceparent } from '../kernel/tracing.js';

export interface WriteBatch {
  /** Appends rows to `table` at the end of this transaction (before its commit). */
  insertLater(table: string, rows: readonly Record<string, unknown>[]): void;
  /**
   * Adds `item` to the batch's `group`: once every operation of the batch ran, the group's
   * statements run once for all its items (see BatchGroup). The operation returns the handle
   * (as its whole result): its caller's promise settles with this item's result.
   */
  joinLater<I, R>(group: BatchGroup<I, R>, item: I): Later<R>;
  /**
   * The W3C traceparent of the caller whose operation is running, read when it queued the
   * operation; null when tracing is off. A batch runs every operation under the trace context of
   * whichever caller's flush came first, so an operation that records its own caller's trace (an
   * item change's event calls) takes it from here, not from the active span.
   */
  readonly callerTraceparent: string | null;
}

/**
 * Statements that many operations of one batch share, such as the finishes of runs
 * (src/runs/recorder.ts): `flush` runs once per batch for all the items operations added, after
 * the operations and before the deferred inserts (which it may add to), in the transaction, and
 * returns one result per item, in order. One statement for all of them instead of one per
 * operation: on sqlite each statement is a round trip through the threadpool and the main
 * thread's event loop, and the queue's statements run one after the other (bench/runs.ts).
 */
export interface BatchGroup<I, R> {
  flush(trx: Knex.Transaction, items: readonly I[], batch: WriteBatch): Promise<R[]>;
}

/** An operation's result that its batch's group settles (WriteBatch.joinLater). */
export class Later<R> {
  value: R | undefined;
}

type WriteOp<T> = (trx: Knex.Transaction, batch: WriteBatch) => Promise<T | Later<T>>;
type Op = {
  run: WriteOp<unknown>;
  traceparent: string | null;
  resolve: (v: unknown) => void;
  reject: (err: unknown) => void;
  autocommit?: boolean;
};

export interface WriteOptions {
  /**
   * Each of the operation's statements stands alone: by itself in a batch it runs without a
   * transaction (see the header).
   */
  autocommit?: boolean;
}

/** Rows per multi-row INSERT: far under sqlite's bound-parameter limit for tables of ~20 columns. */
const INSERT_CHUNK = 200;

/** Runs `ops` in `trx`, then their groups' statements, then inserts the rows they deferred. */
async function runOps(trx: Knex.Transaction, ops: readonly Op[]): Promise<unknown[]> {
  const later = new Map<string, Record<string, unknown>[]>();
  const groups = new Map<BatchGroup<unknown, unknown>, { items: unknown[]; handles: Later<unknown>[] }>();
  let caller: string | null = null;
  const batch: WriteBatch = {
    get callerTraceparent() {
      return caller;
    },
    insertLater(table, rows) {
      const list = later.get(table);
      if (list) list.push(...rows);
      else later.set(table, [...rows]);
    },
    joinLater<I, R>(group: BatchGroup<I, R>, item: I): Later<R> {
      const key = group as BatchGroup<unknown, unknown>;
      let g = groups.get(key);
      if (!g) groups.set(key, (g = { items: [], handles: [] }));
      const handle = new Later<R>();
      g.items.push(item);
      g.handles.push(handle as Later<unknown>);
      return handle;
    },
  };
  const out: unknown[] = [];
  // One operation at a time: `caller` is the running operation's for all of its run.
  for (const op of ops) {
    caller = op.traceparent;
    out.push(await op.run(trx, batch));
  }
  caller = null;
  for (const [group, g] of groups) {
    const results = await group.flush(trx, g.items, batch);
    g.handles.forEach((h, i) => (h.value = results[i]));
  }
  for (const [table, rows] of later) {
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) await trx(table).insert(rows.slice(i, i + INSERT_CHUNK));
  }
  return out.map((v) => (v instanceof Later ? v.value : v));
}

/** knex's sqlite3 client: its pool and its query call (prepared statements, src/storage/statement-cache.ts). */
interface SqliteClient {
  acquireConnection(): Promise<unknown>;
  releaseConnection(conn: unknown): Promise<void>;
  _query(conn: unknown, obj: { sql: string; method: string; bindings: unknown[] }): Promise<unknown>;
}

/** What an operation may call on its `trx`; the rest of Knex.Transaction throws (see the header). */
const BOUND_MEMBERS = new Set<PropertyKey>(['raw', 'client', 'fn', 'ref', 'isTransaction']);

/** A `trx` whose queries run on `conn` (the runner uses a builder's `_connection` when it has one). */
export function boundTo(db: Knex, conn: unknown): Knex.Transaction {
  const trx = ((table: string) => db(table).connection(conn)) as unknown as Record<PropertyKey, unknown>;
  trx.raw = (sql: string, bindings?: Knex.RawBinding[] | Knex.ValueDict) => {
    const raw = bindings === undefined ? db.raw(sql) : db.raw(sql, bindings);
    (raw as unknown as { _connection: unknown })._connection = conn;
    return raw;
  };
  trx.client = db.client;
  trx.fn = db.fn;
  trx.ref = db.ref.bind(db);
  trx.isTransaction = true;
  return new Proxy(trx, {
    get(target, prop) {
      if (BOUND_MEMBERS.has(prop) || prop in Function.prototype) return target[prop];
      throw new Error(`write queue: trx.${String(prop)} is not available inside a write-queue operation`);
    },
  }) as unknown as Knex.Transaction;
}

/** The shared queue of each sqlite store (see the header). */
const shared = new WeakMap<Knex, WriteQueue>();

export class WriteQueue {
  /** The queue a writer of `db` should use: on sqlite one per store and process, on PostgreSQL a new one. */
  static for(db: Knex): WriteQueue {
    if (db.client.config.client === 'pg') return new WriteQueue(db);
    let queue = shared.get(db);
    if (!queue) {
      queue = new WriteQueue(db);
      shared.set(db, queue);
    }
    return queue;
  }

  private pending: Op[] = [];
  private flushing = false;

  private readonly sqlite: boolean;

  constructor(
    private readonly db: Knex,
    private readonly maxBatch = 64,
  ) {
    this.sqlite = db.client.config.client !== 'pg';
  }

  /** One transaction running `ops` (see the header for sqlite's); an autocommit operation alone runs without one. */
  private async transact(ops: readonly Op[]): Promise<unknown[]> {
    if (ops.length === 1 && ops[0]!.autocommit) return runOps(this.db as Knex.Transaction, ops);
    if (!this.sqlite) return this.db.transaction((trx) => runOps(trx, ops));
    const client = this.db.client as unknown as SqliteClient;
    const conn = await client.acquireConnection();
    const exec = (sql: string) => client._query(conn, { sql, method: 'raw', bindings: [] });
    try {
      await exec('BEGIN');
      try {
        const out = await runOps(boundTo(this.db, conn), ops);
        await exec('COMMIT');
        return out;
      } catch (err) {
        // A failed COMMIT (or statement) leaves the transaction open: end it before the connection goes back.
        await exec('ROLLBACK').catch(() => undefined);
        throw err;
      }
    } finally {
      await client.releaseConnection(conn);
    }
  }

  run<T>(op: WriteOp<T>, opts: WriteOptions = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({
        run: op,
        traceparent: activeTraceparent() ?? null,
        resolve: resolve as (v: unknown) => void,
        reject,
        autocommit: opts.autocommit === true,
      });
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
        const results = await this.transact(batch);
        batch.forEach((op, i) => op.resolve(results[i]));
      } catch (err) {
        if (batch.length === 1) batch[0]!.reject(err);
        else {
          for (const op of batch) {
            try {
              op.resolve((await this.transact([op]))[0]);
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
