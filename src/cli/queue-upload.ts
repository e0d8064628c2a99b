/**
 * `switchyard queue upload FILE --queue ID --trigger ID`: a CSV file into a queue as a batch,
 * over the HTTP API of openapi/queues.yaml (spec section 15 "Queue CSV batching"), the way an
 * API client does it: createCsvUploadUrl, PUT the bytes to the presigned URL (streamed, never
 * held in memory), createCsvBatch, then getQueueBatch polled until the rows are read and their
 * runs are finished (unless --no-wait), and the first page of listBatchRowErrors.
 *
 * Unlike the other verbs this one talks to a running server (the batch is loaded and its runs
 * dispatched there). The runtime token is SWITCHYARD_TOKEN, or one the CLI issues from the
 * store for an active credential of the organisation; the store must then be the server's
 * (same DATA_DIR or DATABASE_URL, SECRET_KEY, PUBLIC_URL / AUTH_URL: the token's issuer).
 *
 * Progress bars (cli-progress) go to stderr; when stderr is not a terminal they become plain
 * lines every 2 s so logs stay readable. The summary goes to stdout.
 */
import { createReadStream, constants as fsConstants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import type { Knex } from 'knex';
import type { components } from '../../generated/openapi/types.js';
import { loadConfig, type Config } from '../config/index.js';
import { createLogger } from '../config/logger.js';
import { createTokenService, listCredentials } from '../auth/index.js';
import type { CliKit } from './agents.js';

type Schemas = components['schemas'];
type QueueBatch = Schemas['QueueBatch'];
type UploadTarget = Schemas['QueueCsvUploadUrl'];
type RowErrorPage = Schemas['QueueBatchRowErrorPage'];

/** Spec "Limits": CSV files up to 1 GiB (createCsvUploadUrl `sizeBytes` maximum). */
export const MAX_CSV_BYTES = 1_073_741_824;
const POLL_MS = 250;
const ROW_ERRORS_SHOWN = 20;
/** Consecutive failed polls (server unreachable, 502/503/504) tolerated before giving up. */
const POLL_RETRIES = 8;
const FINISHED = new Set(['completed', 'failed', 'cancelled']);

interface UploadOptions {
  queue: string;
  trigger: string;
  url?: string;
  org?: string;
  wait: boolean;
  json?: boolean;
}

export function registerQueueUpload(queue: Command, kit: CliKit): void {
  queue
    .command('upload <file>')
    .description('upload a CSV file (up to 1 GiB) into a queue as a batch and follow it until its runs are finished')
    .requiredOption('--queue <queueId>', 'queue to load the rows into')
    .requiredOption('--trigger <triggerId>', "workflow trigger each row's run is started through")
    .option('--url <baseUrl>', 'service URL (default: SWITCHYARD_URL, else PUBLIC_URL)')
    .addOption(kit.orgOption())
    .option('--no-wait', 'return as soon as the batch is created')
    .option('--json', 'print the batch as JSON')
    .action(async (file: string, o: UploadOptions) => {
      const size = await checkFile(kit, file);
      const envToken = process.env.SWITCHYARD_TOKEN?.trim();
      if (envToken) {
        // The token names the organisation; --org, when given, is sent as X-Selected-Org (403
        // org_mismatch if it differs).
        const base = baseUrl(kit, o.url, () => loadConfig().publicUrl);
        return upload(kit, new Api(kit, base, { get: async () => envToken, hint: '' }, o.org), { file, size, o });
      }
      return kit.withStore(async ({ db, config }) => {
        const orgId = await kit.resolveOrg(db, o.org);
        const base = baseUrl(kit, o.url, () => config.publicUrl);
        return upload(kit, new Api(kit, base, await storeTokens(kit, db, config, orgId), undefined), { file, size, o });
      });
    });
}

async function checkFile(kit: CliKit, file: string): Promise<number> {
  let info;
  try {
    info = await stat(file);
  } catch {
    throw kit.fail(`no such file: ${file}`);
  }
  if (!info.isFile()) throw kit.fail(`not a file: ${file}`);
  if (info.size === 0) throw kit.fail(`${file} is empty`);
  if (info.size > MAX_CSV_BYTES)
    throw kit.fail(`${file} is ${formatBytes(info.size)}; CSV files are limited to 1 GiB (${MAX_CSV_BYTES} bytes)`);
  try {
    await access(file, fsConstants.R_OK);
  } catch {
    throw kit.fail(`cannot read ${file}`);
  }
  return info.size;
}

function baseUrl(kit: CliKit, explicit: string | undefined, fallback: () => string): string {
  const raw = explicit ?? (process.env.SWITCHYARD_URL?.trim() || fallback());
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw kit.fail(`--url must be an absolute http(s) URL, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw kit.fail(`--url must be an absolute http(s) URL, got "${raw}"`);
  return raw.replace(/\/+$/, '');
}

interface Tokens {
  get(): Promise<string>;
  /** Appended to a 401: where this token came from. */ hint: string;
}

/** A runtime token for an active credential of the organisation, issued again shortly before it expires. */
async function storeTokens(kit: CliKit, db: Knex, config: Config, orgId: string): Promise<Tokens> {
  let cursor: string | undefined;
  let credential;
  do {
    const page = await listCredentials(db, orgId, { limit: 200, cursor });
    credential = page.items.find((c) => c.revokedAt === null);
    cursor = page.nextCursor ?? undefined;
  } while (!credential && cursor);
  if (!credential)
    throw kit.fail(
      `organisation ${orgId} has no active credential: create one with \`switchyard credentials create --label cli\`, or set SWITCHYARD_TOKEN`,
    );
  const service = await createTokenService({
    db,
    config,
    log: createLogger(process.env.LOG_LEVEL ?? 'warn', process.stderr),
  });
  const { id: credentialId, clientId } = credential;
  let current: { token: string; renewAt: number } | undefined;
  return {
    async get() {
      if (!current || Date.now() >= current.renewAt) {
        const issued = await service.issue({ orgId, credentialId, clientId });
        // Renew two minutes before expiry (or halfway through a very short lifetime).
        current = {
          token: issued.accessToken,
          renewAt: Date.now() + Math.max(issued.expiresIn * 500, (issued.expiresIn - 120) * 1000),
        };
      }
      return current.token;
    },
    hint: ' (the CLI issued this token from its store: the server must use the same store, SECRET_KEY and PUBLIC_URL/AUTH_URL; or set SWITCHYARD_TOKEN)',
  };
}

class Api {
  constructor(
    private readonly kit: CliKit,
    readonly base: string,
    private readonly tokens: Tokens,
    private readonly selectedOrg: string | undefined,
  ) {}

  /**
   * One JSON call; an error answer becomes a CLI failure naming the step, the status and the server's {error, message}.
   */
  async call<T>(what: string, method: string, pathname: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = {
      accept: 'application/json',
      authorization: `Bearer ${await this.tokens.get()}`,
    };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.selectedOrg) headers['x-selected-org'] = this.selectedOrg;
    let res: Response;
    try {
      res = await fetch(`${this.base}${pathname}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      const failure = this.kit.fail(`${what}: cannot reach ${this.base}: ${describe(err)}`);
      transientErrors.add(failure);
      throw failure;
    }
    const text = await res.text();
    if (res.ok) return JSON.parse(text) as T;
    const failure = this.kit.fail(errorMessage(what, res.status, text) + (res.status === 401 ? this.tokens.hint : ''));
    if (res.status === 502 || res.status === 503 || res.status === 504) transientErrors.add(failure);
    throw failure;
  }
}

/** The server unreachable or answering 502/503/504 (a restart, a proxy): a poll retries those. */
const transientErrors = new WeakSet<Error>();

function describe(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
}

function errorMessage(what: string, status: number, text: string): string {
  let parsed: { error?: unknown; message?: unknown } | undefined;
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    /* not JSON */
  }
  if (parsed && typeof parsed.error === 'string') {
    const message = typeof parsed.message === 'string' ? parsed.message : '';
    if (status === 501 || parsed.error === 'not_implemented')
      return `${what}: the server does not implement this yet (501 not_implemented: ${message})`;
    return `${what}: ${status} ${parsed.error}: ${message}`;
  }
  return `${what}: HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ''}`;
}

async function upload(
  kit: CliKit,
  api: Api,
  { file, size, o }: { file: string; size: number; o: UploadOptions },
): Promise<void> {
  const q = `/api/queues/${encodeURIComponent(o.queue)}`;
  const target = await api.call<UploadTarget>('create upload URL', 'POST', `${q}/items/csv/upload-url`, {
    filename: path.basename(file),
    sizeBytes: size,
  });
  const bar = new Progress('upload', 'bytes');
  bar.start(size, 0);
  try {
    await putFile(kit, target, { file, size, onProgress: (sent) => bar.update(sent, size) });
  } finally {
    bar.stop();
  }
  let batch = await api.call<QueueBatch>('create batch', 'POST', `${q}/items/csv`, {
    csvKey: target.csvKey,
    triggerId: o.trigger,
  });
  if (o.wait) batch = await follow(api, `${q}/batches/${encodeURIComponent(batch.batchId)}`, batch);
  const rowErrors =
    batch.skippedRows > 0 || o.wait
      ? await api.call<RowErrorPage>(
          'list row errors',
          'GET',
          `${q}/batches/${encodeURIComponent(batch.batchId)}/row-errors?limit=${ROW_ERRORS_SHOWN}`,
        )
      : { items: [], nextCursor: null };
  if (o.json) kit.print({ ...batch, rowErrors: rowErrors.items });
  else process.stdout.write(summary(batch, rowErrors, { waited: o.wait }));
  if (batch.status === 'failed')
    throw kit.fail(`batch ${batch.batchId} failed: ${batch.failureReason ?? 'no reason given'}`);
  if (batch.status === 'cancelled') throw kit.fail(`batch ${batch.batchId} was cancelled`);
}

/**
 * PUT the file to its presigned URL, streamed with a Content-Length; no bearer token (the URL's
 * signature authorises it).
 */
function putFile(
  kit: CliKit,
  target: UploadTarget,
  { file, size, onProgress }: { file: string; size: number; onProgress: (sent: number) => void },
): Promise<void> {
  const url = new URL(target.uploadUrl);
  const request = url.protocol === 'https:' ? https.request : http.request;
  const headers = { ...target.headers, 'content-length': String(size) };
  return new Promise<void>((resolve, reject) => {
    let answered = false;
    const req = request(url, { method: target.method, headers }, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) resolve();
        else reject(kit.fail(errorMessage('upload file', status, Buffer.concat(chunks).toString('utf8'))));
      });
    });
    // The server may answer (413, 403) and close before the body is sent: its answer wins over the write error.
    req.on('error', (err) => {
      if (!answered) reject(kit.fail(`upload file: cannot reach ${url.origin}: ${describe(err) || err.message}`));
    });
    // Exactly `size` bytes (the declared sizeBytes), even if the file grows meanwhile.
    const body = createReadStream(file, { start: 0, end: size - 1, highWaterMark: 256 * 1024 });
    let sent = 0;
    body.on('data', (chunk) => {
      sent += chunk.length;
      onProgress(sent);
    });
    body.on('error', (err) => {
      req.destroy();
      reject(kit.fail(`cannot read ${file}: ${err.message}`));
    });
    body.pipe(req);
  });
}

/** Poll the batch: a bar for rows read until loading is done, then one for finished runs until the batch is. */
async function follow(api: Api, batchPath: string, first: QueueBatch): Promise<QueueBatch> {
  let batch = first;
  let failures = 0;
  const poll = async (): Promise<void> => {
    await sleep(POLL_MS);
    try {
      batch = await api.call<QueueBatch>('get batch', 'GET', batchPath);
      failures = 0;
    } catch (err) {
      if (!(err instanceof Error && transientErrors.has(err)) || ++failures > POLL_RETRIES) throw err;
    }
  };
  const loading = () =>
    !FINISHED.has(batch.status) &&
    (batch.status === 'validating' ||
      batch.status === 'pending' ||
      batch.totalRows === null ||
      batch.readRows < batch.totalRows);
  const finishedRuns = () => batch.runsCompleted + batch.runsFailed + batch.runsCancelled;
  const rows = new Progress('rows read', 'rows');
  const runs = new Progress('runs finished', 'runs');
  // Ctrl-C stops following, not the batch: say so rather than leave a half-drawn bar.
  const interrupted = () => {
    rows.stop();
    runs.stop();
    process.stderr.write(
      `switchyard: stopped following; batch ${first.batchId} goes on on the server (GET ${batchPath})\n`,
    );
    process.exit(130);
  };
  process.once('SIGINT', interrupted);
  try {
    rows.start(batch.totalRows ?? 0, batch.readRows);
    while (loading()) {
      await poll();
      rows.update(batch.readRows, batch.totalRows ?? 0);
    }
    rows.stop();
    // A small batch may finish while its rows are read: the runs line still shows how they ended.
    if (FINISHED.has(batch.status) && batch.loadedRows === 0) return batch;
    runs.start(batch.loadedRows, finishedRuns());
    while (!FINISHED.has(batch.status)) {
      await poll();
      runs.update(finishedRuns(), batch.loadedRows, batch.runsFailed ? `${batch.runsFailed} failed` : '');
    }
    return batch;
  } finally {
    rows.stop();
    runs.stop();
    process.removeListener('SIGINT', interrupted);
  }
}

function summary(batch: QueueBatch, errors: RowErrorPage, { waited }: { waited: boolean }): string {
  const lines = [`batch ${batch.batchId} ${batch.status}: ${batch.filename}, ${formatBytes(batch.sizeBytes)}`];
  if (!waited) {
    lines.push(
      `${batch.totalRows ?? '?'} rows to load; rows and runs continue on the server (GET /api/queues/${batch.queueId}/batches/${batch.batchId})`,
    );
  } else {
    lines.push(
      `rows: ${batch.loadedRows} loaded, ${batch.skippedRows} skipped, ${batch.readRows} read of ${batch.totalRows ?? '?'}`,
    );
    lines.push(
      `runs: ${batch.runsCompleted} completed, ${batch.runsFailed} failed, ${batch.runsCancelled} cancelled, ${batch.runsPending} pending, ${batch.runsRunning} running`,
    );
  }
  if (batch.failureReason) lines.push(`failure: ${batch.failureReason}`);
  if (errors.items.length > 0) {
    lines.push(`skipped rows${errors.nextCursor ? ` (first ${errors.items.length} of ${batch.skippedRows})` : ''}:`);
    for (const e of errors.items)
      lines.push(`  row ${e.rowNumber}: ${e.reason}: ${visible(e.message)} — ${visible(e.rawExcerpt)}`);
    if (errors.nextCursor) lines.push(`  … more: GET /api/queues/${batch.queueId}/batches/${batch.batchId}/row-errors`);
  }
  return lines.join('\n') + '\n';
}

/** Text from the file on one line, and no terminal escapes: control characters are shown escaped. */
function visible(text: string): string {
  return text.replace(
    /[\u0000-\u001f\u007f]/g,
    (c) => ({ '\n': '\\n', '\r': '\\r', '\t': '\\t' })[c] ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
}

/**
 * One progress bar on stderr (cli-progress): bar, percentage, counts, rate and ETA on a
 * terminal; a plain line every 2 s otherwise (its noTTY mode). Rate and ETA come from the
 * last few seconds of progress, not from the start, so a stall shows.
 */
class Progress {
  private readonly bar: cliProgress.SingleBar;
  private readonly samples: { t: number; v: number }[] = [];
  private origin: { t: number; v: number } | undefined;
  private total = 0;
  private active = false;

  constructor(
    private readonly label: string,
    private readonly unit: 'bytes' | 'rows' | 'runs',
  ) {
    const tty = process.stderr.isTTY === true;
    this.bar = new cliProgress.SingleBar(
      {
        stream: tty ? process.stderr : changedLines(process.stderr),
        noTTYOutput: true,
        notTTYSchedule: 2000,
        clearOnComplete: !tty, // a non-terminal gets no blank line after the last progress line
        barsize: 30,
        format: (options, params, payload: { note?: string }) => {
          const pct = `${Math.floor(params.progress * 100)}%`.padStart(4);
          const counts = `${this.fmt(params.value)}/${this.fmt(params.total)}`;
          const { rate, eta } = this.speed(params.value);
          const bar = tty ? `${cliProgress.Format.BarFormat(params.progress, options)} ` : '';
          return [`${this.label.padEnd(13)} ${bar}${pct} ${counts}`, rate, `ETA ${eta}`, payload.note]
            .filter(Boolean)
            .join('  ');
        },
      },
      cliProgress.Presets.shades_classic,
    );
  }

  start(total: number, value: number): void {
    this.total = total;
    this.active = true;
    this.origin = { t: Date.now(), v: value };
    this.samples.push(this.origin);
    this.bar.start(total, value, { note: '' });
  }

  update(value: number, total: number, note = ''): void {
    const now = Date.now();
    const last = this.samples[this.samples.length - 1];
    if (!last || now - last.t >= 100) this.samples.push({ t: now, v: value });
    while (this.samples.length > 2 && now - this.samples[0]!.t > 5000) this.samples.shift();
    if (total !== this.total) {
      this.total = total;
      this.bar.setTotal(total);
    }
    this.bar.update(value, { note });
  }

  stop(): void {
    if (this.active) this.bar.stop();
    this.active = false;
  }

  private fmt(n: number): string {
    return this.unit === 'bytes' ? formatBytes(n) : String(n);
  }

  /** Rate over the last few seconds while running; over the whole bar once it is full. */
  private speed(value: number): { rate: string; eta: string } {
    const left = this.total - value;
    const from = left <= 0 ? this.origin : this.samples[0];
    const seconds = from ? (Date.now() - from.t) / 1000 : 0;
    const perSecond = from && seconds > (left <= 0 ? 0.001 : 0.2) ? (value - from.v) / seconds : 0;
    const rate =
      perSecond <= 0 && left <= 0
        ? '' // too quick to measure
        : this.unit === 'bytes'
          ? `${formatBytes(perSecond)}/s`
          : `${perSecond.toFixed(perSecond < 10 ? 1 : 0)} ${this.unit}/s`;
    const eta = left <= 0 ? '0s' : perSecond > 0 ? formatDuration(left / perSecond) : '?';
    return { rate, eta };
  }
}

/** For logs: whole lines, each only when it differs from the one before (noTTY mode redraws on a timer). */
function changedLines(out: NodeJS.WritableStream): Writable {
  let pending = '';
  let last = '';
  return new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      pending += String(chunk);
      let end: number;
      while ((end = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, end);
        pending = pending.slice(end + 1);
        if (line !== '' && line !== last) out.write(`${line}\n`);
        if (line !== '') last = line;
      }
      done();
    },
  });
}

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${Math.round(v)} B` : `${v.toFixed(v < 10 ? 2 : 1)} ${units[i]}`;
}

function formatDuration(seconds: number): string {
  const s = Math.ceil(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
