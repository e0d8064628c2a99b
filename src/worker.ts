/**
 * Worker-only entry (scale-out): executes queued runs, no HTTP. Needs REDIS_URL (bee-queue
 * delivers the runs and run-finished signals reach the HTTP processes' sync waits) and a
 * store shared with the HTTP processes (DATABASE_URL, or the same sqlite file on one host).
 */
import { loadConfig, ConfigError } from './config/index.js';
import { createLogger } from './config/logger.js';
import { createRuntime } from './app.js';
import { IsolationUnavailableError } from './containment/index.js';
import { startMetricsServer, startTracing } from './observability/index.js';
import { shutDownOnSignals } from './shutdown.js';

async function main(): Promise<void> {
  const config = loadConfig();
  await startTracing(config.tracing);
  const log = createLogger(config.logLevel, undefined, { traceIds: config.tracing.enabled });
  if (!config.redisUrl) {
    throw new ConfigError(
      'npm run worker needs REDIS_URL: without Redis, runs and run-finished signals cannot cross processes (npm start alone runs workers in-process)',
    );
  }
  if (config.runConcurrency === 0) throw new ConfigError('RUN_CONCURRENCY must be at least 1 for a worker');
  const metrics = await startMetricsServer({ config, log });
  const runtime = await createRuntime(config, log);
  metrics?.observeStore(runtime.services.db);
  log.info({ workerId: runtime.workers.workerId, concurrency: config.runConcurrency }, 'switchyard worker started');
  // Graceful shutdown (src/shutdown.ts), without HTTP: stops taking runs, gives back the ones
  // claimed but not started, waits for the ones executing and releases everything.
  shutDownOnSignals({
    log,
    graceMs: config.shutdownGraceMs,
    message: 'worker shutting down: draining',
    drain: async () => {
      await runtime.drain();
      await Promise.all([runtime.close(), metrics?.close()]);
    },
  });
}

main().catch((err: unknown) => {
  const known = err instanceof ConfigError || err instanceof IsolationUnavailableError;
  const message =
    err instanceof ConfigError
      ? `configuration error: ${err.message}`
      : known
        ? err.message
        : err instanceof Error
          ? (err.stack ?? err.message)
          : String(err);
  process.stderr.write(`switchyard worker: ${message}\n`);
  process.exit(known ? 2 : 1);
});
