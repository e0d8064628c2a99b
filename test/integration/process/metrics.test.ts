/**
 * Prometheus metrics of the real processes (README "Metrics"; src/observability, src/kernel/metrics.ts):
 * after a known workload — async and sync trigger calls, a refused call, an unknown path, a
 * discovery tools/call, event calls sent, failed and dropped, a CSV batch with a bad row — a
 * scrape shows exactly the counts that workload must add (deltas from a scrape taken before it),
 * the gauges read from the store, Node's process metrics, and `promtool check metrics` finds no
 * problem. On sqlite: one service with METRICS_HOST=127.0.0.2 (honoured: 127.0.0.1 is refused),
 * 404/405 off /metrics, and a port in use failing the start with exit 2. On PostgreSQL + Redis:
 * an HTTP-only service without METRICS_PORT (nothing more listens) and `npm run worker` with it,
 * which executes the runs, delivers the events and loads the CSV.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { call, freePort } from '../../helpers/server.js';
import { bundled, startServer, waitReady, bootstrapToken } from '../../helpers/process.js';
import { createTestStore, storeKinds, TEST_PG_URL, type TestStore, dropRedisKeys } from '../../helpers/store.js';
import { startReceiver, type Receiver } from '../../helpers/receiver.js';
import { uploadCsvTo } from '../../helpers/queues.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A scrape: `name{k="v",…}` (labels sorted) → value. */
type Scrape = Map<string, number>;

function key(name: string, labels: Record<string, string> = {}): string {
  const parts = Object.keys(labels)
    .sort()
    .map((k) => `${k}="${labels[k]}"`);
  return parts.length ? `${name}{${parts.join(',')}}` : name;
}

function parse(text: string): Scrape {
  const out: Scrape = new Map();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
    out.set(key(m[1]!, labels), Number(m[3]));
  }
  return out;
}

async function scrapeText(url: string): Promise<string> {
  const res = await fetch(url);
  expect(res.status).to.equal(200);
  expect(res.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
  return res.text();
}

const scrape = async (url: string): Promise<Scrape> => parse(await scrapeText(url));

/** `promtool check metrics` on a scrape: no problem means exit 0 and no output at all. */
function promtool(text: string): void {
  const probe = spawnSync('promtool', ['--version']);
  if (probe.error) {
    // CI installs it (scripts/ensure-services.sh); elsewhere its absence is said, not hidden.
    if (process.env.CI === 'true') throw new Error('promtool is required on CI (Debian package prometheus)');
    process.stderr.write('\nNOTE: promtool is not installed; the metrics were not linted.\n');
    return;
  }
  const res = spawnSync('promtool', ['check', 'metrics'], { input: text });
  expect(`${res.stdout}${res.stderr}`, 'promtool output').to.equal('');
  expect(res.status, 'promtool exit code').to.equal(0);
}

/** Polls `probe` until it holds (the workload's background parts: runs, deliveries, loads). */
async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The TCP ports a process listens on (Linux: its socket inodes among /proc/net/tcp{,6} LISTEN rows). */
function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const row of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = row.trim().split(/\s+/);
      if (f[3] === '0A' && inodes.has(f[9]!)) ports.push(parseInt(f[1]!.split(':')[1]!, 16));
    }
  }
  return ports.sort();
}

interface Bootstrap {
  apiKey: string;
  demo: { apiTriggerId: string; datastoreId: string };
}

const ASYNC = 4;
const SYNC = 2;
const RUNS = ASYNC + SYNC;
/** Event calls: onCreate to the receiver (sent) and to a closed port (failed); 3 edits under an onEdit limit of 2. */
const EVENTS = { sent: 3, failed: 1, dropped: 1 };
const CSV = 'email,plan,seats\r\na@example.com,pro,1\r\nb@example.com,pro,2\r\nc@example.com,pro,3,extra\r\n';

/** The workload, through the service's HTTP API at `base`. */
async function workload(base: string, token: string, b: Bootstrap, rx: Receiver): Promise<void> {
  const trigger = (headers: Record<string, string>, apiKey = b.apiKey) =>
    call(base, 'POST', `/ext/triggers/${b.demo.apiTriggerId}`, {
      headers: { 'x-api-key': apiKey, ...headers },
      body: { name: 'Metrics' },
    });
  const calls = await Promise.all([
    ...Array.from({ length: ASYNC }, () => trigger({})),
    ...Array.from({ length: SYNC }, () => trigger({ 'x-api-wait': 'true' })),
  ]);
  for (const res of calls) expect(res.status, res.text).to.equal(200);
  for (const res of calls.slice(ASYNC)) expect(res.body.status, res.text).to.equal('COMPLETE');
  expect((await trigger({}, 'not-a-key')).status).to.equal(401);
  expect((await call(base, 'GET', '/no/such/path')).status).to.equal(404);
  const rpc = await call(base, 'POST', '/mcp/svc-sidekick', {
    token,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    raw: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'capabilities_discover', arguments: { request: 'send an email' } },
    }),
  });
  expect(rpc.status, rpc.text).to.equal(200);
  expect(rpc.body.result?.isError, rpc.text).to.not.equal(true);

  const ds = b.demo.datastoreId;
  const closed = await freePort();
  const patched = await call(base, 'PATCH', `/datacollection/${ds}`, {
    token,
    body: {
      triggerUrls: [
        { event: 'onCreate', url: `${rx.url}/create`, apiKey: 'k-1234' },
        { event: 'onCreate', url: `http://127.0.0.1:${closed}/create`, apiKey: 'k-1234' },
        { event: 'onEdit', url: `${rx.url}/edit`, apiKey: 'k-1234' },
      ],
    },
  });
  expect(patched.status, patched.text).to.equal(200);
  const item = await call(base, 'POST', `/memory/items?collectionId=${ds}`, {
    token,
    body: { key: 'metrics', content: { n: 0 } },
  });
  expect(item.status, item.text).to.be.oneOf([200, 201]);
  for (let n = 1; n <= 3; n++) {
    const edit = await call(base, 'PATCH', `/memory/items/${item.body.id}?collectionId=${ds}`, {
      token,
      body: { content: { n } },
    });
    expect(edit.status, edit.text).to.equal(200);
  }

  const queue = await call(base, 'POST', '/v1/queues', {
    token,
    body: { name: 'metrics', triggerId: b.demo.apiTriggerId, paused: true },
  });
  expect(queue.status, queue.text).to.equal(201);
  const queueId = queue.body.queueId as string;
  const csvKey = await uploadCsvTo(base, token, queueId, CSV);
  const batch = await call(base, 'POST', `/api/queues/${queueId}/items/csv`, {
    token,
    body: { csvKey, triggerId: b.demo.apiTriggerId },
  });
  expect(batch.status, batch.text).to.equal(202);
}

/** Delta of one series between two scrapes (an absent series is 0). */
const delta = (before: Scrape, after: Scrape, name: string, labels: Record<string, string> = {}) =>
  (after.get(key(name, labels)) ?? 0) - (before.get(key(name, labels)) ?? 0);

/**
 * What the workload must add where runs are executed, events delivered and CSV rows loaded;
 * a dropped event call is counted where the edit was written (`droppedHere`).
 */
function expectWorkerCounts(before: Scrape, after: Scrape, { droppedHere }: { droppedHere: boolean }): void {
  const d = (name: string, labels: Record<string, string> = {}) => delta(before, after, name, labels);
  const api = { trigger: 'api_trigger' };
  expect(d('switchyard_runs_started_total', api), 'runs started').to.equal(RUNS);
  expect(d('switchyard_runs_finished_total', { ...api, status: 'COMPLETE' }), 'runs finished').to.equal(RUNS);
  expect(d('switchyard_run_duration_seconds_count', { ...api, status: 'COMPLETE' })).to.equal(RUNS);
  expect(d('switchyard_runs_finished_total', { ...api, status: 'FAILED' })).to.equal(0);
  expect(d('switchyard_runs_started_total', { trigger: 'queue_batch' }), 'a paused queue runs nothing').to.equal(0);
  expect(after.get('switchyard_runs_in_flight')).to.equal(0);
  for (const [outcome, n] of Object.entries({ ...EVENTS, dropped: droppedHere ? EVENTS.dropped : 0 }))
    expect(d('switchyard_event_deliveries_total', { outcome }), `event calls ${outcome}`).to.equal(n);
  expect(d('switchyard_csv_rows_read_total')).to.equal(3);
  expect(d('switchyard_csv_rows_loaded_total')).to.equal(2);
  expect(d('switchyard_csv_rows_skipped_total')).to.equal(1);
  for (const name of [
    'process_cpu_user_seconds_total',
    'process_resident_memory_bytes',
    'nodejs_heap_size_used_bytes',
    'nodejs_eventloop_lag_seconds',
  ])
    expect(after.get(name), name).to.be.a('number');
}

/** Waits for the workload's background parts, then for the store's gauges to show the loaded batch. */
async function settled(url: string, before: Scrape): Promise<Scrape> {
  let after: Scrape = before;
  await until('runs, event calls and the CSV load', async () => {
    after = await scrape(url);
    const d = (name: string, labels: Record<string, string> = {}) => delta(before, after, name, labels);
    return (
      d('switchyard_runs_finished_total', { status: 'COMPLETE', trigger: 'api_trigger' }) >= RUNS &&
      d('switchyard_event_deliveries_total', { outcome: 'sent' }) +
        d('switchyard_event_deliveries_total', { outcome: 'failed' }) >=
        EVENTS.sent + EVENTS.failed &&
      d('switchyard_csv_rows_read_total') >= 3
    );
  });
  // Store gauges are refreshed at most every 2 s: one refresh taken while the last runs were still
  // pending shows them until the next, so the gauges are awaited together (and then asserted).
  await until('the store gauges', async () => {
    after = await scrape(url);
    return (
      after.get(key('switchyard_queue_batches', { state: 'running' })) === 1 &&
      after.get('switchyard_runs_pending') === 0 &&
      after.get('switchyard_event_outbox_pending') === 0
    );
  });
  expect(after.get('switchyard_runs_pending')).to.equal(0);
  expect(after.get('switchyard_event_outbox_pending')).to.equal(0);
  expect(after.get('switchyard_event_outbox_lag_seconds')).to.equal(0);
  return after;
}

describe('process: Prometheus metrics (sqlite)', function () {
  this.timeout(60_000);
  let dataDir: string;
  let server: ChildProcess | undefined;
  let base: string;
  let metricsPort: number;
  let metricsUrl: string;
  let rx: Receiver;

  before(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-metrics-'));
    const port = await freePort();
    metricsPort = await freePort();
    base = `http://127.0.0.1:${port}`;
    metricsUrl = `http://127.0.0.2:${metricsPort}/metrics`;
    server = startServer(dataDir, port, { METRICS_PORT: String(metricsPort), METRICS_HOST: '127.0.0.2' });
    rx = await startReceiver();
    await waitReady(base);
  });

  after(async () => {
    server?.kill('SIGKILL');
    await rx?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('a known workload adds exactly its counts; promtool finds no problem', async () => {
    const { token, b } = await bootstrapToken(base, dataDir);
    const before = await scrape(metricsUrl);
    await workload(base, token, b, rx);
    const after = await settled(metricsUrl, before);
    expectWorkerCounts(before, after, { droppedHere: true });
    const d = (name: string, labels: Record<string, string>) => delta(before, after, name, labels);
    const http = (operation: string, cls: string) =>
      d('switchyard_http_requests_total', { operation, status_class: cls });
    expect(http('callApiTrigger', '2xx'), 'trigger calls answered').to.equal(RUNS);
    expect(http('callApiTrigger', '4xx'), 'the refused trigger call').to.equal(1);
    expect(http('unknown', '4xx'), 'the unknown path').to.equal(1);
    expect(http('postMcpMessage', '2xx')).to.equal(1);
    expect(
      d('switchyard_http_request_duration_seconds_count', { operation: 'callApiTrigger', status_class: '2xx' }),
    ).to.equal(RUNS);
    expect(d('switchyard_gateway_tool_calls_total', { server: 'svc-sidekick', outcome: 'ok' })).to.equal(1);
    expect(d('switchyard_gateway_tool_calls_total', { server: 'svc-sidekick', outcome: 'error' })).to.equal(0);
    expect(d('switchyard_discovery_duration_seconds_count', { outcome: 'ok' })).to.equal(1);
    expect(after.get('switchyard_sync_callers_waiting')).to.equal(0);
    const text = await scrapeText(metricsUrl);
    expect(text).not.to.match(/(org|run|usr|key|wf)_[0-9a-f]{8}/);
    promtool(text);
  });

  it('serves /metrics only, on METRICS_HOST only', async () => {
    const other = await fetch(`http://127.0.0.2:${metricsPort}/other`);
    expect([other.status, other.headers.get('content-type')]).to.deep.equal([404, 'text/plain; charset=utf-8']);
    const post = await fetch(metricsUrl, { method: 'POST' });
    expect([post.status, post.headers.get('allow')]).to.deep.equal([405, 'GET, HEAD']);
    const head = await fetch(metricsUrl, { method: 'HEAD' });
    expect(head.status).to.equal(200);
    expect(await head.text()).to.equal('');
    const elsewhere = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then(
      () => 'answered',
      (err: Error & { cause?: { code?: string } }) => err.cause?.code,
    );
    expect(elsewhere, 'not bound on 127.0.0.1').to.equal('ECONNREFUSED');
  });

  it('a METRICS_PORT in use fails the start with exit 2 and a message, not a stack', async () => {
    const child = spawn(process.execPath, [bundled('main')], {
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        PORT: String(await freePort()),
        LOG_LEVEL: 'silent',
        METRICS_PORT: String(metricsPort),
        METRICS_HOST: '127.0.0.2',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, stderr).to.equal(2);
    expect(stderr).to.match(
      /^switchyard: configuration error: METRICS_PORT \d+ on METRICS_HOST 127\.0\.0\.2 .*EADDRINUSE/,
    );
    expect(stderr).not.to.match(/\n\s+at /);
  });
});

describe('process: Prometheus metrics of npm run worker (PostgreSQL + Redis)', function () {
  this.timeout(60_000);
  const prefix = `sy-test-metrics-${process.pid}-${Date.now()}`;
  let store: TestStore | undefined;
  let server: ChildProcess | undefined;
  let worker: ChildProcess | undefined;
  let base: string;
  let port: number;
  let metricsUrl: string;
  let rx: Receiver;

  before(async function () {
    if (!(await storeKinds()).includes('pg')) this.skip();
    store = await createTestStore('pg');
    port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const env = {
      DATABASE_URL: `${TEST_PG_URL}?options=${encodeURIComponent(`-c search_path=${store.pgSchema}`)}`,
      REDIS_URL,
      REDIS_PREFIX: prefix,
    };
    server = startServer(store.dataDir, port, { ...env, RUN_CONCURRENCY: '0' });
    rx = await startReceiver();
    await waitReady(base);
    const metricsPort = await freePort();
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    worker = spawn(process.execPath, [bundled('worker')], {
      env: {
        ...process.env,
        ...env,
        DATA_DIR: store.dataDir,
        LOG_LEVEL: 'silent',
        OUTBOUND_ALLOWLIST: '127.0.0.0/8',
        RUN_CONCURRENCY: '4',
        METRICS_PORT: String(metricsPort),
      },
      stdio: 'ignore',
    });
    await until('the worker metrics', async () => (await fetch(metricsUrl).catch(() => undefined))?.status === 200);
  });

  after(async () => {
    server?.kill('SIGKILL');
    worker?.kill('SIGKILL');
    await rx?.close();
    await store?.close();
    await dropRedisKeys(REDIS_URL, prefix);
  });

  it('the worker counts the runs, event calls and CSV rows of a known workload exactly; promtool finds no problem', async () => {
    const { token, b } = await bootstrapToken(base, store!.dataDir);
    const before = await scrape(metricsUrl);
    await workload(base, token, b, rx);
    const after = await settled(metricsUrl, before);
    expectWorkerCounts(before, after, { droppedHere: false });
    expect(
      delta(before, after, 'switchyard_http_requests_total', { operation: 'callApiTrigger', status_class: '2xx' }),
    ).to.equal(0, 'the worker answers no HTTP');
    promtool(await scrapeText(metricsUrl));
  });

  it('without METRICS_PORT the service listens on its own port only', () => {
    expect(listeningPorts(server!.pid!)).to.deep.equal([port]);
  });
});
