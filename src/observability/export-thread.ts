/**
 * The trace export thread. Spans are recorded on the thread that serves the request or runs the
 * step; turning them into OTLP (protobuf or JSON), sending them and the garbage that leaves
 * would otherwise share that thread with the requests. Here the SDK's BatchSpanProcessor and
 * OTLP/HTTP exporter do it instead, with the standard variables (OTEL_BSP_*,
 * OTEL_EXPORTER_OTLP_*) the service was started with: spans arrive in their wire form
 * (span-wire.ts), in small batches, from ThreadSpanProcessor (thread-processor.ts).
 *
 * Started through export-thread-entry.mjs from source, as dist/export-thread.js when built.
 */
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { InstrumentationScope } from '@opentelemetry/core';
import type { SpanExporter } from '@opentelemetry/sdk-trace';
import {
  fromWire,
  type WireSpan,
  type ExportThreadInit,
  type ExportThreadMessage,
  type ExportThreadReply,
} from './span-wire.js';

const init = workerData as ExportThreadInit;
const port = parentPort!;

/**
 * How much lower this thread's scheduling priority is than the process's (nice value, capped at
 * 19): exporting yields the processor to the threads serving requests and running steps when they
 * compete for it, and takes its turn when they wait.
 */
const EXPORT_NICE_STEP = 10;

/**
 * Lowers this thread's priority by EXPORT_NICE_STEP, on Linux, where a thread's nice value is its
 * own (setpriority with the thread's id); elsewhere it stays as it is.
 */
function yieldToServing(): void {
  if (process.platform !== 'linux') return;
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, Math.min(19, getPriority(tid) + EXPORT_NICE_STEP));
  } catch {
    // No /proc: the thread keeps the process's priority.
  }
}
yieldToServing();

/** A non-negative integer variable, or undefined (the SDK default) when unset or not a number. */
function intFrom(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  const n = Number(raw);
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

/** The OTLP/HTTP exporter for OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL: http/protobuf (default) or http/json. */
async function exporterFor(env: NodeJS.ProcessEnv): Promise<SpanExporter> {
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || '').trim();
  if (protocol !== 'http/json') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');
    return new OTLPTraceExporter();
  }
  // http/json: the protobuf exporter's own building blocks with the JSON serializer.
  const [{ OTLPExporterBase }, { convertLegacyHttpOptions, createOtlpHttpExportDelegate }, transformer] =
    await Promise.all([
      import('@opentelemetry/otlp-exporter-base'),
      import('@opentelemetry/otlp-exporter-base/node-http'),
      import('@opentelemetry/otlp-transformer'),
    ]);
  const delegate = createOtlpHttpExportDelegate(
    convertLegacyHttpOptions({}, 'TRACES', 'v1/traces', { 'Content-Type': 'application/json' }),
    transformer.JsonTraceSerializer,
    'otlp_http_json_span_exporter',
    transformer.TraceExporterMetricsHelper,
    undefined,
  );
  return new OTLPExporterBase(delegate) as unknown as SpanExporter;
}

const [sdk, core, resources] = await Promise.all([
  import('@opentelemetry/sdk-trace'),
  import('@opentelemetry/core'),
  import('@opentelemetry/resources'),
]);
const resource = resources.resourceFromAttributes(init.resource.attributes, {
  ...(init.resource.schemaUrl ? { schemaUrl: init.resource.schemaUrl } : {}),
});
const processor = new sdk.BatchSpanProcessor({
  exporter: await exporterFor(process.env),
  scheduledDelayMillis: intFrom(process.env, 'OTEL_BSP_SCHEDULE_DELAY'),
  exportTimeoutMillis: intFrom(process.env, 'OTEL_BSP_EXPORT_TIMEOUT'),
  maxQueueSize: intFrom(process.env, 'OTEL_BSP_MAX_QUEUE_SIZE'),
  maxExportBatchSize: intFrom(process.env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
});
/** The instrumentation scopes, by the index the recording thread gave each. */
const scopes: InstrumentationScope[] = [];

async function answer(n: number, work: Promise<void>): Promise<void> {
  const reply: ExportThreadReply = { n };
  try {
    await work;
  } catch (err) {
    reply.error = err instanceof Error ? err.message : String(err);
  }
  port.postMessage(reply);
}

port.on('message', (msg: ExportThreadMessage) => {
  switch (msg.kind) {
    case 'spans':
      scopes.push(...msg.scopes);
      for (const w of JSON.parse(msg.spans) as WireSpan[]) processor.onEnd(fromWire(w, resource, scopes, core));
      return;
    case 'flush':
      void answer(msg.n, processor.forceFlush());
      return;
    case 'shutdown':
      void answer(msg.n, processor.shutdown());
      return;
  }
});
// Ready: spans posted before this were queued on the port and are read now.
port.postMessage({ n: 0 } satisfies ExportThreadReply);
