/**
 * Gauges read from the store at scrape time: PENDING runs, the event outbox's backlog and lag,
 * CSV batches not finished yet. Each is one cheap bounded query on an index, made at most once
 * per CACHE_MS whatever the scrape rate; every process reports the same store-wide values.
 */
import type { Knex } from 'knex';
import type { Logger } from '../config/logger.js';
import { cachedFor, outboxLag, outboxPending, queueBatches, runsPending, sampleOnScrape } from '../kernel/metrics.js';
import { countPendingRuns } from '../runs/index.js';
import { outboxBacklog } from '../events/index.js';
import { liveBatchCounts } from '../queues/index.js';

const CACHE_MS = 2_000;
/** Counts stop here: the gauge says "at least this many" rather than scanning a huge backlog. */
const COUNT_CAP = 100_000;

/**
 * Starts sampling the store's gauges; returns the function that stops it. A failed query is
 * logged and leaves the gauge at its last value (the scrape itself succeeds).
 */
export function sampleStore(db: Knex, log: Logger): () => void {
  const logged =
    <T>(what: string, load: () => Promise<T>) =>
    () =>
      load().catch((err: unknown) => {
        log.warn({ err }, `metrics: reading ${what} from the store failed; the gauge keeps its last value`);
        throw err;
      });
  const pending = cachedFor(
    CACHE_MS,
    logged('the pending runs', () => countPendingRuns(db, COUNT_CAP)),
  );
  const backlog = cachedFor(
    CACHE_MS,
    logged('the event outbox backlog', () => outboxBacklog(db, COUNT_CAP)),
  );
  const batches = cachedFor(
    CACHE_MS,
    logged('the batches by state', () => liveBatchCounts(db)),
  );
  const stops = [
    sampleOnScrape(runsPending, async () => runsPending.set(await pending())),
    sampleOnScrape(outboxPending, async () => outboxPending.set((await backlog()).pending)),
    sampleOnScrape(outboxLag, async () => {
      const { oldest } = await backlog();
      outboxLag.set(oldest ? Math.max(0, (Date.now() - Date.parse(oldest)) / 1000) : 0);
    }),
    sampleOnScrape(queueBatches, async () => {
      for (const [state, n] of Object.entries(await batches())) queueBatches.set({ state }, n);
    }),
  ];
  return () => {
    for (const stop of stops) stop();
  };
}
