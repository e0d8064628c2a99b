/** Process entry: config, store, app, listen, graceful shutdown on SIGTERM/SIGINT. */
import type { Server } from 'node:http';
import { loadConfig, ConfigError } from './config/index.js';
import { createLogger } from './config/logger.js';
import { createApp } from './app.js';
import { HttpDrain } from './http/drain.js';
import { shutDownOnSignals } from './shutdown.js';
import { bootstrapIfEmpty } from './bootstrap/index.js';
import { IsolationUnavailableError } from './containment/index.js';
import { startMetricsServer, startTracing } from './observability/index.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`switchyard: configuration error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  await startTracing(config.tracing);
  const log = createLogger(config.logLevel, undefined, { traceIds: config.tracing.enabled });
  const metrics = await startMetricsServer({ config, log });
  let app;
  try {
    app = await createApp(config, log);
  } catch (err) {
    if (err instanceof IsolationUnavailableError) {
      process.stderr.write(`switchyard: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  metrics?.observeStore(app.services.db);
  // Seed before listening: once /readyz answers, bootstrap.json exists.
  const welcome = config.seedDemo ? await bootstrapIfEmpty(app.services) : undefined;
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.http.listen(config.port, config.host, () => resolve(s));
    s.once('error', reject);
  });
  server.keepAliveTimeout = 65_000;
  log.info(
    { port: config.port, store: config.databaseUrl ? 'postgres' : 'sqlite', dataDir: config.dataDir },
    'switchyard listening',
  );
  if (welcome) process.stdout.write(welcome.text);

  // Graceful shutdown (src/shutdown.ts): /readyz answers 503 and the run workers take no more runs;
  // requests are still served, each answer now with `Connection: close`; once the runs executing
  // here have finished, the listener closes, the requests under way are answered and everything
  // else is released.
  const http = new HttpDrain(server);
  shutDownOnSignals({
    log,
    graceMs: config.shutdownGraceMs,
    message: 'shutting down: draining',
    atSignal: () => http.start(),
    drain: async () => {
      await app.drain();
      log.info({ inFlight: http.inFlight }, 'shutting down: runs done, closing the listener');
      await http.close();
      await Promise.all([app.close(), metrics?.close()]);
    },
  });
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`switchyard: configuration error: ${err.message}\n`);
    process.exit(2);
  }
  process.stderr.write(
    `switchyard: failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
