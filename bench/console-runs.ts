/**
 * The console's runs page over 100,000 runs (benchmark, not a test). One organisation holds
 * BENCH_CONSOLE_RUNS (default 100,000) finished runs spread over 90 days: six workflows of very
 * different traffic (the quietest has 0.2 % of the runs), an API and a webhook trigger each, and
 * the statuses COMPLETE (89.5 %), FAILED (10 %) and TIMEOUT (0.5 %), and a backlog: the newest
 * BENCH_CONSOLE_RUNS_PENDING runs (default 5 % of them) of the busiest workflow still PENDING, as
 * a queue batch leaves them (the service runs with RUN_CONCURRENCY=0, so they stay). They are written straight
 * into the `runs` table in bulk (the rows the runs context inserts, ids made the way it makes
 * them), which takes seconds where a trigger call per run would take minutes.
 *
 * Measured: `GET /v1/runs` as the console's runs page asks for it (25 a page, newest first), for
 * the first page, deep cursor pages and each filter (workflow, trigger, status, creation time,
 * combined), including filters that match few runs or none, the walk's worst case. Server time is
 * the time to the response's first byte over a kept-alive loopback connection, beside a bare
 * node:http server's in the same run; BENCH_CONSOLE_RUNS_SAMPLES (default 200) after 5 warm-ups,
 * p50 and p99 of each. Then the runs page's render in Chromium (navigation start to its first
 * row, a fresh context each time, signed in through sessionStorage), unfiltered and filtered.
 *
 * sqlite by default; BENCH_CONSOLE_RUNS_STORE=pg on PostgreSQL (a database made for the run on
 * BENCH_PG_URL, dropped after) with Redis (BENCH_REDIS_URL).
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Pool } from 'undici';
import { v7 as uuidv7 } from 'uuid';
import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS } from '../src/browser/index.js';
import { openStore, type Knex } from '../src/storage/db.js';
import { encodeCursor } from '../src/kernel/page.js';
import { buildDist, json, prng, startServer } from './lib.js';
import { timeTo } from './console.js';

const RUNS = Number(process.env.BENCH_CONSOLE_RUNS ?? 100_000);
const SAMPLES = Number(process.env.BENCH_CONSOLE_RUNS_SAMPLES ?? 200);
const LOADS = Number(process.env.BENCH_CONSOLE_RUNS_LOADS ?? 5);
const PENDING = Number(process.env.BENCH_CONSOLE_RUNS_PENDING ?? Math.round(RUNS * 0.05));
const PG = process.env.BENCH_CONSOLE_RUNS_STORE === 'pg';
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const CHROMIUM = process.env.BROWSER_EXECUTABLE || '/usr/bin/chromium';
const DAY = 86_400_000;
const SPAN = 90 * DAY;
/** Share of the runs per workflow: four busy ones, a steady one and a quiet one. */
const WORKFLOW_SHARES = [0.35, 0.25, 0.2, 0.1, 0.098, 0.002];

interface DemoInfo {
  url: string;
  dataDir: string;
  bootstrap: { clientId: string; clientSecret: string; orgId: string };
}

interface Flow {
  automationId: string;
  api: string;
  webhook: string;
}

/** A run id at `ms` as the runs context makes them: `run_` + a UUIDv7 in hex (48 bits of milliseconds first). */
const runIdAt = (ms: number): string => `run_${uuidv7({ msecs: ms }).replace(/-/g, '')}`;

function pick<T>(r: number, items: readonly T[], shares: readonly number[]): T {
  let acc = 0;
  for (let i = 0; i < items.length; i++) {
    acc += shares[i]!;
    if (r < acc) return items[i]!;
  }
  return items[items.length - 1]!;
}

/** The seeded runs, oldest first (their ids ascend with their creation time). */
function makeRuns(orgId: string, flows: Flow[], now: number): Record<string, unknown>[] {
  const rand = prng(7);
  const start = now - SPAN;
  const rows: Record<string, unknown>[] = [];
  for (let i = 0; i < RUNS; i++) {
    // Evenly spread with jitter, so ids stay unique and ascending.
    const created = Math.floor(start + ((i + rand() * 0.9) * SPAN) / RUNS);
    const backlog = i >= RUNS - PENDING;
    const flow = backlog ? flows[0]! : pick(rand(), flows, WORKFLOW_SHARES);
    const viaWebhook = rand() < 0.3;
    const s = rand();
    const status = backlog ? 'PENDING' : s < 0.895 ? 'COMPLETE' : s < 0.995 ? 'FAILED' : 'TIMEOUT';
    const began = created + 2 + Math.floor(rand() * 20);
    const took = 5 + Math.floor(rand() * 2000);
    rows.push({
      id: runIdAt(created),
      org_id: orgId,
      workflow_id: flow.automationId,
      workflow_version: 1,
      trigger_id: viaWebhook ? flow.webhook : flow.api,
      status,
      inputs: JSON.stringify({ n: i }),
      started_by: viaWebhook ? 'webhook_trigger' : 'api_trigger',
      error: status === 'FAILED' ? 'Step "Work" failed: boom' : status === 'TIMEOUT' ? 'run timed out' : null,
      created_at: new Date(created).toISOString(),
      started_at: backlog ? null : new Date(began).toISOString(),
      finished_at: backlog ? null : new Date(began + took).toISOString(),
      attempts: backlog ? 0 : 1,
    });
  }
  return rows;
}

async function seed(db: Knex, rows: Record<string, unknown>[]): Promise<number> {
  const t0 = performance.now();
  // knex writes a multi-row insert on sqlite as a compound SELECT, at most 500 terms.
  await db.transaction(async (trx) => {
    for (let i = 0; i < rows.length; i += 500) await trx('runs').insert(rows.slice(i, i + 500));
  });
  if (PG) await db.raw('analyze runs');
  else await db.raw('pragma optimize');
  return performance.now() - t0;
}

/** Time to first byte of `n` GETs of `path` over one kept-alive connection, after 5 warm-ups. */
async function ttfb(pool: Pool, pathAndQuery: string, headers: Record<string, string>, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n + 5; i++) {
    const t0 = performance.now();
    const res = await pool.request({ method: 'GET', path: pathAndQuery, headers });
    const ms = performance.now() - t0;
    if (res.statusCode !== 200) throw new Error(`GET ${pathAndQuery}: ${res.statusCode} ${await res.body.text()}`);
    await res.body.dump();
    if (i >= 5) out.push(ms);
  }
  return out;
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const ms = (x: number) => x.toFixed(x < 10 ? 2 : 1);

async function pgDatabase(): Promise<{ env: Record<string, string>; databaseUrl: string; drop: () => Promise<void> }> {
  const name = `bench_console_runs_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  return {
    env: {
      DATABASE_URL: databaseUrl,
      REDIS_URL,
      REDIS_PREFIX: name,
      DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-')),
    },
    databaseUrl,
    drop: async () => {
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

export async function run(): Promise<void> {
  buildDist();
  const scale = PG ? await pgDatabase() : undefined;
  const baseline = await startServer<{ url: string }>('bench/servers/baseline.ts');
  const target = await startServer<DemoInfo>('bench/servers/switchyard-demo.ts', {
    ...scale?.env,
    RUN_CONCURRENCY: '0',
  });
  const db = openStore({ dataDir: target.info.dataDir, databaseUrl: scale?.databaseUrl });
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  const pool = new Pool(target.info.url, { connections: 1 });
  const basePool = new Pool(baseline.info.url, { connections: 1 });
  try {
    const { url, bootstrap: b } = target.info;
    const tok = await fetch(`${url}/oauth/token`, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: b.clientId,
        client_secret: b.clientSecret,
        scope: `org:${b.orgId}`,
      }),
    });
    const token = ((await tok.json()) as { access_token: string }).access_token;
    const flows: Flow[] = [];
    for (let i = 0; i < WORKFLOW_SHARES.length; i++) {
      const wf = await json(`${url}/v1/workflows`, {
        method: 'POST',
        token,
        body: JSON.stringify({
          name: `Bench flow ${i + 1}`,
          steps: [{ type: 'code', name: 'Work', code: 'return 1;' }],
        }),
      });
      const trigger = async (kind: string) =>
        (
          await json(`${url}/v1/triggers`, {
            method: 'POST',
            token,
            body: JSON.stringify({ automationId: wf.automationId, kind }),
          })
        ).triggerId as string;
      flows.push({ automationId: wf.automationId, api: await trigger('api'), webhook: await trigger('webhook') });
    }
    const now = Date.now();
    const rows = makeRuns(b.orgId, flows, now);
    const seedMs = await seed(db, rows);
    const ids = rows.map((r) => r.id as string).reverse(); // newest first, as the page lists them
    const busy = flows[0]!;
    const quiet = flows[5]!;
    const quietIds = rows.filter((r) => r.workflow_id === quiet.automationId).map((r) => r.id as string);
    const iso = (t: number) => new Date(t).toISOString();
    const dayAgo45 = now - 45 * DAY;
    const q = (params: Record<string, string>) => `/v1/runs?${new URLSearchParams({ limit: '25', ...params })}`;
    const cursorAfter = (id: string) => encodeCursor('runs', id);
    const queries: Array<[string, string]> = [
      ['first page', q({})],
      ['page 2 (cursor after 25)', q({ cursor: cursorAfter(ids[24]!) })],
      ['deep page (cursor after 50,000)', q({ cursor: cursorAfter(ids[Math.floor(RUNS / 2) - 1]!) })],
      ['last page (cursor after all but 10)', q({ cursor: cursorAfter(ids[RUNS - 11]!) })],
      ['workflow: busiest (35 %)', q({ automationId: busy.automationId })],
      ['workflow: quietest (0.2 %)', q({ automationId: quiet.automationId })],
      [
        'workflow: quietest, its last page',
        q({ automationId: quiet.automationId, cursor: cursorAfter(quietIds[Math.min(20, quietIds.length - 1)]!) }),
      ],
      ['trigger: busiest workflow webhook', q({ triggerId: busy.webhook })],
      ['trigger: quietest workflow API', q({ triggerId: quiet.api })],
      ['status FAILED (10 %)', q({ status: 'FAILED' })],
      ['status TIMEOUT (0.5 %)', q({ status: 'TIMEOUT' })],
      ['status RUNNING (none)', q({ status: 'RUNNING' })],
      [`status PENDING (the backlog, ${PENDING.toLocaleString('en')})`, q({ status: 'PENDING' })],
      ['time: one day, 45 days ago', q({ createdAfter: iso(dayAgo45), createdBefore: iso(dayAgo45 + DAY) })],
      ['time: the last 7 days', q({ createdAfter: iso(now - 7 * DAY) })],
      [
        'combined: busiest workflow, FAILED, one week 30 days ago',
        q({
          automationId: busy.automationId,
          status: 'FAILED',
          createdAfter: iso(now - 37 * DAY),
          createdBefore: iso(now - 30 * DAY),
        }),
      ],
      ['combined: busiest workflow, TIMEOUT', q({ automationId: busy.automationId, status: 'TIMEOUT' })],
      ['combined: quietest workflow, TIMEOUT', q({ automationId: quiet.automationId, status: 'TIMEOUT' })],
      ['combined: quietest workflow, PENDING (none)', q({ automationId: quiet.automationId, status: 'PENDING' })],
    ];
    const auth = { authorization: `Bearer ${token}` };
    const base = await ttfb(basePool, '/', {}, SAMPLES);
    console.log(
      `\n## Runs page over ${RUNS.toLocaleString('en')} runs, ${PG ? 'PostgreSQL + Redis' : 'sqlite'} (npm run bench console-runs)`,
    );
    console.log(`seeded ${RUNS.toLocaleString('en')} runs in ${(seedMs / 1000).toFixed(1)} s (bulk insert)`);
    console.log(`\n| GET /v1/runs (limit 25) | p50 ms | p99 ms | items |`);
    console.log('|---|---:|---:|---:|');
    console.log(`| baseline: bare node:http | ${ms(pct(base, 50))} | ${ms(pct(base, 99))} | |`);
    let worst = 0;
    for (const [label, pathAndQuery] of queries) {
      const page = (await json(`${url}${pathAndQuery}`, { token })) as { items: unknown[] };
      const times = await ttfb(pool, pathAndQuery, auth, SAMPLES);
      worst = Math.max(worst, pct(times, 99));
      console.log(`| ${label} | ${ms(pct(times, 50))} | ${ms(pct(times, 99))} | ${page.items.length} |`);
    }
    console.log(
      `worst p99: ${ms(worst)} ms (budget 200 ms); load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}, ${os.cpus().length} cores`,
    );

    const session = JSON.stringify({ token, expiresAt: Date.now() + 3_000_000, orgId: b.orgId, clientId: b.clientId });
    const signedIn = `sessionStorage.setItem('switchyard.console.session', ${JSON.stringify(session)});`;
    const renders: Array<[string, string]> = [
      ['runs page, unfiltered', `${url}/console/runs`],
      ['runs page, quietest workflow', `${url}/console/runs?automationId=${quiet.automationId}`],
      ['runs page, status TIMEOUT', `${url}/console/runs?status=TIMEOUT`],
    ];
    console.log(`\nrender in Chromium (navigation start to the first run's row, ${LOADS} fresh contexts each):`);
    for (const [label, pageUrl] of renders) {
      const times: number[] = [];
      for (let i = 0; i < LOADS; i++)
        times.push((await timeTo(browser, pageUrl, 'tbody tr a[href^="/console/runs/"]', [signedIn])).ms);
      console.log(`- ${label}: p50 ${pct(times, 50).toFixed(0)} ms, max ${Math.max(...times).toFixed(0)} ms`);
    }
  } finally {
    await pool.close();
    await basePool.close();
    await browser.close();
    await db.destroy();
    await target.stop();
    await baseline.stop();
    await scale?.drop();
  }
}
