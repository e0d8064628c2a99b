/**
 * Finished spans on their way from the thread that records them to the trace export thread
 * (export-thread.ts), and the messages between the two threads.
 *
 * A batch of spans travels as one JSON string, each span a positional array of what an OTLP
 * exporter reads from it: one string is copied between threads at a fraction of the cost of
 * cloning a tree of objects, and positions keep it short. No resource travels (one per process:
 * the export thread has it from its start), and instrumentation scopes are sent once each and
 * then named by their index. Trace state travels as its header string. JSON has no NaN or
 * Infinity: an attribute with such a number arrives as null, which OTLP sends as an empty value.
 */
import type { Attributes, HrTime, Link, SpanContext, SpanKind, SpanStatus, TraceState } from '@opentelemetry/api';
import type { InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace';

/** A span context: trace id, span id, trace flags, trace state header (or null), isRemote (or null). */
type WireContext = [
  traceId: string,
  spanId: string,
  traceFlags: number,
  traceState: string | null,
  isRemote: boolean | null,
];

type WireLink = [context: WireContext, attributes: Attributes | null, droppedAttributesCount: number | null];

export type WireSpan = [
  name: string,
  kind: SpanKind,
  context: WireContext,
  parent: WireContext | null,
  startTime: HrTime,
  endTime: HrTime,
  statusCode: number,
  statusMessage: string | null,
  attributes: Attributes,
  events: TimedEvent[] | null,
  links: WireLink[] | null,
  droppedAttributes: number,
  droppedEvents: number,
  droppedLinks: number,
  scope: number,
];

/** What the export thread starts with, beside its environment (the exporter's and the batch processor's variables). */
export interface ExportThreadInit {
  /** The resource's attributes (its detectors have settled) and schema URL. */
  resource: { attributes: Attributes; schemaUrl?: string | undefined };
}

/**
 * From the recording thread: spans to export (`spans`, a JSON array of WireSpan, after the
 * instrumentation scopes first used in it), or a flush / shutdown to answer with `{ n }`.
 */
export type ExportThreadMessage =
  | { kind: 'spans'; scopes: InstrumentationScope[]; spans: string }
  | { kind: 'flush'; n: number }
  | { kind: 'shutdown'; n: number };

/** The export thread's answer to a flush or a shutdown; `error` when it failed. */
export interface ExportThreadReply {
  n: number;
  error?: string;
}

function wireContext(ctx: SpanContext): WireContext {
  return [ctx.traceId, ctx.spanId, ctx.traceFlags, ctx.traceState?.serialize() ?? null, ctx.isRemote ?? null];
}

/** The wire form of a finished span; `scope` is the index its instrumentation scope was given. */
export function toWire(span: ReadableSpan, scope: number): WireSpan {
  return [
    span.name,
    span.kind,
    wireContext(span.spanContext()),
    span.parentSpanContext ? wireContext(span.parentSpanContext) : null,
    span.startTime,
    span.endTime,
    span.status.code,
    span.status.message ?? null,
    span.attributes,
    span.events.length ? span.events : null,
    span.links.length
      ? span.links.map((l) => [wireContext(l.context), l.attributes ?? null, l.droppedAttributesCount ?? null])
      : null,
    span.droppedAttributesCount,
    span.droppedEventsCount,
    span.droppedLinksCount,
    scope,
  ];
}

/** What rebuilding a span takes from `@opentelemetry/core`, loaded by the export thread. */
export interface CoreParts {
  TraceState: new (header: string) => TraceState;
  hrTimeDuration(start: HrTime, end: HrTime): HrTime;
}

function spanContextOf(w: WireContext, core: CoreParts): SpanContext {
  const ctx: SpanContext = { traceId: w[0], spanId: w[1], traceFlags: w[2] };
  if (w[3] !== null) ctx.traceState = new core.TraceState(w[3]);
  if (w[4] !== null) ctx.isRemote = w[4];
  return ctx;
}

/** The span an exporter reads, rebuilt from its wire form, with the export thread's resource and scopes. */
export function fromWire(
  w: WireSpan,
  resource: Resource,
  scopes: InstrumentationScope[],
  core: CoreParts,
): ReadableSpan {
  const ctx = spanContextOf(w[2], core);
  const links: Link[] = (w[10] ?? []).map(([context, attributes, dropped]) => ({
    context: spanContextOf(context, core),
    ...(attributes ? { attributes } : {}),
    ...(dropped !== null ? { droppedAttributesCount: dropped } : {}),
  }));
  const status: SpanStatus = w[7] === null ? { code: w[6] } : { code: w[6], message: w[7] };
  return {
    name: w[0],
    kind: w[1],
    spanContext: () => ctx,
    parentSpanContext: w[3] ? spanContextOf(w[3], core) : undefined,
    startTime: w[4],
    endTime: w[5],
    duration: core.hrTimeDuration(w[4], w[5]),
    status,
    attributes: w[8],
    events: w[9] ?? [],
    links,
    ended: true,
    resource,
    instrumentationScope: scopes[w[14]] ?? { name: 'unknown' },
    droppedAttributesCount: w[11],
    droppedEventsCount: w[12],
    droppedLinksCount: w[13],
  };
}
