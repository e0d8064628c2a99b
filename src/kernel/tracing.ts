/**
 * Span helpers for the contexts, on `@opentelemetry/api` only. Until an SDK is registered
 * (src/observability/tracing.ts, when an OTLP endpoint is configured) every call goes to the
 * API's no-op tracer, context manager and propagator: spans are non-recording, nothing is
 * exported, and callers skip their attributes by checking `span.isRecording()`.
 *
 * Trace context travels in W3C `traceparent` / `tracestate` headers: read from inbound
 * requests (a malformed value is ignored and the request starts a new trace), written into
 * outbound requests, and kept with a run (its `trace_parent` column) so the run's span joins
 * the trace of the request that created it, in whichever process executes it.
 */
import {
  context,
  INVALID_SPAN_CONTEXT,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type TextMapGetter,
  type TextMapSetter,
} from '@opentelemetry/api';

export { SpanKind, type Attributes, type Context, type Span };

/** Set once an SDK is registered: until then the helpers return at once, building nothing. */
let on = false;
const NOOP_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
/**
 * Taken when tracing is enabled, from the provider registered then: a tracer taken earlier
 * would keep the provider it first reached even after the API's registration was reset and
 * another provider registered (an embedding application's, tests').
 */
let tracer = trace.getTracer('switchyard');

/** Called by the SDK setup (src/observability) once the tracer provider is registered. */
export function enableTracing(): void {
  tracer = trace.getTracer('switchyard');
  on = true;
}

/** Called when the SDK shuts down. */
export function disableTracing(): void {
  on = false;
}

/** Whether an SDK is registered and the active span (if any) records. */
export function tracingOn(): boolean {
  return on;
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The parent context; the active one when absent. */
  parent?: Context;
  links?: Link[];
}

/** Header bags as Node gives them (IncomingHttpHeaders) or as callers build them. */
export type HeaderBag = Record<string, string | string[] | undefined>;

const bagGetter: TextMapGetter<HeaderBag> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => {
    const v = carrier[key] ?? carrier[key.toLowerCase()];
    // A repeated header is two traceparents: ambiguous, so ignored (a new trace).
    return Array.isArray(v) ? (v.length === 1 ? v[0] : undefined) : v;
  },
};

const headersSetter: TextMapSetter<Headers> = { set: (carrier, key, value) => carrier.set(key, value) };

/** A span that is not yet active; the caller ends it (see `withSpan` for the usual case). */
export function startSpan(name: string, opts: SpanOptions = {}): Span {
  if (!on) return NOOP_SPAN;
  return tracer.startSpan(name, { kind: opts.kind, attributes: opts.attributes, links: opts.links }, opts.parent);
}

/**
 * Runs `fn` with `span` as the active span (children and outbound headers follow it). A span of
 * the no-op tracer (tracing off) has no valid context: `fn` runs as it is, at no cost.
 */
export function runInSpan<T>(span: Span, fn: () => T): T {
  if (!trace.isSpanContextValid(span.spanContext())) return fn();
  return context.with(trace.setSpan(context.active(), span), fn);
}

/**
 * Runs `fn` inside a new active span and ends the span when `fn` settles. A throw is recorded on
 * the span (status ERROR) and rethrown.
 */
export async function withSpan<T>(name: string, opts: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  if (!on) return fn(NOOP_SPAN);
  const parent = opts.parent ?? context.active();
  const span = tracer.startSpan(name, { kind: opts.kind, attributes: opts.attributes, links: opts.links }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), fn, undefined, span);
  } catch (err) {
    failSpan(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Records `err` on the span and marks it failed. Only the error's type and message are kept. */
export function failSpan(span: Span, err: unknown): void {
  if (!span.isRecording()) return;
  const e = err instanceof Error ? err : new Error(String(err));
  span.recordException({ name: e.name, message: e.message });
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
}

/** Marks the span failed without an exception (a step that ended FAILED, a 5xx answer). */
export function markSpanError(span: Span, message?: string): void {
  if (span.isRecording()) span.setStatus({ code: SpanStatusCode.ERROR, message });
}

/**
 * The context carried by inbound headers (`traceparent`, `tracestate`), under no active span.
 * Missing or malformed headers give the root context: the request starts a new trace.
 */
export function extractContext(headers: HeaderBag): Context {
  return propagation.extract(ROOT_CONTEXT, headers, bagGetter);
}

/**
 * The parent of a request's server span: the active span when there is one (an application that
 * embeds the service traced the request already, its span continuing the caller's trace), else
 * the context of the inbound headers.
 */
export function requestParent(headers: HeaderBag): Context {
  const active = context.active();
  return trace.getSpan(active) ? active : extractContext(headers);
}

/** Writes `traceparent` (and `tracestate`) of the active span into a plain header object. */
export function injectHeaders(
  headers: Record<string, string>,
  ctx: Context = context.active(),
): Record<string, string> {
  propagation.inject(ctx, headers);
  return headers;
}

/** Writes `traceparent` (and `tracestate`) of the active span into a fetch `Headers`. */
export function injectFetchHeaders(headers: Headers, ctx: Context = context.active()): Headers {
  propagation.inject(ctx, headers, headersSetter);
  return headers;
}

/** The active span's `traceparent`, or undefined when no span records (tracing off). */
export function activeTraceparent(): string | undefined {
  if (!on) return undefined;
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return undefined;
  // Written directly (the W3C format): cheaper than a propagator's inject on the trigger hot path.
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** The context a stored `traceparent` stands for; the root context when it is absent or malformed. */
export function contextFromTraceparent(traceparent: string | null | undefined): Context {
  return traceparent ? extractContext({ traceparent }) : ROOT_CONTEXT;
}

/**
 * A link to the span a stored `traceparent` names, for a span that begins a trace of its own but
 * was caused by that one; none when tracing is off, or the value is absent or malformed.
 */
export function linksTo(traceparent: string | null | undefined): Link[] | undefined {
  if (!on || !traceparent) return undefined;
  const sc = trace.getSpanContext(contextFromTraceparent(traceparent));
  return sc && trace.isSpanContextValid(sc) ? [{ context: sc }] : undefined;
}

/**
 * Runs `fn` under the context a stored `traceparent` stands for (see contextFromTraceparent), so
 * the spans it starts join that trace; with tracing off, or nothing stored, `fn` runs as it is.
 */
export function underTraceparent<T>(traceparent: string | null | undefined, fn: () => T): T {
  if (!on || !traceparent) return fn();
  return context.with(contextFromTraceparent(traceparent), fn);
}

/** `trace_id` and `span_id` of the active span, for log lines; undefined outside a valid span. */
export function activeTraceIds(): { trace_id: string; span_id: string } | undefined {
  if (!on) return undefined;
  const sc = trace.getActiveSpan()?.spanContext();
  if (!sc || !trace.isSpanContextValid(sc)) return undefined;
  return { trace_id: sc.traceId, span_id: sc.spanId };
}

/** Whether the active span records: the AI SDK's own spans are turned on only then. */
export function activeSpanRecording(): boolean {
  return on && (trace.getActiveSpan()?.isRecording() ?? false);
}

/**
 * A fetch whose requests carry the active trace context (`traceparent`), each in a client span
 * named by its method. With tracing off it is `fetchImpl` itself, called as it is.
 */
export function tracedFetch(fetchImpl: typeof fetch): typeof fetch {
  return (input, init) => {
    if (!on || !trace.getActiveSpan()) return fetchImpl(input, init);
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    return withSpan(`HTTP ${method}`, { kind: SpanKind.CLIENT }, async (span) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      if (span.isRecording()) span.setAttributes({ 'http.request.method': method, 'server.address': url.hostname });
      const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
      if (!headers.has('traceparent')) injectFetchHeaders(headers);
      const res = await fetchImpl(input, { ...init, headers });
      if (span.isRecording()) {
        span.setAttribute('http.response.status_code', res.status);
        if (res.status >= 400) markSpanError(span);
      }
      return res;
    });
  };
}
