/**
 * What the runs listing's indexes cost the busiest writes: accepting a run inserts one PENDING
 * row into `runs` (group commit: many rows per transaction), and running it updates the row twice
 * (claimed, finished). Measured on the store alone, without
 * HTTP, where a few microseconds show: stores migrated to three points of the schema
 * (before the listing existed, its first three full indexes, the current ones), each loaded with
 * BENCH_RUN_INDEXES_ROWS rows (default 100,000) in transactions of BENCH_RUN_INDEXES_BATCH
 * (default 100) as the service writes them (src/runs/runs.ts `runRows`), alternating over
 * BENCH_RUN_INDEXES_ROUNDS (default 3). Prints microseconds per run and the ratio to the schema
 * before the listing, the baseline of the same round. BENCH_RUN_INDEXES_STORE=pg does the same on
 * PostgreSQL (BENCH_PG_URL), in a database made for each load and dropped after.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { openStore, type Knex } from '../src/storage/db.js';
import { migrations } from '../src/storage/migrations/index.js';
import { runRows } from '../src/runs/index.js';

const ROWS = Number(process.env.BENCH_RUN_INDEXES_ROWS ?? 100_000);
const BATCH = Number(process.env.BENCH_RUN_INDEXES_BATCH ?? 100);
const ROUNDS = Number(process.env.BENCH_RUN_INDEXES_ROUNDS ?? 3);
const ORG = 'org_0190f3a2b4c5d6e7f8091a2b3c4d5e6f';
const PG = process.env.BENCH_RUN_INDEXES_STORE === 'pg';
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** A fresh store: a sqlite file in a new folder, or a new PostgreSQL database. */
async function freshStore(): Promise<{ db: Knex; drop: () => Promise<void> }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-indexes-'));
  if (!PG) {
    const db = openStore({ dataDir: dir });
    return { db, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `bench_run_indexes_${process.pid}_${Date.now()}`;
  await admin(`create database ${name}`);
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  const db = openStore({ dataDir: dir, databaseUrl: url.toString() });
  return {
    db,
    drop: async () => {
      rmSync(dir, { recursive: true, force: true });
      await admin(`drop database if exists ${name} with (force)`);
    },
  };
}

/**
 * Microseconds per run over a store migrated up to and including `last`: inserting it as a
 * trigger call does, then claiming and finishing it as a worker does (one UPDATE each, a
 * transaction per batch).
 */
async function costs(last: string): Promise<{ insert: number; run: number }> {
  const { db, drop } = await freshStore();
  try {
    for (const m of migrations.slice(0, migrations.findIndex((x) => x.name === last) + 1)) await m.up(db);
    const now = new Date().toISOString();
    await db('organizations').insert({ id: ORG, name: 'Bench', created_at: now });
    const ids: string[] = [];
    const t0 = performance.now();
    for (let i = 0; i < ROWS; i += BATCH) {
      const rows: Record<string, unknown>[] = [];
      for (let j = 0; j < BATCH; j++) {
        const { run } = runRows({
          orgId: ORG,
          automationId: 'wf_0190f3a2b4c5d6e7f8091a2b3c4d5e70',
          automationVersion: 1,
          triggerId: 'trg_0190f3a2b4c5d6e7f8091a2b3c4d5e71',
          inputs: { name: 'bench' },
          startedBy: 'api_trigger',
          timeoutMs: 60_000,
        });
        rows.push(run);
        ids.push(run.id as string);
      }
      await db.transaction(async (trx) => {
        await trx('runs').insert(rows);
      });
    }
    const inserted = performance.now();
    const lease = new Date(Date.now() + 60_000).toISOString();
    for (let i = 0; i < ids.length; i += BATCH) {
      const batch = ids.slice(i, i + BATCH);
      await db.transaction(async (trx) => {
        for (const id of batch)
          await trx('runs')
            .where({ id, status: 'PENDING' })
            .update({ status: 'RUNNING', claimed_by: 'bench', lease_until: lease, started_at: now, attempts: 1 });
      });
      await db.transaction(async (trx) => {
        for (const id of batch)
          await trx('runs')
            .where({ id, status: 'RUNNING' })
            .update({ status: 'COMPLETE', finished_at: now, error: null, lease_until: null });
      });
    }
    return {
      insert: ((inserted - t0) * 1000) / ROWS,
      run: ((performance.now() - inserted) * 1000) / ROWS,
    };
  } finally {
    await db.destroy();
    await drop();
  }
}

export async function run(): Promise<void> {
  const schemas: Array<[string, string]> = [
    ['before the runs listing (013)', '013_run_trace_link'],
    ['three full listing indexes (014)', '014_run_listing_indexes'],
    ['current: status index, partial workflow and trigger indexes', migrations[migrations.length - 1]!.name],
  ];
  console.log(
    `\n## Accepting a run: the insert into \`runs\` (${ROWS.toLocaleString('en')} rows, ${BATCH} a transaction, ${PG ? 'PostgreSQL' : 'sqlite'})`,
  );
  console.log('| round | schema | insert: µs per run (ratio) | claim + finish: µs per run (ratio) |');
  console.log('|---|---|---:|---:|');
  for (let round = 1; round <= ROUNDS; round++) {
    let base: { insert: number; run: number } | undefined;
    for (const [label, last] of schemas) {
      const us = await costs(last);
      base ??= us;
      const cell = (x: number, b: number) => `${x.toFixed(2)} (${(x / b).toFixed(2)})`;
      console.log(`| ${round} | ${label} | ${cell(us.insert, base.insert)} | ${cell(us.run, base.run)} |`);
    }
  }
}
