/**
 * The events context as the rest of the service sees it: the dependencies of the item and
 * file writes, the outbox dispatcher, and the synchronous trigger tests (openapi/resources.yaml
 * testDataCollectionTrigger, testMemoryTrigger).
 */
import type { Knex } from 'knex';
import type { Config } from '../config/index.js';
import type { Logger } from '../config/logger.js';
import type { BlobStore } from '../kernel/blobs.js';
import type { RedisClient } from '../storage/redis.js';
import { EventDispatcher, type Poster } from './dispatcher.js';
import type { FileDeps } from './files.js';
import { redisRateWindows } from './rate-windows.js';
import { WriteQueue } from '../storage/write-queue.js';
import { TtlMemo } from '../kernel/ttl-memo.js';
import { watchTables } from '../storage/changes.js';
import { findCollection, type CollectionRecord } from './collections.js';
import type { AddressCheck } from './trigger-urls.js';

export interface EventsOptions {
  db: Knex;
  config: Config;
  log: Logger;
  blobs: BlobStore;
  redis?: RedisClient | undefined;
  post: Poster;
  addresses: AddressCheck;
  /** Deliver in this process (false on HTTP-only processes: RUN_CONCURRENCY=0). */
  deliver: boolean;
  /** The dispatcher's calls (a delivery thread, src/events/outbound.ts); `post` when absent. */
  delivery?: { post: Poster; close(): Promise<void> } | undefined;
}

export interface CallResult {
  ok: boolean;
  httpStatus: number | null;
  runId: string | null;
  durationMs: number;
  error: string | null;
}

export class EventsService {
  readonly deps: FileDeps;
  readonly dispatcher: EventDispatcher | undefined;
  private readonly post: Poster;
  private readonly delivery: { post: Poster; close(): Promise<void> } | undefined;
  /**
   * Collections as item writes read them, per process for REVOCATION_CACHE_MS (2 s): a change
   * made here is seen at once; one made by another process of a scaled-out installation within
   * that time (openapi/resources.yaml updateDataCollection). The collections' write functions tell
   * this memo (`tableChanged`), whoever calls them.
   */
  private readonly collections: TtlMemo<CollectionRecord | undefined>;
  private readonly db: Knex;

  constructor(opts: EventsOptions) {
    this.post = opts.post;
    this.db = opts.db;
    this.collections = new TtlMemo(opts.config.revocationCacheMs);
    watchTables(opts.db, ['collections'], this);
    // One write queue for item writes and the dispatcher's claims and outcomes: on sqlite they
    // would otherwise meet at the write lock and sleep in its busy handler (bench/events.ts).
    const writes = WriteQueue.for(opts.db);
    this.delivery = opts.delivery;
    this.dispatcher = opts.deliver
      ? new EventDispatcher({
          writes,
          secretKey: opts.config.secretKey,
          post: opts.delivery?.post ?? opts.post,
          log: opts.log,
        })
      : undefined;
    const windows = opts.redis ? redisRateWindows(opts.redis, `${opts.config.redisPrefix}:rw:`) : undefined;
    this.deps = {
      db: opts.db,
      writes,
      secretKey: opts.config.secretKey,
      addresses: opts.addresses,
      windows,
      blobs: opts.blobs,
      config: opts.config,
      log: opts.log,
      wake: () => this.dispatcher?.wake(),
    };
  }

  collection(orgId: string, id: string): Promise<CollectionRecord | undefined> {
    return this.collections.get(`${orgId}:${id}`, () => findCollection(this.db, orgId, id));
  }

  /** After a change of the organisation's collections in this process (told by the collections' writes). */
  forgetOrg(orgId: string): void {
    this.collections.deletePrefix(`${orgId}:`);
  }

  start(): void {
    this.dispatcher?.start();
  }

  async stop(): Promise<void> {
    await this.dispatcher?.stop();
    await this.delivery?.close();
  }

  /** One synchronous call for an organisation, as an event call is made (the trigger test endpoints). */
  async call(orgId: string, url: string, apiKey: string, payload: unknown): Promise<CallResult> {
    const started = performance.now();
    try {
      const res = await this.post({
        orgId,
        url,
        body: JSON.stringify(payload),
        headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
      });
      const runId = res.headers['x-pf-run-id'];
      const ok = res.status >= 200 && res.status < 300;
      return {
        ok,
        httpStatus: res.status,
        runId: typeof runId === 'string' ? runId : null,
        durationMs: Math.round(res.durationMs),
        error: ok ? null : `The trigger URL answered ${res.status}`,
      };
    } catch (err) {
      return {
        ok: false,
        httpStatus: null,
        runId: null,
        durationMs: Math.round(performance.now() - started),
        error: (err as Error).message.slice(0, 500),
      };
    }
  }
}
