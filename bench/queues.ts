/**
 * Queue CSV batch benchmarks (not tests; issue 11 "Queues and CSV batches"), sqlite store, one
 * fresh server process per file size (so its peak RSS belongs to that size alone), started with
 * `npm start`'s own command line (package.json: its environment and node flags):
 * - files: generated once into os.tmpdir()/switchyard-bench-csv/ and reused: 10 columns, every
 *   row exactly ROW_BYTES bytes, quoted fields with commas, escaped quotes and line breaks mixed
 *   with plain ones, some UTF-8; 500,000 rows ≈ 1 GiB (under the 1 GiB limit) and ~48,800 ≈ 100 MiB;
 * - baseline: plain csv-parse streaming the same file in this process, in the same run
 *   (`createReadStream(file).pipe(parse())`, counting records), while the server is idle;
 * - upload + ingest: createCsvUploadUrl → PUT → createCsvBatch (202, includes the synchronous
 *   head scan) → getQueueBatch every 100 ms until readRows == totalRows. Target: csv-parse time /
 *   (upload + create + ingest) ≥ 0.5. The queue is paused while it loads (BENCH_QUEUE_LIVE=1:
 *   not paused, runs compete with the loader), so this measures the ingest itself;
 * - memory: the server's VmRSS (and its child processes') every 50 ms from /proc during that
 *   phase, against its idle value before; VmHWM at the end. Targets: peak ≤ 256 MB, and flat as
 *   the file grows (the largest size's peak at most FLAT_MB above the smallest's);
 * - dispatch: the queue is resumed (concurrencyLimit BENCH_QUEUE_LIMIT, default 200) and runs of a
 *   one-step no-op workflow are counted in the runs table for BENCH_QUEUE_DISPATCH_SECONDS
 *   (default 15; 0 skips), with RUN_CONCURRENCY BENCH_QUEUE_RUN_CONCURRENCY (default 8). No target
 *   in the issue: reported with the batch's own completed/failed counters.
 *
 * Knobs: BENCH_QUEUE_SIZES (default `100M,1G`; K/M/G are binary, rows = size / ROW_BYTES, at most
 * 500,000), BENCH_QUEUE_ROUNDS (default 1; medians over rounds, a fresh server each),
 * BENCH_QUEUE_LIVE, BENCH_QUEUE_DISPATCH_SECONDS, BENCH_QUEUE_LIMIT, BENCH_QUEUE_RUN_CONCURRENCY.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream/promises';
import { parse } from 'csv-parse';
import type { Knex } from 'knex';
import type { components } from '../generated/openapi/types.js';
import { openStore } from '../src/storage/db.js';
import { createQueue, updateQueue } from '../src/queues/queues.js';
import { ROOT, cpuMs, processTree, prng } from './lib.js';

/** Bytes of every data row, line end included: 500,000 rows + header stay under 1 GiB (1,073,741,824). */
const ROW_BYTES = 2_147;
const MAX_ROWS = 500_000;
/** Bump when the row shape changes: cached files of another version are regenerated. */
const GENERATOR_VERSION = 1;
const CACHE_DIR = path.join(os.tmpdir(), 'switchyard-bench-csv');
const HEADER = 'id,email,full_name,company,address,amount,currency,created_at,tags,notes\n';

const SIZES = (process.env.BENCH_QUEUE_SIZES ?? '100M,1G')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);
const ROUNDS = Math.max(1, Number(process.env.BENCH_QUEUE_ROUNDS ?? 1));
const LIVE = Boolean(process.env.BENCH_QUEUE_LIVE);
const DISPATCH_SECONDS = Number(process.env.BENCH_QUEUE_DISPATCH_SECONDS ?? 15);
const QUEUE_LIMIT = Number(process.env.BENCH_QUEUE_LIMIT ?? 200);
const RUN_CONCURRENCY = process.env.BENCH_QUEUE_RUN_CONCURRENCY ?? '8';
const RSS_TARGET_MB = 256;
/** "Flat as the file grows": the largest file's peak RSS may exceed the smallest's by this much. */
const FLAT_MB = 32;
const RATIO_TARGET = 0.5;

// ---------------------------------------------------------------------------------------------
// File generation

const FIRST = [
  'Ada',
  'Grace',
  'Alan',
  'Katherine',
  'José',
  'Zoë',
  'Jürgen',
  'Søren',
  'Chloé',
  'Ólafur',
  'Margaret',
  'Linus',
  'Barbara',
  'Edsger',
  'Radia',
  'Niklaus',
];
const LAST = [
  'Lovelace',
  'Hopper',
  'Turing',
  'Johnson',
  'Álvarez',
  'Weiß',
  'Kierkegaard',
  'Dubois',
  'Arnalds',
  'Hamilton',
  'Torvalds',
  'Liskov',
  'Dijkstra',
  'Perlman',
  'Wirth',
  'Nakamura',
];
const COMPANIES = [
  'Initech',
  'Umbrella',
  'Hooli',
  '"Globex, Inc."',
  '"Acme ""Rockets"" Ltd"',
  '"Stark Industries, Europe"',
  'Vandelay',
  '"Müller & Söhne, GmbH"',
];
const STREETS = [
  'Station Road',
  'High Street',
  'Rue de Rivoli',
  'Königsallee',
  'Calle Mayor',
  'Main Street',
  'Church Lane',
  'Via Roma',
];
const CITIES = ['Leeds', 'Paris', 'Düsseldorf', 'Madrid', 'Springfield', 'York', 'Roma', 'Lyon'];
const CURRENCIES = ['EUR', 'GBP', 'USD', 'CHF'];
const TAGS = ['vip', 'newsletter', 'trial', 'churn-risk', 'q3', 'partner', 'beta', 'enterprise'];
const OPENERS = [
  'Customer said ""call me after 5pm"", then asked for a quote.',
  'Imported from the old CRM, see ticket #4411.',
  'Met at the trade fair; interested in the ""team"" plan, not ""pro"".',
  'Renewal due next quarter.',
];
/** Filler for quoted notes: commas and line breaks, no quotes (a cut can never split a "" pair). */
const QUOTED_FILLER = (() => {
  const words =
    'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua'.split(
      ' ',
    );
  const r = prng(7);
  let s = '';
  while (s.length < 8192) {
    const sentence = Array.from(
      { length: 6 + Math.floor(r() * 10) },
      () => words[Math.floor(r() * words.length)]!,
    ).join(' ');
    s += sentence + (r() < 0.5 ? ', ' : '. ') + (r() < 0.15 ? '\n' : '');
  }
  return s;
})();
/** Filler for unquoted notes: no comma, quote or line break. */
const PLAIN_FILLER = QUOTED_FILLER.replace(/[,\n]/g, ';');

function pick<T>(r: () => number, xs: readonly T[]): T {
  return xs[Math.floor(r() * xs.length)]!;
}

/** Data row `i` (0-based), exactly ROW_BYTES bytes with its LF. */
export function csvRow(i: number): string {
  const r = prng(i * 2654435761);
  const first = pick(r, FIRST);
  const last = pick(r, LAST);
  const name = r() < 0.4 ? `"${last}, ${first}"` : `${first} ${last}`;
  const street = `${1 + Math.floor(r() * 300)} ${pick(r, STREETS)}`;
  const city = pick(r, CITIES);
  const address =
    r() < 0.5
      ? `"${street}\nFlat ${1 + Math.floor(r() * 40)}, ${city}\n${city.slice(0, 2).toUpperCase()}${Math.floor(r() * 90 + 10)} ${Math.floor(r() * 9)}AB"`
      : `${street} ${city}`;
  const amount = (r() * 100000).toFixed(2);
  const created = new Date(Date.UTC(2024, 0, 1) + Math.floor(r() * 63072000) * 1000).toISOString();
  const tags = r() < 0.6 ? `"${pick(r, TAGS)},${pick(r, TAGS)},${pick(r, TAGS)}"` : pick(r, TAGS);
  const prefix = `r${String(i + 1).padStart(9, '0')},${first
    .normalize('NFD')
    .replace(/[^\x20-\x7e]/g, '')
    .toLowerCase()}.${i}@example.com,${name},${pick(r, COMPANIES)},${address},${amount},${pick(r, CURRENCIES)},${created},${tags},`;
  const quoted = r() < 0.75;
  const used = Buffer.byteLength(prefix) + 1; // + LF
  const offset = Math.floor(r() * 4096);
  if (quoted) {
    const opener = pick(r, OPENERS);
    const fill = ROW_BYTES - used - 2 - opener.length - 1; // quotes, opener, one line break
    return `${prefix}"${opener}\n${QUOTED_FILLER.slice(offset, offset + fill)}"\n`;
  }
  return `${prefix}${PLAIN_FILLER.slice(offset, offset + ROW_BYTES - used)}\n`;
}

interface CsvFile {
  file: string;
  rows: number;
  bytes: number;
  sha256: string;
  generatedMs: number | null;
}

function parseSize(s: string): number {
  const m = /^(\d+(?:\.\d+)?)([KMG]?)i?B?$/i.exec(s);
  if (!m) throw new Error(`BENCH_QUEUE_SIZES: cannot read ${s} (e.g. 100M, 1G)`);
  const unit = { '': 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3 }[m[2]!.toUpperCase() as '' | 'K' | 'M' | 'G'];
  return Number(m[1]) * unit;
}

/** The file with `rows` rows, generated unless a complete one of this generator version is cached. */
function csvFile(rows: number): CsvFile {
  mkdirSync(CACHE_DIR, { recursive: true });
  const file = path.join(CACHE_DIR, `rows-${rows}-v${GENERATOR_VERSION}.csv`);
  const meta = `${file}.json`;
  const bytes = Buffer.byteLength(HEADER) + rows * ROW_BYTES;
  if (existsSync(file) && existsSync(meta)) {
    const m = JSON.parse(readFileSync(meta, 'utf8')) as {
      version: number;
      rows: number;
      bytes: number;
      sha256: string;
      mtimeMs: number;
    };
    const st = statSync(file);
    if (
      m.version === GENERATOR_VERSION &&
      m.rows === rows &&
      m.bytes === bytes &&
      st.size === bytes &&
      Math.round(st.mtimeMs) === m.mtimeMs
    ) {
      return { file, rows, bytes, sha256: m.sha256, generatedMs: null };
    }
  }
  const t0 = performance.now();
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w');
  const hash = createHash('sha256');
  try {
    const write = (s: string) => {
      const buf = Buffer.from(s, 'utf8');
      hash.update(buf);
      for (let off = 0; off < buf.length;) off += writeSync(fd, buf, off);
    };
    write(HEADER);
    let parts: string[] = [];
    for (let i = 0; i < rows; i++) {
      parts.push(csvRow(i));
      if (parts.length === 4096) {
        // ~8.8 MB per write
        write(parts.join(''));
        parts = [];
      }
    }
    if (parts.length) write(parts.join(''));
  } finally {
    closeSync(fd);
  }
  const size = statSync(tmp).size;
  if (size !== bytes) throw new Error(`generated ${size} bytes, expected ${bytes} (a row is not ${ROW_BYTES} bytes)`);
  renameSync(tmp, file);
  const sha256 = hash.digest('hex');
  writeFileSync(
    meta,
    JSON.stringify({ version: GENERATOR_VERSION, rows, bytes, sha256, mtimeMs: Math.round(statSync(file).mtimeMs) }),
  );
  return { file, rows, bytes, sha256, generatedMs: performance.now() - t0 };
}

// ---------------------------------------------------------------------------------------------
// Baseline

/** Plain csv-parse over the file (not src/queues/csv.ts): records counted, header included. */
async function csvParseBaseline(file: string): Promise<{ ms: number; records: number }> {
  const t0 = performance.now();
  let records = 0;
  const parser = parse({ bom: true, skip_empty_lines: true });
  parser.on('readable', () => {
    while (parser.read() !== null) records++;
  });
  await pipeline(createReadStream(file, { highWaterMark: 1024 * 1024 }), parser);
  return { ms: performance.now() - t0, records };
}

// ---------------------------------------------------------------------------------------------
// Server process

interface Bootstrap {
  orgId: string;
  clientId: string;
  clientSecret: string;
  demo: { apiTriggerId: string; queueId?: string };
}

interface Server {
  url: string;
  dataDir: string;
  child: ChildProcess;
  /** Server log lines (warn and up) so far, by level, message and error code. */
  logs: Map<string, number>;
  bootstrap: Bootstrap;
  stop(): Promise<void>;
}

const live = new Set<{ child: ChildProcess; dataDir: string }>();

function killAll(): void {
  for (const s of live) {
    if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
    rmSync(s.dataDir, { recursive: true, force: true });
  }
  live.clear();
}

let handlersInstalled = false;
function installCleanup(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.once('exit', killAll);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      killAll();
      process.exit(sig === 'SIGINT' ? 130 : 143);
    });
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** `node --import tsx src/main.ts` (the child's pid is the server itself, for /proc) on its own DATA_DIR. */
/**
 * What `npm start` runs (package.json scripts.start): its environment assignments (`NAME=value`
 * or `NAME=${NAME:-default}`) and node's arguments (e.g. its V8 flags).
 */
function startCommand(): { env: Record<string, string>; args: string[] } {
  const script = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } })
    .scripts.start;
  const words = script.split(/\s+/);
  const env: Record<string, string> = {};
  let m: RegExpMatchArray | null;
  while (words.length && (m = /^(\w+)=(.*)$/.exec(words[0]!))) {
    const [, name, value] = m as unknown as [string, string, string];
    const fallback = /^\$\{(\w+):-(.*)\}$/.exec(value);
    env[name] = fallback ? process.env[fallback[1]!] || fallback[2]! : value;
    words.shift();
  }
  const [cmd, ...args] = words;
  if (cmd !== 'node') throw new Error(`npm start is not a node command line: ${script}`);
  return { env, args: args.map((a) => (a.endsWith('.ts') ? path.join(ROOT, a) : a)) };
}

async function startSwitchyard(env: Record<string, string>): Promise<Server> {
  installCleanup();
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-queues-'));
  const url = `http://127.0.0.1:${port}`;
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_URL: url,
    LOG_LEVEL: 'warn',
    SEED_DEMO: 'true',
    ...env,
  };
  // The bench is about the embedded default: sqlite and the in-process run queue.
  delete childEnv.DATABASE_URL;
  delete childEnv.REDIS_URL;
  const start = startCommand();
  const child = spawn(process.execPath, start.args, {
    cwd: ROOT,
    env: { ...childEnv, ...start.env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const entry = { child, dataDir };
  live.add(entry);
  // Log lines (JSON, warn and up) are counted by message; the first few go to our stderr,
  // shortened. The welcome text holds secrets and is dropped.
  const logs = new Map<string, number>();
  let shown = 0;
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (!line.startsWith('{')) return;
    let key = 'unparsed log line';
    try {
      const entry = JSON.parse(line) as { level?: number; msg?: string; err?: { code?: string } };
      key = `${entry.level === 40 ? 'warn' : entry.level && entry.level >= 50 ? 'error' : `level ${entry.level}`}: ${entry.msg ?? ''}${entry.err?.code ? ` (${entry.err.code})` : ''}`;
    } catch {
      // counted as unparsed
    }
    logs.set(key, (logs.get(key) ?? 0) + 1);
    if (shown++ < 10)
      process.stderr.write(`[server] ${line.length > 600 ? `${line.slice(0, 300)} … ${line.slice(-300)}` : line}\n`);
    else if (shown === 11) process.stderr.write('[server] (further log lines counted, not shown)\n');
  });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`server exited with ${code} before it was ready`))),
  );
  exited.catch(() => undefined);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ok = await Promise.race([
      fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      ),
      exited,
    ]);
    if (ok) break;
    if (Date.now() > deadline) throw new Error('server not ready after 60 s');
    await sleep(100);
  }
  const bootstrap = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8')) as Bootstrap;
  return {
    url,
    dataDir,
    child,
    bootstrap,
    logs,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await gone;
        clearTimeout(timer);
      }
      live.delete(entry);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    what: string,
  ) {
    super(`${what}: ${status} ${body.slice(0, 500)}`);
  }
}

async function call<T>(
  method: string,
  url: string,
  opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: T; headers: Headers }> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  const res = await fetch(url, {
    method,
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  if (!res.ok) throw new HttpError(res.status, text, `${method} ${new URL(url).pathname}`);
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T, headers: res.headers };
}

/** PUT the file as one streamed body (Content-Length set), as a client would. */
async function putFile(uploadUrl: string, headers: Record<string, string>, file: string, size: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const req = http.request(
      uploadUrl,
      {
        method: 'PUT',
        headers: { 'content-type': 'application/octet-stream', ...headers, 'content-length': String(size) },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () =>
          res.statusCode && res.statusCode < 300
            ? resolve()
            : reject(new HttpError(res.statusCode ?? 0, body, 'PUT upload')),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    createReadStream(file, { highWaterMark: 1024 * 1024 })
      .on('error', reject)
      .pipe(req);
  });
}

// ---------------------------------------------------------------------------------------------
// Memory sampling from /proc

function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}

const MB = 1024 * 1024;

class RssSampler {
  peakKb = 0;
  peakTreeKb = 0;
  private timer: NodeJS.Timeout | undefined;
  /** The process tree is rescanned once a second (a /proc walk), its members' VmRSS read at every sample. */
  private pids: number[] = [];
  private scannedAt = 0;
  constructor(private readonly pid: number) {}
  sample(): { kb: number; treeKb: number } {
    if (performance.now() - this.scannedAt > 1000) {
      this.pids = processTree(this.pid);
      this.scannedAt = performance.now();
    }
    const kb = statusKb(this.pid, 'VmRSS');
    const treeKb = this.pids.reduce((n, p) => n + (p === this.pid ? kb : statusKb(p, 'VmRSS') || 0), 0);
    if (kb > this.peakKb) this.peakKb = kb;
    if (treeKb > this.peakTreeKb) this.peakTreeKb = treeKb;
    return { kb, treeKb };
  }
  start(): this {
    this.sample();
    this.timer = setInterval(() => this.sample(), 50);
    return this;
  }
  stop(): void {
    clearInterval(this.timer);
    this.sample();
  }
}

// ---------------------------------------------------------------------------------------------
// One size

/** The API's batch (openapi/queues.yaml QueueBatch). */
type QueueBatch = components['schemas']['QueueBatch'];

interface Setup {
  token: string;
  triggerId: string;
  queueId: string;
  queueVersion: number;
  /** How the queue was made and is resumed: the management API, or the store directly (before /v1/queues existed). */
  via: 'http' | 'store';
}

async function setUp(s: Server, paused: boolean): Promise<Setup> {
  const b = s.bootstrap;
  const tok = await fetch(`${s.url}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: b.clientId,
      client_secret: b.clientSecret,
      scope: `org:${b.orgId}`,
    }),
  });
  if (!tok.ok) throw new Error(`POST /oauth/token: ${tok.status} ${await tok.text()}`);
  const token = ((await tok.json()) as { access_token: string }).access_token;
  // The cheapest workflow: one code step that returns at once (the demo one writes a file).
  const wf = (
    await call<{ automationId: string }>('POST', `${s.url}/v1/workflows`, {
      token,
      body: { name: 'bench queue no-op', steps: [{ type: 'code', name: 'noop', code: 'return 1;' }] },
    })
  ).body;
  const trg = (
    await call<{ triggerId: string }>('POST', `${s.url}/v1/triggers`, {
      token,
      body: { automationId: wf.automationId, kind: 'api' },
    })
  ).body;
  const settings = {
    name: 'bench queue',
    triggerId: trg.triggerId,
    concurrencyLimit: QUEUE_LIMIT,
    priority: 5,
    maxRetries: 0,
    paused,
  };
  try {
    const q = (
      await call<{ queueId: string; version: number }>('POST', `${s.url}/v1/queues`, { token, body: settings })
    ).body;
    return { token, triggerId: trg.triggerId, queueId: q.queueId, queueVersion: q.version, via: 'http' };
  } catch (err) {
    if (!(err instanceof HttpError) || (err.status !== 404 && err.status !== 405 && err.status !== 501)) throw err;
  }
  const db = openStore({ dataDir: s.dataDir });
  try {
    const q = await createQueue(db, b.orgId, settings);
    return { token, triggerId: trg.triggerId, queueId: q.id, queueVersion: q.version, via: 'store' };
  } finally {
    await db.destroy();
  }
}

async function resume(s: Server, setup: Setup): Promise<void> {
  if (setup.via === 'http') {
    await call('PATCH', `${s.url}/v1/queues/${setup.queueId}`, {
      token: setup.token,
      body: { paused: false },
      headers: { 'if-match': `"${setup.queueVersion}"` },
    });
    return;
  }
  const db = openStore({ dataDir: s.dataDir });
  try {
    await updateQueue(db, s.bootstrap.orgId, setup.queueId, { expectedVersion: undefined, patch: { paused: false } });
  } finally {
    await db.destroy();
  }
}

interface Ingest {
  uploadMs: number;
  createMs: number;
  ingestMs: number;
  /** From the 202 until the batch was first seen `running` (the loader's start-up), when seen. */
  pendingMs: number | null;
  totalRows: number;
  skippedRows: number;
  idleKb: number;
  idleTreeKb: number;
  peakKb: number;
  /** Peak VmRSS within each phase: upload, create (head scan), ingest. */
  phasePeakKb: [number, number, number];
  peakTreeKb: number;
  hwmKb: number;
  /** Server CPU (main process, all threads) over upload + create + ingest, ms. */
  cpuMs: number;
  /** When the loaded rows reached 10 %, 50 %, 90 % of totalRows, ms after the 202. */
  marks: Record<string, number>;
  batchId: string;
  /** Server log lines (warn and up) during the phase, by message. */
  logs: Record<string, number>;
}

function logsSince(s: Server, before: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, n] of s.logs) if (n > (before.get(k) ?? 0)) out[k] = n - (before.get(k) ?? 0);
  return out;
}

async function ingest(s: Server, setup: Setup, csv: CsvFile): Promise<Ingest> {
  const pid = s.child.pid!;
  await sleep(500); // let start-up work settle
  const rss = new RssSampler(pid);
  const idle = rss.sample();
  rss.peakKb = 0;
  rss.peakTreeKb = 0;
  rss.start();
  const cpu0 = cpuMs(pid) ?? NaN;
  const logs0 = new Map(s.logs);
  try {
    const t0 = performance.now();
    const up = (
      await call<{ uploadUrl: string; csvKey: string; headers: Record<string, string> }>(
        'POST',
        `${s.url}/api/queues/${setup.queueId}/items/csv/upload-url`,
        { token: setup.token, body: { filename: path.basename(csv.file), sizeBytes: csv.bytes } },
      )
    ).body;
    await putFile(up.uploadUrl, up.headers, csv.file, csv.bytes);
    const t1 = performance.now();
    const phasePeakKb: [number, number, number] = [rss.peakKb, 0, 0];
    rss.peakKb = 0;
    const created = await call<QueueBatch>('POST', `${s.url}/api/queues/${setup.queueId}/items/csv`, {
      token: setup.token,
      body: { csvKey: up.csvKey, triggerId: setup.triggerId },
    });
    const t2 = performance.now();
    phasePeakKb[1] = rss.peakKb;
    rss.peakKb = 0;
    const batch = created.body;
    if (created.status !== 202) throw new Error(`createCsvBatch answered ${created.status}, expected 202`);
    if (batch.totalRows !== csv.rows)
      throw new Error(`createCsvBatch counted ${batch.totalRows} rows, the file has ${csv.rows}`);
    let pendingMs: number | null = batch.status === 'running' ? 0 : null;
    const marks: Record<string, number> = {};
    let last = batch;
    for (;;) {
      const now = performance.now();
      if (now - t2 > 15 * 60_000) throw new Error(`ingest not done after 15 min: ${JSON.stringify(last)}`);
      last = (
        await call<QueueBatch>('GET', `${s.url}/api/queues/${setup.queueId}/batches/${batch.batchId}`, {
          token: setup.token,
        })
      ).body;
      const at = performance.now() - t2;
      if (pendingMs === null && last.status !== 'pending' && last.status !== 'validating') pendingMs = at;
      for (const q of [10, 50, 90])
        if (marks[`${q}%`] === undefined && last.readRows >= (q / 100) * csv.rows) marks[`${q}%`] = at;
      if (last.status === 'failed' || last.status === 'cancelled')
        throw new Error(`batch ${last.status}: ${last.failureReason ?? ''}`);
      if (last.readRows >= (last.totalRows ?? Infinity)) break;
      await sleep(100);
    }
    const t3 = performance.now();
    rss.stop();
    phasePeakKb[2] = rss.peakKb;
    return {
      uploadMs: t1 - t0,
      createMs: t2 - t1,
      ingestMs: t3 - t2,
      pendingMs,
      totalRows: last.totalRows ?? 0,
      skippedRows: last.skippedRows,
      idleKb: idle.kb,
      idleTreeKb: idle.treeKb,
      peakKb: Math.max(...phasePeakKb),
      phasePeakKb,
      peakTreeKb: rss.peakTreeKb,
      hwmKb: statusKb(pid, 'VmHWM'),
      cpuMs: (cpuMs(pid) ?? NaN) - cpu0,
      marks,
      batchId: batch.batchId,
      logs: logsSince(s, logs0),
    };
  } finally {
    rss.stop();
  }
}

interface Dispatch {
  seconds: number;
  /** From resuming the queue to the first run in the runs table (BENCH_QUEUE_LIVE: 0). */
  firstRunMs: number | null;
  created: number;
  createdPerSec: number;
  finished: number;
  finishedPerSec: number;
  /** Of `finished`, the runs that ended FAILED or TIMEOUT (batch runsFailed). */
  failed: number;
  maxRunning: number;
  backlog: number;
  cpuShare: number;
  peakTreeKb: number;
  logs: Record<string, number>;
}

async function dispatch(s: Server, setup: Setup, batchId: string, backlog: number): Promise<Dispatch> {
  const db: Knex = openStore({ dataDir: s.dataDir });
  const pid = s.child.pid!;
  const rss = new RssSampler(pid).start();
  try {
    const runs = async () =>
      Number(
        ((await db('runs').where({ trigger_id: setup.triggerId }).count({ n: '*' })) as { n: number | string }[])[0]!.n,
      );
    const batch = async () =>
      (await call<QueueBatch>('GET', `${s.url}/api/queues/${setup.queueId}/batches/${batchId}`, { token: setup.token }))
        .body;
    const finishedOf = (b: QueueBatch) => b.runsCompleted + b.runsFailed;
    const logs0 = new Map(s.logs);
    const before = await runs();
    const b0 = await batch();
    if (!LIVE) await resume(s, setup);
    const t0 = performance.now();
    const cpu0 = cpuMs(pid) ?? NaN;
    let firstRunMs: number | null = LIVE ? 0 : null;
    let firstCount = before;
    let maxRunning = 0;
    let end = { count: before, batch: b0, at: t0 };
    while (performance.now() - t0 < DISPATCH_SECONDS * 1000) {
      await sleep(250);
      const [count, b] = [await runs(), await batch()];
      const at = performance.now();
      if (firstRunMs === null && count > before) {
        firstRunMs = at - t0;
        firstCount = count;
      }
      maxRunning = Math.max(maxRunning, b.runsRunning);
      end = { count, batch: b, at };
      if (b.status === 'completed') break;
    }
    // Rates from the first run seen (the resume's wake-up is reported on its own), so a slow
    // wake-up does not hide the steady rate.
    const from = t0 + (firstRunMs ?? 0);
    const secs = (end.at - from) / 1000;
    return {
      seconds: (end.at - t0) / 1000,
      firstRunMs,
      created: end.count - before,
      createdPerSec: (end.count - firstCount) / secs,
      finished: finishedOf(end.batch) - finishedOf(b0),
      finishedPerSec: (finishedOf(end.batch) - finishedOf(b0)) / ((end.at - t0) / 1000),
      failed: end.batch.runsFailed - b0.runsFailed,
      maxRunning,
      backlog,
      cpuShare: ((cpuMs(pid) ?? NaN) - cpu0) / (end.at - t0),
      peakTreeKb: rss.peakTreeKb,
      logs: logsSince(s, logs0),
    };
  } finally {
    rss.stop();
    await db.destroy();
  }
}

interface SizeResult {
  label: string;
  csv: CsvFile;
  baselineMs: number;
  ingest: Ingest;
  dispatch: Dispatch | undefined;
  via: Setup['via'];
}

async function oneSize(label: string, csv: CsvFile): Promise<SizeResult> {
  const base = await csvParseBaseline(csv.file);
  if (base.records !== csv.rows + 1)
    throw new Error(
      `csv-parse read ${base.records} records from ${csv.file}, expected ${csv.rows + 1} (header + rows)`,
    );
  console.log(
    `${label}: plain csv-parse read ${base.records} records in ${s1(base.ms)} s (${(csv.bytes / MB / (base.ms / 1000)).toFixed(1)} MiB/s)`,
  );
  const server = await startSwitchyard({ RUN_CONCURRENCY });
  try {
    const setup = await setUp(server, !LIVE);
    const res = await ingest(server, setup, csv);
    const disp =
      DISPATCH_SECONDS > 0 ? await dispatch(server, setup, res.batchId, res.totalRows - res.skippedRows) : undefined;
    return { label, csv, baselineMs: base.ms, ingest: res, dispatch: disp, via: setup.via };
  } catch (err) {
    if (err instanceof HttpError && err.status === 501) {
      throw new Error(`the server does not implement queue CSV batches yet (501): ${err.message}`, { cause: err });
    }
    throw err;
  } finally {
    await server.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// Report

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const s1 = (ms: number) => (ms / 1000).toFixed(1);
const mb = (kb: number) => (kb / 1024).toFixed(0);
const pass = (ok: boolean) => (ok ? 'pass' : 'FAIL');

/** The median round of a size by total time, so every figure in a line comes from one run. */
function medianRound(rs: SizeResult[]): SizeResult {
  const total = (r: SizeResult) => r.ingest.uploadMs + r.ingest.createMs + r.ingest.ingestMs;
  return [...rs].sort((a, b) => total(a) - total(b))[Math.floor(rs.length / 2)]!;
}

function report(results: Map<string, SizeResult[]>): void {
  console.log(
    `\n## Queue CSV batches: upload + ingest vs plain csv-parse (sqlite, fresh server per size, queue ${LIVE ? 'NOT paused while loading' : 'paused while loading'}, ${ROUNDS} round${ROUNDS > 1 ? 's (median by total)' : ''})`,
  );
  console.log(
    '| file | rows | MiB | csv-parse s (baseline) | upload s | create s (head scan) | ingest s | total s | ratio baseline/total | ingest rows/s | end-to-end MB/s | server CPU cores | loader start s | 10/50/90 % at s |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|');
  const chosen: SizeResult[] = [];
  for (const rs of results.values()) {
    const r = medianRound(rs);
    chosen.push(r);
    const i = r.ingest;
    const total = i.uploadMs + i.createMs + i.ingestMs;
    const baseline = median(rs.map((x) => x.baselineMs));
    const marks = ['10%', '50%', '90%'].map((k) => (i.marks[k] === undefined ? '–' : s1(i.marks[k]!))).join(' / ');
    console.log(
      `| ${r.label} | ${r.csv.rows} | ${(r.csv.bytes / MB).toFixed(0)} | ${s1(baseline)} | ${s1(i.uploadMs)} | ${s1(i.createMs)} | ${s1(i.ingestMs)} | ${s1(total)} | ${(baseline / total).toFixed(2)} | ${Math.round(i.totalRows / (i.ingestMs / 1000))} | ${(r.csv.bytes / MB / (total / 1000)).toFixed(1)} | ${(i.cpuMs / total).toFixed(2)} | ${i.pendingMs === null ? '–' : s1(i.pendingMs)} | ${marks} |`,
    );
  }
  console.log(
    '\n## Server memory during upload + ingest (VmRSS sampled every 50 ms from /proc; every round: the targets take the worst)',
  );
  console.log(
    '| file | round | idle RSS MB | peak RSS MB | peak − idle MB | peak in upload / create / ingest MB | VmHWM MB (since start) | peak RSS with child processes MB |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const [label, rs] of results)
    for (const [n, r] of rs.entries()) {
      const i = r.ingest;
      console.log(
        `| ${label} | ${n + 1} | ${mb(i.idleKb)} | ${mb(i.peakKb)} | ${mb(i.peakKb - i.idleKb)} | ${i.phasePeakKb.map(mb).join(' / ')} | ${mb(i.hwmKb)} | ${mb(i.peakTreeKb)} |`,
      );
    }
  const withDispatch = chosen.filter((r) => r.dispatch);
  if (withDispatch.length) {
    console.log(
      `\n## Dispatch into runs (one-step no-op code workflow, RUN_CONCURRENCY=${RUN_CONCURRENCY}, concurrencyLimit ${QUEUE_LIMIT}, queue ${LIVE ? 'live since the upload' : 'resumed after loading'})`,
    );
    console.log(
      '| file | queued items | window s | first run after resume ms | runs created | runs created/s | runs finished (batch counters) | of which failed | finished/s | max runsRunning | server CPU cores | peak RSS with children MB |',
    );
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const r of withDispatch) {
      const d = r.dispatch!;
      console.log(
        `| ${r.label} | ${d.backlog} | ${d.seconds.toFixed(1)} | ${d.firstRunMs === null ? 'none' : d.firstRunMs.toFixed(0)} | ${d.created} | ${d.createdPerSec.toFixed(0)} | ${d.finished} | ${d.failed} | ${d.finishedPerSec.toFixed(0)} | ${d.maxRunning} | ${d.cpuShare.toFixed(2)} | ${mb(d.peakTreeKb)} |`,
      );
    }
  }
  const logged = chosen.flatMap((r) =>
    [['upload + ingest', r.ingest.logs] as const, ['dispatch', r.dispatch?.logs ?? {}] as const]
      .filter(([, l]) => Object.keys(l).length)
      .map(
        ([phase, l]) =>
          `- ${r.label}, ${phase}: ${Object.entries(l)
            .map(([k, n]) => `${n}× ${k}`)
            .join('; ')}`,
      ),
  );
  if (logged.length) {
    console.log('\n## Server warnings and errors logged during the phases');
    for (const line of logged) console.log(line);
  }
  console.log('\n### Targets');
  const worstPeakKb = (r: SizeResult) => Math.max(...(results.get(r.label) ?? [r]).map((x) => x.ingest.peakKb));
  for (const r of chosen) {
    const i = r.ingest;
    const peakKb = worstPeakKb(r);
    const ratio =
      median((results.get(r.label) ?? [r]).map((x) => x.baselineMs)) / (i.uploadMs + i.createMs + i.ingestMs);
    console.log(
      `- ${r.label}: upload + ingest at ${ratio.toFixed(2)} of plain csv-parse's speed (target ≥ ${RATIO_TARGET}): ${pass(ratio >= RATIO_TARGET)}`,
    );
    console.log(
      `- ${r.label}: peak RSS ${mb(peakKb)} MB, worst of ${ROUNDS} round${ROUNDS > 1 ? 's' : ''} (target ≤ ${RSS_TARGET_MB} MB): ${pass(peakKb / 1024 <= RSS_TARGET_MB)}`,
    );
  }
  if (chosen.length > 1) {
    const small = chosen.reduce((a, b) => (a.csv.bytes <= b.csv.bytes ? a : b));
    const large = chosen.reduce((a, b) => (a.csv.bytes >= b.csv.bytes ? a : b));
    const growth = (worstPeakKb(large) - worstPeakKb(small)) / 1024;
    console.log(
      `- flat RSS: worst peak ${mb(worstPeakKb(small))} MB at ${small.label} → ${mb(worstPeakKb(large))} MB at ${large.label} (${growth >= 0 ? '+' : ''}${growth.toFixed(0)} MB for ${(large.csv.bytes / small.csv.bytes).toFixed(1)}× the bytes; target ≤ +${FLAT_MB} MB): ${pass(growth <= FLAT_MB)}`,
    );
  }
  if (chosen.some((r) => r.via === 'store'))
    console.log('- note: POST /v1/queues was not available; the queue was created (and resumed) directly in the store');
}

export async function run(): Promise<void> {
  const results = new Map<string, SizeResult[]>();
  const files: [string, CsvFile][] = [];
  for (const label of SIZES) {
    const rows = Math.min(MAX_ROWS, Math.floor(parseSize(label) / ROW_BYTES));
    const csv = csvFile(rows);
    console.log(
      `${label}: ${csv.file} (${csv.rows} rows, ${csv.bytes} bytes, sha256 ${csv.sha256.slice(0, 16)}…)${csv.generatedMs === null ? ' cached' : ` generated in ${s1(csv.generatedMs)} s`}`,
    );
    files.push([label, csv]);
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const [label, csv] of files) {
      const r = await oneSize(label, csv);
      const i = r.ingest;
      console.log(
        `round ${round + 1}, ${label}: csv-parse ${s1(r.baselineMs)} s; upload ${s1(i.uploadMs)} s, create ${s1(i.createMs)} s, ingest ${s1(i.ingestMs)} s; peak RSS ${mb(i.peakKb)} MB`,
      );
      results.set(label, [...(results.get(label) ?? []), r]);
    }
  }
  report(results);
}
