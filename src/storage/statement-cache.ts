/**
 * Prepared statements kept per sqlite connection. knex's sqlite3 client runs every query as
 * `connection.all(sql)` / `connection.run(sql)`, which node-sqlite3 carries out as three pieces
 * of threadpool work — prepare, step, finalize — each handed back to the main event loop before
 * the next starts. A statement prepared once and run again is one piece. Inside a transaction the
 * statements of its operations follow one another, so on a busy event loop each hand-back costs a
 * wait for the loop, and most of a transaction's time in the group commit
 * (src/storage/write-queue.ts) goes to waiting between pieces (bench/README.md, "sqlite statements").
 *
 * The cache is per connection, least recently used first out (statements whose text varies, such
 * as multi-row INSERTs, do not grow it past MAX_STATEMENTS); a statement that failed to prepare
 * or to run is finalized and dropped, so the next use prepares it afresh. A connection's
 * statements are finalized before the pool closes it (sqlite refuses to close otherwise).
 * Results are what knex expects from node-sqlite3: rows for `all`, the statement (`lastID`,
 * `changes`) as the callback's `this`.
 */
import type { Knex } from 'knex';

const MAX_STATEMENTS = 128;

type Callback = (this: unknown, err: Error | null, rows?: unknown) => void;

interface SqliteStatement {
  all(params: unknown[], cb: Callback): void;
  run(params: unknown[], cb: Callback): void;
  finalize(cb?: (err: Error | null) => void): void;
}

interface SqliteDatabase {
  prepare(sql: string, cb: (err: Error | null) => void): SqliteStatement;
}

interface QueryObject {
  sql?: string;
  bindings?: unknown[];
  method?: string;
  returning?: unknown;
  response?: unknown;
  context?: unknown;
}

/** The node-sqlite3 method knex's sqlite3 client would call for this query. */
function callMethod(obj: QueryObject): 'all' | 'run' {
  switch (obj.method) {
    case 'insert':
    case 'update':
      return obj.returning ? 'all' : 'run';
    case 'counter':
    case 'del':
      return 'run';
    default:
      return 'all';
  }
}

/** Makes `db` (a knex instance on sqlite3) run its queries through per-connection prepared statements. */
export function cacheStatements(db: Knex): void {
  const caches = new WeakMap<SqliteDatabase, Map<string, Promise<SqliteStatement>>>();
  /** Finalizes under way per connection: a connection closes only after them. */
  const finalizing = new WeakMap<SqliteDatabase, Set<Promise<void>>>();
  const client = db.client as unknown as {
    _query(connection: SqliteDatabase, obj: QueryObject): Promise<QueryObject>;
    destroyRawConnection(connection: SqliteDatabase): Promise<void>;
  };

  const finalize = (connection: SqliteDatabase, entry: Promise<SqliteStatement>): void => {
    let set = finalizing.get(connection);
    if (!set) {
      set = new Set();
      finalizing.set(connection, set);
    }
    const done: Promise<void> = entry
      .then(
        (stmt) => new Promise<void>((resolve) => stmt.finalize(() => resolve())),
        () => undefined,
      )
      .finally(() => set.delete(done));
    set.add(done);
  };

  /** The prepared statement, prepared on first use; a failed prepare is not kept. */
  const statement = (connection: SqliteDatabase, sql: string): Promise<SqliteStatement> => {
    let cache = caches.get(connection);
    if (!cache) {
      cache = new Map();
      caches.set(connection, cache);
    }
    const known = cache.get(sql);
    if (known) {
      cache.delete(sql);
      cache.set(sql, known);
      return known;
    }
    const prepared = new Promise<SqliteStatement>((resolve, reject) => {
      // Calls queued on a statement whose prepare fails are never answered: run only once it is prepared.
      const stmt = connection.prepare(sql, (err) => (err ? reject(err) : resolve(stmt)));
    });
    cache.set(sql, prepared);
    prepared.catch(() => forget(connection, sql, prepared));
    if (cache.size > MAX_STATEMENTS) {
      const [oldest, old] = cache.entries().next().value as [string, Promise<SqliteStatement>];
      cache.delete(oldest);
      finalize(connection, old);
    }
    return prepared;
  };

  const forget = (connection: SqliteDatabase, sql: string, entry: Promise<SqliteStatement>) => {
    const cache = caches.get(connection);
    if (cache?.get(sql) !== entry) return;
    cache.delete(sql);
    finalize(connection, entry);
  };

  // sqlite3_close refuses a connection with statements still prepared (SQLITE_BUSY): the pool's
  // destroy would fail and leave the file open. Finalize them all first.
  const destroy = client.destroyRawConnection.bind(client);
  client.destroyRawConnection = async (connection) => {
    const cache = caches.get(connection);
    caches.delete(connection);
    for (const entry of cache?.values() ?? []) finalize(connection, entry);
    await Promise.all([...(finalizing.get(connection) ?? [])]);
    return destroy(connection);
  };

  client._query = async (connection, obj) => {
    const sql = obj.sql;
    if (!sql) throw new Error('The query is empty');
    const method = callMethod(obj);
    const entry = statement(connection, sql);
    const stmt = await entry;
    return new Promise<QueryObject>((resolve, reject) => {
      stmt[method](obj.bindings ?? [], function (this: unknown, err, rows) {
        if (err) {
          forget(connection, sql, entry);
          return reject(err);
        }
        obj.response = rows;
        // knex reads lastID and changes from the statement (its processResponse).
        obj.context = this;
        resolve(obj);
      });
    });
  };
}
