/** Observability: the OpenTelemetry trace SDK (tracing.ts). */
export { startTracing } from './tracing.js';
export { stopTracing } from './tracing.js';
export type { TracingHandle } from './tracing.js';
