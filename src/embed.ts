/**
 * Switchyard inside an existing Node HTTP application (README "Embedding"): the same services
 * and the same pipeline as `npm start`, handed over as a request handler to mount under a
 * prefix, for example in express 5:
 *
 *   const switchyard = await createSwitchyard({ env: { PUBLIC_URL: 'https://example.com/switchyard' } });
 *   app.use('/switchyard', switchyard.handler);   // before express.json() and other body parsers
 *
 * The host framework rewrites `req.url` relative to the mount point, which is what the pipeline
 * routes on. Every path under the prefix is answered here (404 in the REST error shape for
 * unknown ones), so `next` is never called. Absolute URLs in answers (signed run-file URLs,
 * `designatedOutput.url`, trigger URLs, token issuer, bootstrap.json) come from PUBLIC_URL and
 * the *_URL settings, so PUBLIC_URL must include the mount prefix; a mismatch is logged once.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { loadConfig, type Config } from './config/index.js';
import { createLogger, type Logger } from './config/logger.js';
import { createApp } from './app.js';
import { bootstrapIfEmpty, type BootstrapFile } from './bootstrap/index.js';
import type { ResponseValidator } from './http/response-validator.js';
import { mountPrefix } from './http/pipeline.js';
import type { Services } from './services.js';
import { registry } from './kernel/metrics.js';
import { tracingOn } from './kernel/tracing.js';
import {
  sampleStore,
  startEmbeddedTracing,
  startMetricsServer,
  stopTracing,
  type MetricsServer,
} from './observability/index.js';

export interface SwitchyardOptions {
  /** Settings merged over `process.env`: the same variables as the standalone server (README "Configuration"). */
  env?: Record<string, string | undefined>;
  /** A pino logger to log into; by default one at LOG_LEVEL on stdout, like `npm start`. */
  log?: Logger;
  /**
   * For a host's contract tests: every answer is checked against the OpenAPI document, one that
   * breaks it is recorded in `responseValidator.failures` and answered with 500. Off by default.
   */
  validateResponses?: boolean;
}

/** A request handler in the node:http shape; express and other frameworks accept it as middleware. */
export type SwitchyardHandler = (req: IncomingMessage, res: ServerResponse, next?: unknown) => void;

export interface Switchyard {
  handler: SwitchyardHandler;
  services: Services;
  config: Config;
  /** Set on the first start over an empty store when SEED_DEMO is on (also written to DATA_DIR/bootstrap.json). */
  bootstrap: BootstrapFile | undefined;
  /** Set with `validateResponses` (tests): records answers that break the OpenAPI document. */
  responseValidator: ResponseValidator | undefined;
  /**
   * The service's Prometheus metrics (a prom-client Registry, README "Metrics"): serve
   * `await metrics.metrics()` as `metrics.contentType` from a route of the host, or merge it with
   * the host's own registry. Node's process metrics are in it only when METRICS_PORT is set (the
   * host usually has its own); METRICS_PORT also serves it on a listener of its own, as `npm start`.
   */
  metrics: Registry;
  /** Stops the run workers and closes the store, Redis, the gateway and the metrics listener; the host closes its own server. */
  close(): Promise<void>;
}

export async function createSwitchyard(options: SwitchyardOptions = {}): Promise<Switchyard> {
  const env = { ...process.env, ...options.env };
  const config = loadConfig(env);
  // Traces go into the host's OpenTelemetry SDK when it has one, else as `npm start` sends them.
  await startEmbeddedTracing(config.tracing, env);
  const log = options.log ?? createLogger(config.logLevel, undefined, { traceIds: tracingOn() });
  let metricsServer: MetricsServer | undefined;
  let app: Awaited<ReturnType<typeof createApp>>;
  try {
    metricsServer = await startMetricsServer({ config, log });
    app = await createApp(config, log, { validateResponses: options.validateResponses === true });
  } catch (err) {
    await metricsServer?.close();
    await stopTracing();
    throw err;
  }
  // The store's gauges, read when the registry is scraped (on METRICS_PORT or by the host).
  let stopGauges: (() => void) | undefined;
  if (metricsServer) metricsServer.observeStore(app.services.db);
  else stopGauges = sampleStore(app.services.db, log);
  const seeded = config.seedDemo ? await bootstrapIfEmpty(app.services) : undefined;
  let bootstrap: BootstrapFile | undefined;
  if (seeded) {
    const { text: _welcome, ...file } = seeded;
    bootstrap = file;
  }
  const publicPath = new URL(config.publicUrl).pathname.replace(/\/+$/, '');
  const seen = new Set<string>();
  const handler: SwitchyardHandler = (req, res) => {
    const prefix = mountPrefix(req);
    // Once per mount path: a host has few mounts, and the check is a string comparison.
    if (prefix !== undefined && !seen.has(prefix)) {
      seen.add(prefix);
      if (!publicPath.endsWith(prefix)) {
        log.warn(
          { mountPath: prefix || '/', publicUrl: config.publicUrl },
          'PUBLIC_URL does not end with the mount path: URLs in answers (signed files, designatedOutput, trigger URLs) will not reach this mount',
        );
      }
    }
    app.http(req, res);
  };
  return {
    handler,
    services: app.services,
    config,
    bootstrap,
    responseValidator: app.responseValidator,
    metrics: registry,
    async close() {
      stopGauges?.();
      await Promise.all([app.close(), metricsServer?.close()]);
    },
  };
}
