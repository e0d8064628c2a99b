/** Process entry: config, store, app, listen, graceful shutdown on SIGTERM/SIGINT. */
import type { Server } from 'node:http';
import { loadConfig, ConfigError } from './config/index.js';
import { createLogger } from './config/logger.js';
import { createApp } from './app.js';
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

  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    server.close(() => {
      Promise.all([app.close(), metrics?.close()]).then(
        () => process.exit(0),
        (err: unknown) => {
          log.error({ err }, 'error while closing');
          process.exit(1);
        },
      );
    });
    server.closeIdleConnections();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
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
