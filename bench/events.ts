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

const ITEMS = Number(process.env.BENCH_EVENT_ITEMS ?? 10_000);
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
async function drive(name: string, base: string, token: string, method: 'POST' | 'PATCH', path: (i: number) => string, body: (i: number) => string, rate?: number): Promise<LoadResult> {
  let i = 0;
  const result = await autocannon({
    url: base,
    connections: 50,
    amount: ITEMS,
    ...(rate ? { overallRate: rate } : {}),
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
  const target = await startServer<DemoInfo>('bench/servers/switchyard-demo.ts', { OUTBOUND_ALLOWLIST: '127.0.0.0/8' });
  try {
    const url = target.info.url;
    const b = target.info.bootstrap;
    const tok = await fetch(`${url}/oauth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: b.clientId, client_secret: b.clientSecret, scope: `org:${b.orgId}` }) });
    const token = ((await tok.json()) as { access_token: string }).access_token;
    const plain = (await json(`${url}/v1/collections`, { method: 'POST', token, body: JSON.stringify({ name: 'plain', type: 'structured_datastore' }) })).collectionId as string;
    const hooked = (await json(`${url}/v1/collections`, { method: 'POST', token, body: JSON.stringify({ name: 'hooked', type: 'structured_datastore', triggerUrls: [{ event: 'onEdit', url: `${receiver.info.url}/hook`, apiKey: 'bench-key' }] }) })).collectionId as string;

    const creates: LoadResult[] = [];
    for (const [label, id] of [['plain', plain], ['hooked', hooked]] as const) {
      creates.push(await drive(`create items (${label}; onCreate not configured)`, url, token, 'POST', () => `/memory/items?collectionId=${id}`, (n) => JSON.stringify({ key: `k-${n}`, content: { n, name: `customer ${n}` } })));
    }
    const plainIds = await itemIds(url, token, plain);
    const hookedIds = await itemIds(url, token, hooked);
    const edit = (n: number) => JSON.stringify({ content: { n: -n, stage: 'edited' } });
    const plainEdits = await drive(`edit items at ${RATE}/s, no trigger URL`, url, token, 'PATCH', (n) => `/memory/items/${plainIds[n % plainIds.length]}?collectionId=${plain}`, edit, RATE);

    const count = async () => ((await json(`${receiver.info.url}/count`)) as { count: number }).count;
    const startCount = await count();
    const t0 = performance.now();
    const hookedEdits = await drive(`edit items at ${RATE}/s, one onEdit trigger URL each`, url, token, 'PATCH', (n) => `/memory/items/${hookedIds[n % hookedIds.length]}?collectionId=${hooked}`, edit, RATE);
    const writesMs = performance.now() - t0;
    const atWritesEnd = (await count()) - startCount;
    let delivered = atWritesEnd;
    const deadline = Date.now() + 120_000;
    while (delivered < hookedEdits.requests && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
      delivered = (await count()) - startCount;
    }
    const allMs = performance.now() - t0;

    report('Item writes on sqlite (50 connections)', base, [...creates, plainEdits, hookedEdits]);
    const p99Added = (hookedEdits.p99 - plainEdits.p99) / Math.max(1, plainEdits.p99);
    console.log(`- onEdit trigger adds ${(p99Added * 100).toFixed(1)} % to write p99 (${plainEdits.p99} → ${hookedEdits.p99} ms; target ≤ 10 %), p50 ${plainEdits.p50} → ${hookedEdits.p50} ms`);
    console.log(`- writes with a trigger: ${hookedEdits.requests} in ${(writesMs / 1000).toFixed(2)} s (${Math.round(hookedEdits.requests / (writesMs / 1000))}/s); delivered when the writes ended: ${atWritesEnd}`);
    console.log(`- deliveries: ${delivered} of ${hookedEdits.requests} in ${(allMs / 1000).toFixed(2)} s from the first edit = ${Math.round(delivered / (allMs / 1000))}/s (target ≥ 1,000/s)`);
  } finally {
    await target.stop();
    await receiver.stop();
  }
}
