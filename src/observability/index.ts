/** Observability: the Prometheus metrics listener (metrics-server.ts) and the OpenTelemetry trace SDK (tracing.ts). */
export { startMetricsServer, type MetricsServer } from './metrics-server.js';
export { sampleStore } from './store-gauges.js';
export { startEmbeddedTracing, startTracing } from './tracing.js';
export { stopTracing } from './tracing.js';
export type { TracingHandle } from './tracing.js';
