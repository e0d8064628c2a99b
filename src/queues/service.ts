/**
 * The queues context's running part (spec section 15): the loader that turns validated uploads
 * into queue items, and the dispatcher that turns items into runs under each queue's concurrency
 * limit and priority. Both run where runs are executed (RUN_CONCURRENCY > 0, as event delivery
 * does); an HTTP-only process accepts uploads and batches and leaves loading to the others.
 */
import type { Knex } from 'knex';
import type { Config } from '../config/index.js';
import type { Logger } from '../config/logger.js';
import type { BlobStore } from '../kernel/blobs.js';
import type { Signals } from '../runs/index.js';
import type { CallTargets } from '../triggers/index.js';
import type { RunQueue } from '../runs/index.js';
import { BatchLoader } from './loader.js';
import { QueueDispatcher } from './dispatcher.js';

export interface QueuesDeps {
  db: Knex;
  config: Config;
  log: Logger;
  blobs: BlobStore;
  signals: Signals;
  callTargets: CallTargets;
  runQueue: RunQueue;
  /** Load batches and dispatch runs in this process. */
  active: boolean;
}

/** Rows and row errors per loader transaction. */
const CHUNK_ROWS = 5000;
/** How often an idle process looks for work another process left (new batches, expired leases, finished runs). */
const POLL_MS = 500;

export class QueuesService {
  private readonly loader: BatchLoader | undefined;
  private readonly dispatcher: QueueDispatcher | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(readonly deps: QueuesDeps) {
    if (!deps.active) return;
    const { db, blobs, log, config } = deps;
    this.dispatcher = new QueueDispatcher({
      db,
      blobs,
      log,
      callTargets: deps.callTargets,
      runQueue: deps.runQueue,
      runTimeoutMs: config.runTimeoutMs,
      aheadMax: Math.max(16, 4 * config.runConcurrency),
    });
    this.loader = new BatchLoader({
      db,
      blobs,
      log,
      leaseMs: config.runLeaseMs,
      chunkRows: CHUNK_ROWS,
      onChunk: () => this.dispatcher!.wake(),
    });
  }

  start(): void {
    if (!this.loader || !this.dispatcher) return;
    this.loader.start(POLL_MS);
    this.dispatcher.start(POLL_MS);
    // A finished run frees a place in its queue (a run of another queue or of no queue costs one cheap pass).
    this.unsubscribe = this.deps.signals.onRunFinished(() => this.dispatcher!.wake());
  }

  /** Something changed (a batch created, a queue resumed or its limit raised): load and dispatch soon. */
  wake(): void {
    this.loader?.wake();
    this.dispatcher?.wake();
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    await this.loader?.stop();
    await this.dispatcher?.stop();
  }
}
