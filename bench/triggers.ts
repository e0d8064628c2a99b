/**
 * Trigger benchmarks (not tests):
 * 1. Async trigger acceptance on the demo workflow, 50 connections, against a bare node:http
 *    server in the same run; every 200 must be a durable run (counted in the store after).
 * 2. Sync trigger of a one-step no-op workflow: added latency over the step's own duration.
 */
import { openStore } from '../src/storage/db.js';
import { startServer, load, report, baselineLoad, type LoadResult } from './lib.js';

interface DemoInfo {
  url: string;
  dataDir: string;
  bootstrap: { apiKey: string; clientId: string; clientSecret: string; orgId: string; demo: { apiTriggerId: string } };
}

async function countRuns(dataDir: string): Promise<number> {
  const db = openStore({ dataDir });
  try {
    const [row] = await db('runs').count({ n: '*' });
    return Number(row!.n);
  } finally {
    await db.destroy();
  }
}

async function acceptance(name: string, env: Record<string, string>): Promise<LoadResult & { durable: number }> {
  const target = await startServer<DemoInfo>('bench/servers/switchyard-demo.ts', env);
  let result: LoadResult;
  try {
    result = await load(name, {
      url: `${target.info.url}/ext/triggers/${target.info.bootstrap.demo.apiTriggerId}`,
      method: 'POST',
      headers: { 'x-api-key': target.info.bootstrap.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench' }),
    });
  } finally {
    await target.stop();
  }
  return { ...result, durable: await countRuns(target.info.dataDir) };
}

function pct(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

async function syncLatency(): Promise<void> {
  const target = await startServer<DemoInfo>('bench/servers/switchyard-demo.ts');
  try {
    const b = target.info.bootstrap;
    const tokenRes = await fetch(`${target.info.url}/oauth/token`, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: b.clientId,
        client_secret: b.clientSecret,
        scope: `org:${b.orgId}`,
      }),
    });
    const token = ((await tokenRes.json()) as { access_token: string }).access_token;
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const wf = (await (
      await fetch(`${target.info.url}/v1/workflows`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ name: 'noop', steps: [{ type: 'code', name: 'noop', code: 'return 1;' }] }),
      })
    ).json()) as { automationId: string };
    const trg = (await (
      await fetch(`${target.info.url}/v1/triggers`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ automationId: wf.automationId, kind: 'api' }),
      })
    ).json()) as { triggerId: string };
    const added: number[] = [];
    const total: number[] = [];
    const n = Number(process.env.BENCH_SYNC_CALLS ?? 300);
    for (let i = 0; i < n + 20; i++) {
      const t0 = performance.now();
      const res = await fetch(`${target.info.url}/ext/triggers/${trg.triggerId}`, {
        method: 'POST',
        headers: { 'x-api-key': b.apiKey, 'x-api-wait': 'true', 'content-type': 'application/json' },
        body: '{}',
      });
      const body = (await res.json()) as { status: string; results: { duration: number }[] };
      const ms = performance.now() - t0;
      if (body.status !== 'COMPLETE') throw new Error(`sync run ended ${body.status}`);
      if (i < 20) continue; // warm-up
      total.push(ms);
      added.push(ms - body.results[0]!.duration);
    }
    console.log('\n## Sync trigger of a one-step no-op workflow (sequential, after 20 warm-up calls)');
    console.log('| measure | p50 ms | p99 ms |');
    console.log('|---|---:|---:|');
    console.log(`| total round trip | ${pct(total, 50).toFixed(2)} | ${pct(total, 99).toFixed(2)} |`);
    console.log(`| added over the step's own duration | ${pct(added, 50).toFixed(2)} | ${pct(added, 99).toFixed(2)} |`);
  } finally {
    await target.stop();
  }
}

export async function run(): Promise<void> {
  const base = await baselineLoad();
  const acceptOnly = await acceptance('async trigger, accept only (RUN_CONCURRENCY=0)', { RUN_CONCURRENCY: '0' });
  const withWorkers = await acceptance('async trigger, accept + execute in-process', {});
  report('Async trigger acceptance on the demo workflow (50 connections)', base, [acceptOnly, withWorkers]);
  for (const r of [acceptOnly, withWorkers]) {
    const ok = r.requests - r.non2xx;
    console.log(
      `- ${r.name}: ${ok} answered 200, ${r.durable} runs durable in the store${ok > r.durable ? ' — MISSING RUNS' : ''}`,
    );
    if (ok > r.durable) throw new Error('a 200 was answered for a run that is not in the store');
  }
  await syncLatency();
}
