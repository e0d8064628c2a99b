/**
 * The batch loader: turns a validated upload into queue items and row errors, one chunk per
 * transaction (openapi/queues.yaml createCsvBatch). A chunk commits its items, its row errors,
 * the batch's counters and the resume point of the next chunk together, and only while this
 * loader still holds the batch and the batch is `running`; so a crash (kill -9) loses the chunk
 * in flight and nothing else, a loader that takes the batch over after the lease resumes at the
 * last committed chunk (no row lost or doubled), and a cancel stops row creation within one
 * chunk with no half-written chunk left.
 */
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from '../config/logger.js';
import type { BlobStore } from '../kernel/blobs.js';
import { fromJson } from '../storage/db.js';
import { nowIso } from '../kernel/ids.js';
import { contextFromTraceparent, withSpan } from '../kernel/tracing.js';
import { readRows, type CsvChunk } from './csv.js';
import type { BatchRow } from './batches.js';
import { csvRowsLoaded, csvRowsRead, csvRowsSkipped } from '../kernel/metrics.js';

export interface LoaderDeps {
  db: Knex;
  blobs: BlobStore;
  log: Logger;
  /** How long a loader holds a batch without committing a chunk before another may take it over. */
  leaseMs: number;
  /** Rows and row errors per chunk (one transaction each). */
  chunkRows: number;
  /** Called after each committed chunk (the dispatcher has new items). */
  onChunk: () => void;
}

/** Items per INSERT statement: 7 columns each stays far under sqlite's and PostgreSQL's parameter limits. */
const ITEMS_PER_INSERT = 500; // knex builds a sqlite multi-row insert as a compound SELECT, capped at 500 terms
const ERRORS_PER_INSERT = 500;

/** A batch still `validating` this long after its creation was left by a server that stopped. */
export const VALIDATION_STALE_MS = 5 * 60_000;
const INTERRUPTED =
  'The check of the file was interrupted (the server stopped); create the batch again with the same csvKey.';

export class BatchLoader {
  readonly loaderId = `${os.hostname()}:${process.pid}:loader:${randomBytes(4).toString('hex')}`;
  private loop: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private readonly abort = new AbortController();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly deps: LoaderDeps) {}

  /** Looks for batches now and then every `pollMs` (batches created by other processes, leases that expired). */
  start(pollMs: number): void {
    this.timer = setInterval(() => this.wake(), pollMs);
    this.timer.unref();
    this.wake();
  }

  /** A batch may be waiting: load until none is left. */
  wake(): void {
    if (this.stopped) return;
    if (this.loop) {
      this.again = true;
      return;
    }
    this.loop = this.run().finally(() => {
      this.loop = undefined;
      if (this.again && !this.stopped) {
        this.again = false;
        this.wake();
      }
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.abort.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    try {
      await this.failInterrupted();
      for (let batch = await this.claim(); batch && !this.stopped; batch = await this.claim()) await this.load(batch);
    } catch (err) {
      if (!this.stopped) this.deps.log.error({ err }, 'batch loader failed (it retries on the next poll)');
    }
  }

  /**
   * Head validation runs inside createCsvBatch, so a server that stops there leaves its batch
   * `validating`: past VALIDATION_STALE_MS (a 1 GiB check takes seconds) it fails with a reason,
   * and its upload key is free for a new batch.
   */
  private async failInterrupted(): Promise<void> {
    const { db, log } = this.deps;
    const cutoff = new Date(Date.now() - VALIDATION_STALE_MS).toISOString();
    const stale = (await db('queue_batches')
      .where('status', 'validating')
      .andWhere('updated_at', '<', cutoff)
      .pluck('id')) as string[];
    for (const id of stale) {
      await db.transaction(async (trx) => {
        const n = await trx('queue_batches')
          .where({ id, status: 'validating' })
          .update({ status: 'failed', failure_reason: INTERRUPTED, updated_at: nowIso() });
        if (n) await trx('csv_uploads').where({ batch_id: id }).update({ batch_id: null });
      });
      log.warn({ batchId: id }, INTERRUPTED);
    }
  }

  /** Takes the oldest pending batch, or a running one whose loader's lease expired. */
  private async claim(): Promise<BatchRow | undefined> {
    const { db, leaseMs } = this.deps;
    const now = nowIso();
    const free = (q: Knex.QueryBuilder) =>
      q
        .whereIn('status', ['pending', 'running'])
        .where('loaded', false)
        .andWhere((w) => void w.whereNull('lease_until').orWhere('lease_until', '<', now));
    const pick = free(db('queue_batches').select('id')).orderBy('created_at').orderBy('id').limit(1);
    if (db.client.config.client === 'pg') pick.forUpdate().skipLocked();
    const rows = (await free(db('queue_batches').where('id', pick))
      .update({
        status: 'running',
        loader_id: this.loaderId,
        lease_until: new Date(Date.now() + leaseMs).toISOString(),
        updated_at: now,
      })
      .returning('*')) as BatchRow[];
    return rows[0];
  }

  /** One batch's load in its span (`csv batch load`), in the trace of the request that created the batch. */
  private load(batch: BatchRow): Promise<void> {
    // A child of the request that created the batch (its stored traceparent), however much later.
    return withSpan('csv batch load', { parent: contextFromTraceparent(batch.trace_parent) }, async (span) => {
      if (span.isRecording())
        span.setAttributes({ 'switchyard.org_id': batch.org_id, 'switchyard.queue.batch_id': batch.id });
      await this.loadRows(batch);
    });
  }

  private async loadRows(batch: BatchRow): Promise<void> {
    const { blobs, chunkRows, log } = this.deps;
    const columns = fromJson<string[]>(batch.columns) ?? [];
    const from = { offset: Number(batch.resume_offset), rowNumber: Number(batch.resume_row) };
    if (from.offset > 0 && Number(batch.loaded_rows) + Number(batch.skipped_rows) > 0)
      log.info({ batchId: batch.id, from }, 'resuming a batch load');
    try {
      for await (const chunk of readRows((start) => blobs.streamFrom(batch.blob_key, start), {
        columns,
        from,
        chunkRows,
        signal: this.abort.signal,
        values: false,
      })) {
        if (!(await this.commit(batch, chunk))) return;
        csvRowsRead.inc(chunk.rows.length + chunk.errors.length);
        csvRowsLoaded.inc(chunk.rows.length);
        csvRowsSkipped.inc(chunk.errors.length);
        this.deps.onChunk();
      }
    } catch (err) {
      if ((err as Error).name === 'AbortError' || this.stopped) return;
      log.error({ err, batchId: batch.id }, 'batch load failed');
      const reason =
        (err as NodeJS.ErrnoException).code === 'ENOENT'
          ? 'The uploaded file is no longer stored.'
          : 'Loading the rows failed on the server; see its log.';
      await this.deps
        .db('queue_batches')
        .where({ id: batch.id, loader_id: this.loaderId, status: 'running' })
        .update({ status: 'failed', failure_reason: reason, lease_until: null, updated_at: nowIso() });
      this.deps.onChunk();
    }
  }

  /** One chunk in one transaction; false when the batch was cancelled or taken over (nothing written). */
  private async commit(batch: BatchRow, chunk: CsvChunk): Promise<boolean> {
    const { db, leaseMs } = this.deps;
    const now = nowIso();
    return db.transaction(async (trx) => {
      const n = await trx('queue_batches')
        .where({ id: batch.id, loader_id: this.loaderId, status: 'running' })
        .update({
          resume_offset: chunk.next.offset,
          resume_row: chunk.next.rowNumber,
          loaded_rows: trx.raw('loaded_rows + ?', [chunk.rows.length]),
          skipped_rows: trx.raw('skipped_rows + ?', [chunk.errors.length]),
          loaded: chunk.done,
          lease_until: chunk.done ? null : new Date(Date.now() + leaseMs).toISOString(),
          updated_at: now,
        });
      if (n === 0) return false;
      for (let i = 0; i < chunk.rows.length; i += ITEMS_PER_INSERT) {
        await trx('queue_items').insert(
          chunk.rows.slice(i, i + ITEMS_PER_INSERT).map((r) => ({
            batch_id: batch.id,
            queue_id: batch.queue_id,
            row_number: r.rowNumber,
            byte_start: r.start,
            byte_end: r.end,
            status: 'queued',
            attempts: 0,
          })),
        );
      }
      for (let i = 0; i < chunk.errors.length; i += ERRORS_PER_INSERT) {
        await trx('batch_row_errors').insert(
          chunk.errors.slice(i, i + ERRORS_PER_INSERT).map((e) => ({
            batch_id: batch.id,
            row_number: e.rowNumber,
            reason: e.reason,
            message: e.message,
            raw_excerpt: e.rawExcerpt,
          })),
        );
      }
      return true;
    });
  }
}
