/**
 * The OpenTelemetry trace SDK, started by the entry points before the app is created when
 * `config.tracing.enabled` (an OTLP endpoint is set). Without it nothing here is loaded: the SDK
 * packages are imported dynamically, and the contexts' spans (src/kernel/tracing.ts) go to the
 * API's no-op tracer.
 *
 * Read from the standard variables: the exporter's endpoint, headers, timeout and compression
 * (OTEL_EXPORTER_OTLP_[TRACES_]* — read by the OTLP exporter itself), the protocol
 * (http/protobuf, or http/json), the sampler (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG), the
 * resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) and the batch span processor
 * (OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_EXPORT_TIMEOUT, OTEL_BSP_MAX_QUEUE_SIZE,
 * OTEL_BSP_MAX_EXPORT_BATCH_SIZE). Propagation is W3C trace context and baggage.
 *
 * Spans are recorded here and exported from a thread of their own (thread-processor.ts,
 * export-thread.ts): the exporter, its batch processor and their variables live there.
 */
import { context, propagation, ProxyTracerProvider, trace, type TracerProvider } from '@opentelemetry/api';
import type * as SdkTraceModule from '@opentelemetry/sdk-trace';
import type { Sampler } from '@opentelemetry/sdk-trace';
import type { TracingConfig } from '../config/index.js';
import { disableTracing, enableTracing } from '../kernel/tracing.js';
import { BlockIdGenerator } from './ids.js';
import { ThreadSpanProcessor } from './thread-processor.js';

export interface TracingHandle {
  /** Exports the spans still buffered and stops the SDK. */
  shutdown(): Promise<void>;
}

type SdkTrace = typeof SdkTraceModule;

let running: TracingHandle | undefined;

/** The sampler OTEL_TRACES_SAMPLER names (default parentbased_always_on); an unknown name falls back to the default. */
export function samplerFrom(sdk: SdkTrace, env: NodeJS.ProcessEnv): Sampler {
  const name = (env.OTEL_TRACES_SAMPLER ?? '').trim().toLowerCase() || 'parentbased_always_on';
  const arg = Number((env.OTEL_TRACES_SAMPLER_ARG ?? '').trim() || '1');
  const ratio = Number.isFinite(arg) && arg >= 0 && arg <= 1 ? arg : 1;
  switch (name) {
    case 'always_on':
      return new sdk.AlwaysOnSampler();
    case 'always_off':
      return new sdk.AlwaysOffSampler();
    case 'traceidratio':
      return new sdk.TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_off':
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(ratio) });
    default:
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() });
  }
}

/**
 * Registers the trace SDK as the global tracer provider, context manager and propagator when
 * tracing is enabled; returns undefined (and loads nothing) otherwise.
 */
export async function startTracing(
  config: TracingConfig,
  env: NodeJS.ProcessEnv = process.env,
): Promise<TracingHandle | undefined> {
  if (!config.enabled || running) return running;
  const [sdk, { AsyncLocalStorageContextManager }, core, resources] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
  ]);
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': config.serviceName }))
    .merge(resources.detectResources({ detectors: [resources.envDetector, resources.processDetector] }));
  await resource.waitForAsyncAttributes?.();
  const processor = await ThreadSpanProcessor.start(
    { resource: { attributes: resource.attributes, schemaUrl: resource.schemaUrl } },
    env,
  );
  const provider = new sdk.TracerProvider({
    resource,
    sampler: samplerFrom(sdk, env),
    idGenerator: new BlockIdGenerator(),
    spanProcessors: [processor],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(
    new core.CompositePropagator({
      propagators: [new core.W3CTraceContextPropagator(), new core.W3CBaggagePropagator()],
    }),
  );
  trace.setGlobalTracerProvider(provider);
  enableTracing();
  running = {
    async shutdown() {
      running = undefined;
      disableTracing();
      // A collector that cannot be reached loses the last spans; it does not fail the shutdown.
      await provider.shutdown().catch(() => undefined);
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
  return running;
}

/**
 * Whether the process already has a tracer provider registered: an application that embeds the
 * service (src/embed.ts) and set up its own OpenTelemetry SDK. Without one, the API's proxy
 * delegates to its no-op provider, the same object a fresh proxy delegates to.
 */
export function hostTracerProvider(): boolean {
  const registered = trace.getTracerProvider() as TracerProvider & { getDelegate?: () => TracerProvider };
  if (typeof registered.getDelegate !== 'function') return true;
  return registered.getDelegate() !== new ProxyTracerProvider().getDelegate();
}

/**
 * Tracing for an embedded service: a host with its own OpenTelemetry SDK registered gets the
 * service's spans in it (its sampler, processors, exporter, context manager and propagator; the
 * OTEL_* variables of the service do not apply); otherwise as startTracing. Nothing at all with
 * OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
 */
export async function startEmbeddedTracing(
  config: TracingConfig,
  env: NodeJS.ProcessEnv = process.env,
): Promise<TracingHandle | undefined> {
  if (config.disabled || running) return running;
  if (!hostTracerProvider()) return startTracing(config, env);
  enableTracing();
  running = {
    async shutdown() {
      running = undefined;
      disableTracing();
    },
  };
  return running;
}

/** Flushes and stops the SDK startTracing registered; nothing when tracing is off. */
export async function stopTracing(): Promise<void> {
  await running?.shutdown();
}
