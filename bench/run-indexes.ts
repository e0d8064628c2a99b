/**
 * What the runs listing's indexes cost the busiest write: accepting a run inserts one PENDING
 * row into `runs` (group commit: many rows per transaction). Measured on the store alone, without
 * HTTP, where a few microseconds show: sqlite files migrated to three points of the schema
 * (before the listing existed, its first three full indexes, the current ones), each loaded with
 * BENCH_RUN_INDEXES_ROWS rows (default 100,000) in transactions of BENCH_RUN_INDEXES_BATCH
 * (default 100) as the service writes them (src/runs/runs.ts `runRows`), alternating over
 * BENCH_RUN_INDEXES_ROUNDS (default 3). Prints microseconds per run and the ratio to the schema
 * before the listing, the baseline of the same round.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStore } from '../src/storage/db.js';
import { migrations } from '../src/storage/migrations/index.js';
import { runRows } from '../src/runs/index.js';

const ROWS = Number(process.env.BENCH_RUN_INDEXES_ROWS ?? 100_000);
const BATCH = Number(process.env.BENCH_RUN_INDEXES_BATCH ?? 100);
const ROUNDS = Number(process.env.BENCH_RUN_INDEXES_ROUNDS ?? 3);
const ORG = 'org_0190f3a2b4c5d6e7f8091a2b3c4d5e6f';

/** Microseconds per inserted run over a store migrated up to and including `last`. */
async function insertCost(last: string): Promise<number> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-indexes-'));
  const db = openStore({ dataDir: dir });
  try {
    for (const m of migrations.slice(0, migrations.findIndex((x) => x.name === last) + 1)) await m.up(db);
    const now = new Date().toISOString();
    await db('organizations').insert({ id: ORG, name: 'Bench', created_at: now });
    const t0 = performance.now();
    for (let i = 0; i < ROWS; i += BATCH) {
      const rows = [];
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
      }
      await db.transaction(async (trx) => {
        await trx('runs').insert(rows);
      });
    }
    return ((performance.now() - t0) * 1000) / ROWS;
  } finally {
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<void> {
  const schemas: Array<[string, string]> = [
    ['before the runs listing (013)', '013_run_trace_link'],
    ['three full listing indexes (014)', '014_run_listing_indexes'],
    ['current: status index, partial workflow and trigger indexes', migrations[migrations.length - 1]!.name],
  ];
  console.log(
    `\n## Accepting a run: the insert into \`runs\` (${ROWS.toLocaleString('en')} rows, ${BATCH} a transaction, sqlite)`,
  );
  console.log('| round | schema | µs per run | ratio to before the listing |');
  console.log('|---|---|---:|---:|');
  for (let round = 1; round <= ROUNDS; round++) {
    let base = 0;
    for (const [label, last] of schemas) {
      const us = await insertCost(last);
      if (base === 0) base = us;
      console.log(`| ${round} | ${label} | ${us.toFixed(2)} | ${(us / base).toFixed(2)} |`);
    }
  }
}
