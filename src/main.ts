/** Process entry: config, store, app, listen, graceful shutdown on SIGTERM/SIGINT. */
import type { Server } from 'node:http';
import { loadConfig, ConfigError } from './config/index.js';
import { createLogger } from './config/logger.js';
import { createApp } from './app.js';
import { HttpDrain } from './http/drain.js';
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

  // Graceful shutdown (README "Running in production"): on the first SIGTERM or SIGINT /readyz
  // answers 503 and the run workers take no more runs; requests are still served, each answer now
  // with `Connection: close`; once the runs executing here have finished, the listener closes,
  // the requests under way are answered, everything else is released, and the process exits 0.
  // SHUTDOWN_GRACE_MS after the signal, or at a second signal, it exits 1 at once: the runs it
  // still executed are recovered when their leases expire, as after a crash.
  const http = new HttpDrain(server);
  let signalled = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (signalled) {
      log.warn({ signal }, 'second signal while shutting down: exiting now');
      process.exit(1);
    }
    signalled = true;
    log.info({ signal, graceMs: config.shutdownGraceMs }, 'shutting down: draining');
    const force = setTimeout(() => {
      log.error({ graceMs: config.shutdownGraceMs }, 'shutdown grace ran out: exiting now');
      process.exit(1);
    }, config.shutdownGraceMs);
    force.unref();
    http.start();
    void (async () => {
      await app.drain();
      log.info({ inFlight: http.inFlight }, 'shutting down: runs done, closing the listener');
      await http.close();
      await Promise.all([app.close(), metrics?.close()]);
    })().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'error while shutting down');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
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
