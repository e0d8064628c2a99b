/**
 * Resource event benchmarks (not tests), sqlite, measured in one run:
 * - item creates at full speed (50 connections), for scale;
 * - item edits (PATCH /memory/items, one edit per item) offered at a sustained BENCH_EVENT_RATE
 *   (default 1,000/s) in a datastore with no trigger URL vs the same edits in a datastore with
 *   one collection-level onEdit URL: write p50 and p99 (target: the trigger adds ≤ 10 % to p99);
 * - delivery: onEdit calls received by a bare node:http receiver, from the first edit until all
 *   arrived, and how many had arrived when the writes ended (target: deliveries keep up with
 *   ≥ 1,000 writes/s).
 * Every item is edited once, so the onEdit window (2 per item per minute) drops nothing.
 */
import autocannon from 'autocannon';
import { startServer, baselineLoad, report, type LoadResult } from './lib.js';

interface DemoInfo { url: string; dataDir: string; bootstrap: { clientId: string; clientSecret: string; orgId: string } }

/** Edits per phase; phases alternate (no trigger, trigger) for BENCH_EVENT_ROUNDS rounds and medians are reported, so one noisy phase does not decide. */
const ITEMS = Number(process.env.BENCH_EVENT_ITEMS ?? 5_000);
const ROUNDS = Number(process.env.BENCH_EVENT_ROUNDS ?? 3);
/** BENCH_NO_DELIVERY=1: the service only records the calls (RUN_CONCURRENCY=0), to tell the outbox's cost from the deliveries'. */
const NO_DELIVERY = Boolean(process.env.BENCH_NO_DELIVERY);
/** Offered load of the edit phases: a sustained rate, so p99 compares like with like (not two saturated queues). */
const RATE = Number(process.env.BENCH_EVENT_RATE ?? 1000);

async function json(url: string, init: RequestInit & { token?: string } = {}): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any -- bench responses of several shapes
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  const res = await fetch(url, { ...init, headers });
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** `amount` requests over 50 connections; `path(i)` names the i-th request's path. */
async function drive(name: string, base: string, token: string, method: 'POST' | 'PATCH', path: (i: number) => string, body: (i: number) => string, opts: { rate?: number; amount: number }): Promise<LoadResult> {
  let i = 0;
  const result = await autocannon({
    url: base,
    connections: 50,
    amount: opts.amount,
    ...(opts.rate ? { overallRate: opts.rate } : {}),
    requests: [{
      method,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      setupRequest: (req) => {
        const n = i++;
        return { ...req, path: path(n), body: body(n) };
      },
    }],
  });
  // amount-bound runs are short: the per-second average is too coarse, so divide by the duration.
  return { name, requests: result.requests.total, reqPerSec: Math.round(result.requests.total / result.duration), p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx, errors: result.errors };
}

async function itemIds(base: string, token: string, collectionId: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const page: { items: Array<{ itemId: string }>; nextCursor: string | null } = await json(`${base}/v1/collections/${collectionId}/items?limit=200${cursor ? `&cursor=${cursor}` : ''}`, { token });
    ids.push(...page.items.map((x) => x.itemId));
    cursor = page.nextCursor;
  } while (cursor);
  return ids;
}

export async function run(): Promise<void> {
  const base = await baselineLoad();
  const receiver = await startServer<{ url: string }>('bench/servers/event-receiver.ts');
  const target = await startServer<DemoInfo>('bench/servers/switchyard-demo.ts', { OUTBOUND_ALLOWLIST: '127.0.0.0/8', ...(NO_DELIVERY ? { RUN_CONCURRENCY: '0' } : {}) });
  try {
    const url = target.info.url;
    const b = target.info.bootstrap;
    const tok = await fetch(`${url}/oauth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: b.clientId, client_secret: b.clientSecret, scope: `org:${b.orgId}` }) });
    const token = ((await tok.json()) as { access_token: string }).access_token;
    const plain = (await json(`${url}/v1/collections`, { method: 'POST', token, body: JSON.stringify({ name: 'plain', type: 'structured_datastore' }) })).collectionId as string;
    const hooked = (await json(`${url}/v1/collections`, { method: 'POST', token, body: JSON.stringify({ name: 'hooked', type: 'structured_datastore', triggerUrls: [{ event: 'onEdit', url: `${receiver.info.url}/hook`, apiKey: 'bench-key' }] }) })).collectionId as string;

    const creates: LoadResult[] = [];
    for (const [label, id] of [['plain', plain], ['hooked', hooked]] as const) {
      creates.push(await drive(`create items (${label}; onCreate not configured)`, url, token, 'POST', () => `/memory/items?collectionId=${id}`, (n) => JSON.stringify({ key: `k-${n}`, content: { n, name: `customer ${n}` } }), { amount: ITEMS * ROUNDS }));
    }
    const plainIds = await itemIds(url, token, plain);
    const hookedIds = await itemIds(url, token, hooked);
    const edit = (n: number) => JSON.stringify({ content: { n: -n, stage: 'edited' } });
    const count = async () => ((await json(`${receiver.info.url}/count`)) as { count: number }).count;

    const plainRuns: LoadResult[] = [];
    const hookedRuns: Array<LoadResult & { atEnd: number; drainMs: number }> = [];
    for (let round = 0; round < ROUNDS; round++) {
      const offset = round * ITEMS;
      plainRuns.push(await drive(`round ${round + 1}: edits at ${RATE}/s, no trigger URL`, url, token, 'PATCH', (n) => `/memory/items/${plainIds[offset + n]}?collectionId=${plain}`, edit, { rate: RATE, amount: ITEMS }));
      const before = await count();
      const t0 = performance.now();
      const r = await drive(`round ${round + 1}: edits at ${RATE}/s, one onEdit trigger URL each`, url, token, 'PATCH', (n) => `/memory/items/${hookedIds[offset + n]}?collectionId=${hooked}`, edit, { rate: RATE, amount: ITEMS });
      const atEnd = (await count()) - before;
      const deadline = Date.now() + (NO_DELIVERY ? 0 : 120_000);
      while ((await count()) - before < r.requests && Date.now() < deadline) await new Promise((res) => setTimeout(res, 20));
      hookedRuns.push({ ...r, atEnd, drainMs: performance.now() - t0 });
    }

    report('Item writes on sqlite (50 connections)', base, [...creates, ...plainRuns, ...hookedRuns]);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const p99Plain = median(plainRuns.map((r) => r.p99));
    const p99Hooked = median(hookedRuns.map((r) => r.p99));
    console.log(`- median p99 over ${ROUNDS} rounds: ${p99Plain} ms without, ${p99Hooked} ms with one onEdit trigger: +${(((p99Hooked - p99Plain) / Math.max(1, p99Plain)) * 100).toFixed(1)} % (target ≤ 10 %); median p50 ${median(plainRuns.map((r) => r.p50))} → ${median(hookedRuns.map((r) => r.p50))} ms`);
    if (NO_DELIVERY) {
      console.log('- deliveries: off (BENCH_NO_DELIVERY): the calls were only written to the outbox');
    } else {
      const total = hookedRuns.reduce((n, r) => n + r.requests, 0);
      const atEnd = hookedRuns.reduce((n, r) => n + r.atEnd, 0);
      const ms = hookedRuns.reduce((n, r) => n + r.drainMs, 0);
      console.log(`- deliveries: ${total} edits with a trigger; ${atEnd} delivered by the end of their phase; all delivered at ${Math.round(total / (ms / 1000))}/s from each phase's first edit to its last delivery (target: keep up with ≥ 1,000 writes/s)`);
    }
  } finally {
    await target.stop();
    await receiver.stop();
  }
}
