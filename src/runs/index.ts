/**
 * The runs context's public surface: run records and their states, views for polling and
 * results (run files and their signed URLs are the files context's), signals, the group commit of new runs and the run
 * workers. Its HTTP handlers are in handlers/index.ts, for the composition root.
 */
export { createSignals, type Signals, type Finish } from './signals.js';
export { drainSyncWaits } from './drain-waits.js';
export { GroupCommitter } from './group-commit.js';
export { RunWorkers, type RunAdoption } from './worker.js';
export { InProcessRunQueue, RedisRunQueue, type RunQueue } from './run-queue.js';
export { runRows, insertRuns, MAX_RUNS_PER_INSERT, type RunRows, findRun, type RunRow } from './runs.js';
export { countPendingRuns } from './runs.js';
export { isTerminal } from './states.js';
export { readRunParts, syncView, statusView, resultsView, detailView, type RunParts } from './views.js';
export { lookupIdempotent, rememberIdempotent, purgeExpiredIdempotencyKeys, IdempotencyRace } from './idempotency.js';
export { runStatusIn, runStatusOf, failPendingRuns } from './queries.js';
export type { RunStatus } from './states.js';
