/**
 * Table changes within one process, per store (DESIGN.md section 3: the owner's writes keep its
 * caches true). The owning context's write functions call `tableChanged` after a write; the
 * per-process caches built over a table (trigger call targets, the gateway's catalogue, the
 * connection cache) `watchTables` it and forget the organisation's entries. So a write made
 * through the owner's function — by an HTTP handler, an MCP tool, or any other caller in this
 * process — is seen by the next cached read at once, and no caller has to remember to clear a
 * cache. Other processes still see a change within their caches' TTL.
 *
 * Watchers are held weakly: a cache that is no longer used is collected with its store.
 */
import type { Knex } from 'knex';
import type { TableName } from './tables.js';

/** Something that holds per-organisation entries derived from a table. */
export interface TableWatcher {
  forgetOrg(orgId: string): void;
}

type Watchers = Map<TableName, Set<WeakRef<TableWatcher>>>;

/** Keyed by the store's client config, which a transaction shares with the store it runs on. */
const byStore = new WeakMap<object, Watchers>();

function storeKey(db: Knex): object {
  return db.client.config as object;
}

/** `watcher.forgetOrg(orgId)` runs after every change to one of `tables` made through `tableChanged`. */
export function watchTables(db: Knex, tables: readonly TableName[], watcher: TableWatcher): void {
  const key = storeKey(db);
  let watchers = byStore.get(key);
  if (!watchers) byStore.set(key, (watchers = new Map()));
  const ref = new WeakRef(watcher);
  for (const table of tables) {
    let set = watchers.get(table);
    if (!set) watchers.set(table, (set = new Set()));
    set.add(ref);
  }
}

function tell(key: object, table: TableName, orgId: string): void {
  const set = byStore.get(key)?.get(table);
  if (!set) return;
  for (const ref of set) {
    const watcher = ref.deref();
    if (watcher) watcher.forgetOrg(orgId);
    else set.delete(ref);
  }
}

/**
 * Tells the watchers of `table` that the organisation's rows changed. Inside a transaction they
 * are told once it commits (a read between the write and the commit would cache the old rows
 * again); on a rolled-back transaction they are not told.
 */
export function tableChanged(db: Knex, table: TableName, orgId: string): void {
  const key = storeKey(db);
  const trx = db as unknown as { isTransaction?: boolean; executionPromise?: Promise<unknown> };
  if (trx.isTransaction && trx.executionPromise) {
    trx.executionPromise.then(
      () => tell(key, table, orgId),
      () => undefined,
    );
    return;
  }
  tell(key, table, orgId);
}
