import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { migrations } from './migrations/index.js';
import { cacheStatements } from './statement-cache.js';

export type { Knex };
export type StoreKind = 'sqlite' | 'pg';

/** Connections to the sqlite file (node's threadpool runs 4 queries at once by default). */
const SQLITE_POOL_MAX = 4;

export interface StoreOptions {
  /** PostgreSQL connection string; when absent or null the sqlite file under dataDir is used. */
  databaseUrl?: string | null | undefined;
  dataDir: string;
  /**
   * sqlite `synchronous`: NORMAL (default) makes every commit durable against a process
   * crash (kill -9); FULL also against power loss, at one fsync per commit (SQLITE_SYNCHRONOUS).
   */
  sqliteSynchronous?: 'NORMAL' | 'FULL' | undefined;
  /** PostgreSQL schema to use (tests isolate themselves in one schema each). */
  pgSchema?: string | undefined;
  sqliteFile?: string | undefined;
}

export function storeKind(db: Knex): StoreKind {
  return db.client.config.client === 'pg' ? 'pg' : 'sqlite';
}

/** Opens the store (sqlite file with WAL by default, PostgreSQL with DATABASE_URL). */
export function openStore(opts: StoreOptions): Knex {
  if (opts.databaseUrl) {
    const schema = opts.pgSchema;
    return knexFactory({
      client: 'pg',
      connection: opts.databaseUrl,
      searchPath: schema ? [schema] : undefined,
      pool: {
        min: 0,
        max: 10,
        afterCreate: schema
          ? (
              conn: { query: (sql: string, cb: (err: Error | null) => void) => void },
              done: (err: Error | null, conn: unknown) => void,
            ) => {
              conn.query(`SET search_path TO "${schema}"`, (err) => done(err, conn));
            }
          : undefined,
      },
    });
  }
  const filename = opts.sqliteFile ?? path.join(opts.dataDir, 'switchyard.sqlite');
  const synchronous = opts.sqliteSynchronous === 'FULL' ? 'FULL' : 'NORMAL';
  const db = knexFactory({
    client: 'sqlite3',
    connection: { filename },
    useNullAsDefault: true,
    pool: {
      // WAL lets readers run beside the one writer; writers queue on busy_timeout.
      min: 1,
      max: SQLITE_POOL_MAX,
      afterCreate: (
        conn: { exec: (sql: string, cb: (err: Error | null) => void) => void },
        done: (err: Error | null, conn: unknown) => void,
      ) => {
        // WAL for concurrent readers; a busy timeout instead of SQLITE_BUSY errors.
        conn.exec(
          `PRAGMA journal_mode = WAL; PRAGMA synchronous = ${synchronous}; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;`,
          (err) => done(err, conn),
        );
      },
    },
  });
  cacheStatements(db);
  return db;
}

/** Runs every pending migration; returns the names applied. */
export async function migrate(db: Knex): Promise<string[]> {
  const [, applied] = (await db.migrate.latest({
    migrationSource: {
      getMigrations: async () => migrations.map((m) => m.name),
      getMigrationName: (name: string) => name,
      getMigration: async (name: string) => {
        const m = migrations.find((x) => x.name === name);
        if (!m) throw new Error(`unknown migration ${name}`);
        return m;
      },
    },
  })) as [number, string[]];
  return applied;
}

/** Serialises JSON columns (stored as text on both backends). */
export function toJson(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}

export function fromJson<T>(value: unknown): T | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return JSON.parse(value) as T;
  return value as T;
}
