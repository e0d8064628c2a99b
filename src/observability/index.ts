/** The observability context: the Prometheus metrics listener (metrics-server.ts). */
export { startMetricsServer, type MetricsServer } from './metrics-server.js';
