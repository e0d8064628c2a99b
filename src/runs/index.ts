/**
 * The runs context's public surface: run records and their states, views for polling and
 * results, run files and their signed URLs, signals, the group commit of new runs and the run
 * workers. Its HTTP handlers are in handlers/index.ts, for the composition root.
 */
export { recordFile, deleteFiles, attachFilesToRun, recordFiles } from './files.js';
export { createSignals, type Signals, type Finish } from './signals.js';
export { drainSyncWaits } from './drain-waits.js';
export { GroupCommitter } from './group-commit.js';
export { RunWorkers, type RunAdoption } from './worker.js';
export {
  BROWSER_FILE_URL_TTL_SECONDS,
  signFileUrl,
  FILESTORAGE_URL_TTL_SECONDS,
  STEP_FILE_URL_TTL_SECONDS,
  ATTACHMENT_URL_TTL_SECONDS,
} from './signed-urls.js';
export { runRows, insertRuns, MAX_RUNS_PER_INSERT, type RunRows, findRun } from './runs.js';
export { countPendingRuns } from './runs.js';
export { isTerminal } from './states.js';
export { readRunParts, syncView, type RunParts } from './views.js';
export { lookupIdempotent, rememberIdempotent, purgeExpiredIdempotencyKeys, IdempotencyRace } from './idempotency.js';
export { runStatusIn, runStatusOf, failPendingRuns, fileSummaries, type FileSummary } from './queries.js';
export type { RunStatus } from './states.js';
