/**
 * Shared by the write-path tests (issue 14): run workers on a test store with real parts (the
 * sandbox pool, the local blob store, in-process signals and queue), and a log of every SQL
 * statement a store runs, BEGIN and COMMIT included, grouped into transactions.
 */
import type { Knex } from 'knex';
import { loadConfig } from '../../../src/config/index.js';
import { createLogger } from '../../../src/config/logger.js';
import { createWorkflow, SandboxPool } from '../../../src/engine/index.js';
import { probeIsolation } from '../../../src/containment/index.js';
import { InProcessRunQueue } from '../../../src/runs/run-queue.js';
import { openBlobStore } from '../../../src/kernel/blobs.js';
import { insertRuns, runRows } from '../../../src/runs/runs.js';
import { createSignals, type Signals } from '../../../src/runs/signals.js';
import { RunWorkers } from '../../../src/runs/worker.js';
import { storeKind } from '../../../src/storage/db.js';
import type { TestStore } from '../../helpers/store.js';

export const silent = createLogger('silent');

/** A code step that keeps the sandbox busy for `ms` (the sandbox has no timers), then runs `then`. */
export const busyStep = (name: string, ms: number, then = 'return "done";') => ({
  type: 'code',
  name,
  code: `const end = Date.now() + ${ms}; while (Date.now() < end) { /* busy */ }\n${then}`,
});

/** Like the demo workflow: two code steps, the second writes report.md. */
export const DEMO_STEPS = [
  { type: 'code', name: 'Compute greeting', code: 'return `Hello, ${ctx.inputs.name ?? "world"}!`;' },
  {
    type: 'code',
    name: 'Write report',
    code: 'ctx.files.write("report.md", `# ${ctx.steps[0].result}`, "text/markdown"); return "written";',
  },
];

export async function addWorkflow(db: Knex, orgId: string, steps: readonly Record<string, unknown>[]): Promise<string> {
  return (await createWorkflow(db, orgId, { name: 'Write path', steps } as never)).automationId;
}

/** Inserts one PENDING run (no step rows, as a trigger call does) and returns its id. */
export async function addRun(
  db: Knex,
  orgId: string,
  automationId: string,
  inputs: Record<string, unknown> = {},
): Promise<string> {
  const rows = runRows({
    orgId,
    automationId,
    automationVersion: 1,
    triggerId: null,
    inputs,
    startedBy: 'test',
    timeoutMs: 60_000,
  });
  await insertRuns(db, [rows]);
  return rows.run.id as string;
}

export interface Workers {
  workers: RunWorkers;
  queue: InProcessRunQueue;
  signals: Signals;
  blobs: ReturnType<typeof openBlobStore>;
  close(): Promise<void>;
}

/** Run workers of one process on `store` (what `npm start` runs beside HTTP), started. */
export async function startWorkers(
  store: TestStore,
  env: Record<string, string> = {},
  idleCheckMs = 250,
): Promise<Workers> {
  const config = loadConfig({
    DATA_DIR: store.dataDir,
    SEED_DEMO: 'false',
    RUN_CONCURRENCY: '1',
    CODE_ISOLATION: process.env.CODE_ISOLATION ?? 'auto',
    ...env,
  });
  const queue = new InProcessRunQueue(idleCheckMs);
  const signals = await createSignals(undefined, silent, 'test');
  const blobs = openBlobStore(config);
  const sandbox = new SandboxPool({
    isolation: await probeIsolation({ mode: config.codeIsolation }),
    size: 1,
    log: silent,
  });
  await sandbox.start();
  const workers = new RunWorkers({ db: store.db, config, log: silent, queue, sandbox, blobs, signals });
  await workers.start();
  return {
    workers,
    queue,
    signals,
    blobs,
    async close() {
      await workers.close();
      await sandbox.close();
      await signals.close();
    },
  };
}

/** A statement as the log keeps it: lower case, without identifier quotes. */
const normal = (sql: string) => sql.replace(/[`"]/g, '').replace(/\s+/g, ' ').replace(/;$/, '').trim().toLowerCase();

export interface SqlLog {
  /** Every statement, in the order the store was given them. */
  readonly statements: string[];
  stop(): void;
}

/**
 * Logs every statement `db` runs from now on. PostgreSQL: knex's query events (they include a
 * transaction's BEGIN and COMMIT). sqlite: the client's query call, which the write queue's
 * BEGIN and COMMIT also go through (they bypass knex's query events).
 */
export function logSql(db: Knex): SqlLog {
  const statements: string[] = [];
  if (storeKind(db) === 'pg') {
    const on = (q: { sql: string }) => statements.push(normal(q.sql));
    db.on('query', on);
    return { statements, stop: () => db.off('query', on) };
  }
  const client = db.client as unknown as { _query: (conn: unknown, obj: { sql: string }) => Promise<unknown> };
  const original = client._query;
  client._query = function (this: unknown, conn, obj) {
    statements.push(normal(obj.sql));
    return original.call(this, conn, obj);
  };
  return { statements, stop: () => void (client._query = original) };
}

/** Writes: INSERT, UPDATE, DELETE, and the claim of several runs on PostgreSQL (WITH … UPDATE). */
const WRITE = /^(insert|update|delete)\b|^with\b.*\bupdate\b/;

/** The writes of the log, grouped into transactions (an autocommitted write is a transaction of its own). */
export function transactions(statements: readonly string[]): string[][] {
  const out: string[][] = [];
  let open: string[] | undefined;
  for (const s of statements) {
    if (s === 'begin') open = [];
    else if (s === 'commit') {
      if (open?.length) out.push(open);
      open = undefined;
    } else if (s === 'rollback') open = undefined;
    else if (WRITE.test(s)) {
      if (open) open.push(s);
      else out.push([s]);
    }
  }
  return out;
}

export const isFinish = (s: string) => s.startsWith('update runs set status = ') && s.includes('finished_at');
export const isClaim = (s: string) =>
  /\bupdate runs set status = /.test(s) && s.includes('claimed_by = ') && !s.includes('finished_at');
export const isStepWrite = (s: string) => /^(insert into|update) run_steps\b/.test(s);
export const isFileWrite = (s: string) => /^insert into files\b/.test(s);

export async function until(
  what: string,
  cond: () => Promise<boolean> | boolean,
  timeoutMs = 15_000,
  everyMs = 5,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
