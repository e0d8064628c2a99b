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
 *
 * The edit phases are paced evenly (one request every 1/RATE s over up to 50 connections, latency
 * counted from each request's scheduled time, so queueing is not hidden): autocannon's
 * `overallRate` fires every connection's timer together, i.e. bursts of 50 requests 20 times a
 * second, and its p99 then measures how long a burst takes to drain. Both are reported.
 */
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { Pool } from 'undici';
import path from 'node:path';
import { startServer, baselineLoad, cpuMs, json, report, ROOT, type LoadResult } from './lib.js';

interface DemoInfo {
  url: string;
  dataDir: string;
  bootstrap: { clientId: string; clientSecret: string; orgId: string };
}

/** Edits per phase; phases alternate (no trigger, trigger) for BENCH_EVENT_ROUNDS rounds and medians are reported, so one noisy phase does not decide. */
const ITEMS = Number(process.env.BENCH_EVENT_ITEMS ?? 5_000);
const ROUNDS = Number(process.env.BENCH_EVENT_ROUNDS ?? 3);
/** BENCH_NO_DELIVERY=1: the service only records the calls (RUN_CONCURRENCY=0), to tell the outbox's cost from the deliveries'. */
const NO_DELIVERY = Boolean(process.env.BENCH_NO_DELIVERY);
/** BENCH_EVENT_WORKER=1: the API process only records (RUN_CONCURRENCY=0); a second process on the same store delivers. */
const WORKER = Boolean(process.env.BENCH_EVENT_WORKER);
/** BENCH_EVENT_CONTROL=1: an A/A run, the second collection without its trigger URL too, to see how much the phase order alone moves the figures. */
const AA = Boolean(process.env.BENCH_EVENT_CONTROL);
/**
 * BENCH_EVENT_SHADOW=1: an A/A run (no trigger URL on either collection) in which, during the second
 * phase, another process sends the receiver the same calls at the same rate: what the machine's
 * extra HTTP traffic alone does to the service's p99, apart from anything the service does.
 */
const SHADOW = Boolean(process.env.BENCH_EVENT_SHADOW);
const CONTROL = AA || SHADOW;
/** How the summary names the second phase of each pair. */
const SECOND = SHADOW
  ? 'with shadow calls to the receiver'
  : AA
    ? 'in the A/A control phase'
    : 'with one onEdit trigger';
/** Offered load of the edit phases: a sustained rate, so p99 compares like with like (not two saturated queues). */
const RATE = Number(process.env.BENCH_EVENT_RATE ?? 1000);

/** `amount` requests over 50 connections; `path(i)` names the i-th request's path. */
async function drive(
  name: string,
  base: string,
  token: string,
  method: 'POST' | 'PATCH',
  path: (i: number) => string,
  body: (i: number) => string,
  opts: { rate?: number; amount: number },
): Promise<LoadResult> {
  let i = 0;
  const result = await autocannon({
    url: base,
    connections: 50,
    amount: opts.amount,
    ...(opts.rate ? { overallRate: opts.rate } : {}),
    requests: [
      {
        method,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        setupRequest: (req) => {
          const n = i++;
          return { ...req, path: path(n), body: body(n) };
        },
      },
    ],
  });
  // amount-bound runs are short: the per-second average is too coarse, so divide by the duration.
  return {
    name,
    requests: result.requests.total,
    reqPerSec: Math.round(result.requests.total / result.duration),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

/** `amount` requests evenly spaced at `rate`/s; latency from each request's scheduled start (no coordinated omission). */
async function paced(
  name: string,
  base: string,
  token: string,
  path: (i: number) => string,
  body: (i: number) => string,
  opts: { rate: number; amount: number },
): Promise<LoadResult> {
  const pool = new Pool(base, { connections: 50 });
  const latencies: number[] = [];
  let non2xx = 0;
  let errors = 0;
  const started = performance.now();
  const inFlight: Promise<void>[] = [];
  let sent = 0;
  while (sent < opts.amount) {
    const due = Math.min(opts.amount, Math.floor(((performance.now() - started) / 1000) * opts.rate) + 1);
    for (; sent < due; sent++) {
      const scheduled = started + (sent / opts.rate) * 1000;
      const n = sent;
      inFlight.push(
        pool
          .request({
            method: 'PATCH',
            path: path(n),
            body: body(n),
            headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          })
          .then(
            async (res) => {
              await res.body.dump();
              if (res.statusCode < 200 || res.statusCode > 299) non2xx++;
              latencies.push(performance.now() - scheduled);
            },
            () => {
              errors++;
            },
          ),
      );
    }
    await new Promise((r) => setTimeout(r, 1));
  }
  await Promise.all(inFlight);
  const duration = (performance.now() - started) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]! * 10) / 10;
  return {
    name,
    requests: latencies.length,
    reqPerSec: Math.round(latencies.length / duration),
    p50: at(0.5),
    p99: at(0.99),
    non2xx,
    errors,
  };
}

async function itemIds(base: string, token: string, collectionId: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const page: { items: Array<{ itemId: string }>; nextCursor: string | null } = await json(
      `${base}/v1/collections/${collectionId}/items?limit=200${cursor ? `&cursor=${cursor}` : ''}`,
      { token },
    );
    ids.push(...page.items.map((x) => x.itemId));
    cursor = page.nextCursor;
  } while (cursor);
  return ids;
}

export async function run(): Promise<void> {
  const base = await baselineLoad();
  const receiver = await startServer<{ url: string }>('bench/servers/event-receiver.ts');
  const target = await startServer<DemoInfo>('bench/servers/switchyard-demo.ts', {
    OUTBOUND_ALLOWLIST: '127.0.0.0/8',
    ...(NO_DELIVERY || WORKER ? { RUN_CONCURRENCY: '0' } : {}),
  });
  const worker =
    WORKER && !NO_DELIVERY
      ? await startServer<DemoInfo>('bench/servers/switchyard-demo.ts', {
          OUTBOUND_ALLOWLIST: '127.0.0.0/8',
          DATA_DIR: target.info.dataDir,
        })
      : undefined;
  try {
    const url = target.info.url;
    const b = target.info.bootstrap;
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
    const plain = (
      await json(`${url}/v1/collections`, {
        method: 'POST',
        token,
        body: JSON.stringify({ name: 'plain', type: 'structured_datastore' }),
      })
    ).collectionId as string;
    const hookedUrls = CONTROL ? [] : [{ event: 'onEdit', url: `${receiver.info.url}/hook`, apiKey: 'bench-key' }];
    const hooked = (
      await json(`${url}/v1/collections`, {
        method: 'POST',
        token,
        body: JSON.stringify({ name: 'hooked', type: 'structured_datastore', triggerUrls: hookedUrls }),
      })
    ).collectionId as string;

    const creates: LoadResult[] = [];
    for (const [label, id] of [
      ['plain', plain],
      ['hooked', hooked],
    ] as const) {
      creates.push(
        await drive(
          `create items (${label}; onCreate not configured)`,
          url,
          token,
          'POST',
          () => `/memory/items?collectionId=${id}`,
          (n) => JSON.stringify({ key: `k-${n}`, content: { n, name: `customer ${n}` } }),
          { amount: ITEMS * ROUNDS * 2 },
        ),
      );
    }
    const plainIds = await itemIds(url, token, plain);
    const hookedIds = await itemIds(url, token, hooked);
    const edit = (n: number) => JSON.stringify({ content: { n: -n, stage: 'edited' } });
    const count = async () => ((await json(`${receiver.info.url}/count`)) as { count: number }).count;

    // CPU used by the service (every process and thread of it) and by the receiver, per phase
    // (hooked phases until their last delivery): the service's own cost per edit, apart from
    // the contention of sharing the machine with the load generator and the receiver.
    const serviceCpu = () => (cpuMs(target.child.pid) ?? NaN) + (worker ? (cpuMs(worker.child.pid) ?? NaN) : 0);
    type Plain = LoadResult & { cpu: number };
    type Hooked = Plain & { atEnd: number; drainMs: number; receiverCpu: number };
    const runs = {
      burst: { plain: [] as Plain[], hooked: [] as Hooked[] },
      paced: { plain: [] as Plain[], hooked: [] as Hooked[] },
    };
    let offset = 0;
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of ['paced', 'burst'] as const) {
        const phase = async (label: string, ids: string[], id: string) => {
          const o = offset;
          const name = `round ${round + 1}: edits at ${RATE}/s ${mode === 'paced' ? 'paced evenly' : 'autocannon (bursts)'}, ${label}`;
          return mode === 'paced'
            ? paced(name, url, token, (n) => `/memory/items/${ids[o + n]}?collectionId=${id}`, edit, {
                rate: RATE,
                amount: ITEMS,
              })
            : drive(name, url, token, 'PATCH', (n) => `/memory/items/${ids[o + n]}?collectionId=${id}`, edit, {
                rate: RATE,
                amount: ITEMS,
              });
        };
        const cpu0 = serviceCpu();
        const p = await phase('no trigger URL', plainIds, plain);
        runs[mode].plain.push({ ...p, cpu: serviceCpu() - cpu0 });
        const before = await count();
        // The shadow sender starts 2 s early and waits, so its own start-up is not in the phase.
        const at = Date.now() + 2000;
        const shadow = SHADOW
          ? spawn(
              process.execPath,
              [
                '--import',
                'tsx',
                path.join(ROOT, 'bench/servers/shadow-sender.ts'),
                `${receiver.info.url}/hook`,
                String(RATE),
                String(ITEMS),
                String(at),
              ],
              { stdio: 'inherit' },
            )
          : undefined;
        if (shadow) await new Promise((res) => setTimeout(res, at - Date.now()));
        const cpu1 = serviceCpu();
        const rcpu1 = cpuMs(receiver.child.pid) ?? NaN;
        const t0 = performance.now();
        const r = await phase(
          SHADOW
            ? 'no trigger URL, shadow calls to the receiver'
            : CONTROL
              ? 'no trigger URL (A/A control)'
              : 'one onEdit trigger URL each',
          hookedIds,
          hooked,
        );
        if (shadow) await new Promise((res) => (shadow.exitCode !== null ? res(null) : shadow.once('exit', res)));
        const atEnd = (await count()) - before;
        const deadline = Date.now() + (NO_DELIVERY || CONTROL ? 0 : 120_000);
        while ((await count()) - before < r.requests && Date.now() < deadline)
          await new Promise((res) => setTimeout(res, 20));
        runs[mode].hooked.push({
          ...r,
          atEnd,
          drainMs: performance.now() - t0,
          cpu: serviceCpu() - cpu1,
          receiverCpu: (cpuMs(receiver.child.pid) ?? NaN) - rcpu1,
        });
        offset += ITEMS;
      }
    }

    report('Item writes on sqlite (50 connections)', base, [
      ...creates,
      ...runs.paced.plain,
      ...runs.paced.hooked,
      ...runs.burst.plain,
      ...runs.burst.hooked,
    ]);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    for (const mode of ['paced', 'burst'] as const) {
      const { plain: p, hooked: h } = runs[mode];
      const p99Plain = median(p.map((r) => r.p99));
      const p99Hooked = median(h.map((r) => r.p99));
      const perEdit = (rs: Plain[]) => median(rs.map((r) => (r.cpu / r.requests) * 1000)).toFixed(0);
      console.log(
        `- ${mode === 'paced' ? 'paced evenly' : 'autocannon bursts'}: service CPU per edit (median) ${perEdit(p)} µs without, ${perEdit(h)} µs ${SECOND}${CONTROL ? '' : ' (its delivery included)'}; the receiver used ${median(h.map((r) => (r.receiverCpu / r.requests) * 1000)).toFixed(0)} µs per call`,
      );
      console.log(
        `- ${mode === 'paced' ? 'paced evenly' : 'autocannon bursts'}: median p99 over ${ROUNDS} rounds: ${p99Plain} ms without, ${p99Hooked} ms ${SECOND}: ${p99Hooked >= p99Plain ? '+' : ''}${(((p99Hooked - p99Plain) / Math.max(0.1, p99Plain)) * 100).toFixed(1)} % (target ≤ 10 %); median p50 ${median(p.map((r) => r.p50))} → ${median(h.map((r) => r.p50))} ms`,
      );
    }
    const hookedRuns = [...runs.paced.hooked, ...runs.burst.hooked];
    if (CONTROL) {
      console.log(
        `- deliveries: none (${SHADOW ? 'shadow control: another process sent the receiver the calls' : 'A/A control'})`,
      );
    } else if (NO_DELIVERY) {
      console.log('- deliveries: off (BENCH_NO_DELIVERY): the calls were only written to the outbox');
    } else {
      const total = hookedRuns.reduce((n, r) => n + r.requests, 0);
      const atEnd = hookedRuns.reduce((n, r) => n + r.atEnd, 0);
      const ms = hookedRuns.reduce((n, r) => n + r.drainMs, 0);
      console.log(
        `- deliveries: ${total} edits with a trigger; ${atEnd} delivered by the end of their phase; all delivered at ${Math.round(total / (ms / 1000))}/s from each phase's first edit to its last delivery (target: keep up with ≥ 1,000 writes/s)`,
      );
    }
  } finally {
    await worker?.stop();
    await target.stop();
    await receiver.stop();
  }
}
