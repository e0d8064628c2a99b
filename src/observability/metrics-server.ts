/**
 * The Prometheus endpoint (README "Metrics"): `GET /metrics` in the text exposition format on a
 * node:http listener of its own, at METRICS_HOST:METRICS_PORT, never on the product port (the
 * metrics are not an operation of the API and carry no authentication). Started by the entry
 * points only when METRICS_PORT is set, before anything else starts (a port in use fails the
 * start at once); it also turns on Node's default process metrics and, once the store is open,
 * the gauges read from it (store-gauges.ts).
 */
import http, { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Knex } from 'knex';
import { ConfigError, type Config } from '../config/index.js';
import type { Logger } from '../config/logger.js';
import { collectProcessMetrics, registry } from '../kernel/metrics.js';
import { sampleStore } from './store-gauges.js';

export interface MetricsServer {
  /** `http://host:port/metrics`, with the port actually bound. */
  url: string;
  /** Adds the gauges read from the store (pending runs, outbox backlog and lag, batches by state). */
  observeStore(db: Knex): void;
  close(): Promise<void>;
}

export interface MetricsServerDeps {
  config: Pick<Config, 'metricsPort' | 'metricsHost'>;
  log: Logger;
}

function text(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', ...headers });
  res.end(body);
}

async function serve(req: IncomingMessage, res: ServerResponse, log: Logger): Promise<void> {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  if ((q < 0 ? url : url.slice(0, q)) !== '/metrics') return text(res, 404, 'Not found: the metrics are at /metrics\n');
  if (req.method !== 'GET' && req.method !== 'HEAD')
    return text(res, 405, 'Method not allowed: GET or HEAD /metrics\n', { Allow: 'GET, HEAD' });
  try {
    const body = await registry.metrics();
    res.writeHead(200, { 'Content-Type': registry.contentType, 'Content-Length': Buffer.byteLength(body) });
    res.end(req.method === 'HEAD' ? undefined : body);
  } catch (err) {
    log.error({ err }, 'metrics: the scrape failed');
    text(res, 500, 'The metrics could not be collected; see the service log.\n');
  }
}

/**
 * Listens when METRICS_PORT is set (undefined otherwise: nothing is started). A port that cannot
 * be listened on is a ConfigError naming it (the entry points exit 2 with its message).
 */
export async function startMetricsServer(deps: MetricsServerDeps): Promise<MetricsServer | undefined> {
  const { config, log } = deps;
  if (config.metricsPort === null) return undefined;
  const server: Server = http.createServer((req, res) => void serve(req, res, log));
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new ConfigError(
          `METRICS_PORT ${config.metricsPort} on METRICS_HOST ${config.metricsHost} cannot be listened on (${err.code ?? err.message}); choose another port or host`,
        ),
      ),
    );
    server.listen(config.metricsPort!, config.metricsHost, resolve);
  });
  collectProcessMetrics();
  let stopSampling: (() => void) | undefined;
  const { port } = server.address() as AddressInfo;
  const host = config.metricsHost.includes(':') ? `[${config.metricsHost}]` : config.metricsHost;
  const url = `http://${host}:${port}/metrics`;
  log.info({ url }, 'metrics listening');
  return {
    url,
    observeStore(db) {
      stopSampling?.();
      stopSampling = sampleStore(db, log);
    },
    close: () =>
      new Promise<void>((resolve) => {
        stopSampling?.();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
