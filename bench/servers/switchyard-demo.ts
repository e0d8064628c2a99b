/**
 * Switchyard as `npm start` runs it (demo data seeded) on a fresh temporary DATA_DIR; prints
 * its URL, the data folder and the bootstrap secrets on its first stdout line (and `metricsUrl`
 * when METRICS_PORT is set: the Prometheus listener, as `npm start` starts it).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/config/logger.js';
import { createApp } from '../../src/app.js';
import { bootstrapIfEmpty } from '../../src/bootstrap/index.js';
import { startMetricsServer, startTracing } from '../../src/observability/index.js';

const dataDir = process.env.DATA_DIR ?? mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-'));
const config = loadConfig({
  ...process.env,
  DATA_DIR: dataDir,
  PORT: '0',
  SEED_DEMO: 'true',
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
});
await startTracing(config.tracing);
const log = createLogger(config.logLevel, undefined, { traceIds: config.tracing.enabled });
const metrics = await startMetricsServer({ config, log });
const app = await createApp(config, log);
metrics?.observeStore(app.services.db);
await bootstrapIfEmpty(app.services);
const server = app.http.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  const bootstrap = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8')) as Record<string, unknown>;
  process.stdout.write(
    JSON.stringify({ url: `http://127.0.0.1:${port}`, dataDir, bootstrap, metricsUrl: metrics?.url }) + '\n',
  );
});
process.on('SIGTERM', () =>
  server.close(() => Promise.all([app.close(), metrics?.close()]).then(() => process.exit(0))),
);
