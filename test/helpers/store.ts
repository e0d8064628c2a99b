import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createClient } from 'redis';
import { openStore, migrate, type Knex, type StoreKind } from '../../src/storage/db.js';

/** PostgreSQL used by tests: the machine's server (trust auth, database `test`). */
export const TEST_PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

let pgAvailable: boolean | undefined;
let warned = false;

export async function isPgAvailable(): Promise<boolean> {
  if (pgAvailable !== undefined) return pgAvailable;
  const client = new pg.Client({ connectionString: TEST_PG_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('select 1');
    pgAvailable = true;
  } catch {
    pgAvailable = false;
  } finally {
    await client.end().catch(() => undefined);
  }
  return pgAvailable;
}

/**
 * The store kinds a storage test must run against. On CI (CI=true) PostgreSQL is mandatory:
 * a missing server fails the run instead of silently skipping half the suite.
 */
export async function storeKinds(): Promise<StoreKind[]> {
  if (await isPgAvailable()) return ['sqlite', 'pg'];
  if (process.env.CI === 'true') throw new Error(`PostgreSQL is required on CI but ${TEST_PG_URL} is not reachable`);
  if (!warned) {
    warned = true;
    process.stderr.write(
      `\nNOTE: PostgreSQL is not reachable at ${TEST_PG_URL}; storage tests run on sqlite only (run scripts/ensure-services.sh to start it).\n`,
    );
  }
  return ['sqlite'];
}

export interface TestStore {
  kind: StoreKind;
  db: Knex;
  dataDir: string;
  /** DATABASE_URL-style options to start a server process on the same store. */
  databaseUrl: string | undefined;
  pgSchema: string | undefined;
  close(): Promise<void>;
}

/** A fresh, migrated store: a new sqlite file, or a new PostgreSQL schema. */
export async function createTestStore(kind: StoreKind): Promise<TestStore> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-test-'));
  if (kind === 'sqlite') {
    const db = openStore({ dataDir });
    await migrate(db);
    return {
      kind,
      db,
      dataDir,
      databaseUrl: undefined,
      pgSchema: undefined,
      async close() {
        await db.destroy();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
  const schema = `t_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: TEST_PG_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA "${schema}"`);
  await admin.end();
  const db = openStore({ databaseUrl: TEST_PG_URL, dataDir, pgSchema: schema });
  await migrate(db);
  return {
    kind,
    db,
    dataDir,
    databaseUrl: TEST_PG_URL,
    pgSchema: schema,
    async close() {
      await db.destroy();
      const c = new pg.Client({ connectionString: TEST_PG_URL });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await c.end();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Deletes every Redis key under `prefix`: what a test's services wrote with that REDIS_PREFIX. */
export async function dropRedisKeys(url: string, prefix: string): Promise<void> {
  const redis = createClient({ url });
  await redis.connect();
  try {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(keys);
  } finally {
    await redis.close();
  }
}
