/**
 * The span helpers of src/kernel/tracing.ts with an in-memory SDK registered (traceparent in
 * and out, malformed values, failures, event deliveries through the delivery thread), log lines carrying trace_id/span_id, and tracing off:
 * nothing recorded, nothing propagated, and no SDK module imported anywhere but lazily.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import * as sdk from '@opentelemetry/sdk-trace';
import {
  activeTraceparent,
  contextFromTraceparent,
  disableTracing,
  enableTracing,
  extractContext,
  injectFetchHeaders,
  injectHeaders,
  linksTo,
  tracedFetch,
  withSpan,
} from '../../../src/kernel/tracing.js';
import { createLogger } from '../../../src/config/logger.js';
import { threadPoster } from '../../../src/events/outbound.js';
import { startReceiver } from '../../helpers/receiver.js';
import { startTracing } from '../../../src/observability/index.js';
import { samplerFrom } from '../../../src/observability/tracing.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

function register(): sdk.InMemorySpanExporter {
  const exporter = new sdk.InMemorySpanExporter();
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(
    new sdk.TracerProvider({ spanProcessors: [new sdk.SimpleSpanProcessor({ exporter })] }),
  );
  enableTracing();
  return exporter;
}

function unregister(): void {
  disableTracing();
  trace.disable();
  propagation.disable();
  context.disable();
}

describe('kernel/tracing with an SDK registered', () => {
  let exporter: sdk.InMemorySpanExporter;
  before(() => (exporter = register()));
  after(unregister);
  beforeEach(() => exporter.reset());

  it('an inbound traceparent makes the span a child of the caller, and outbound headers carry the span', async () => {
    const carried: Record<string, string> = {};
    const fetched = new Headers();
    await withSpan('op', { parent: extractContext({ traceparent: `00-${TRACE}-${PARENT}-01` }) }, async () => {
      injectHeaders(carried);
      injectFetchHeaders(fetched);
      expect(activeTraceparent()).to.equal(carried.traceparent);
    });
    const [span] = exporter.getFinishedSpans();
    expect(span!.spanContext().traceId).to.equal(TRACE);
    expect(span!.parentSpanContext?.spanId).to.equal(PARENT);
    expect(carried.traceparent).to.equal(`00-${TRACE}-${span!.spanContext().spanId}-01`);
    expect(fetched.get('traceparent')).to.equal(carried.traceparent);
  });

  it('a stored traceparent gives back its context (a run joins the request that created it)', async () => {
    let stored: string | undefined;
    await withSpan('request', {}, async () => {
      stored = activeTraceparent();
    });
    await withSpan('run', { parent: contextFromTraceparent(stored) }, async () => undefined);
    const [request, run] = exporter.getFinishedSpans();
    expect(run!.spanContext().traceId).to.equal(request!.spanContext().traceId);
    expect(run!.parentSpanContext?.spanId).to.equal(request!.spanContext().spanId);
  });

  for (const [what, headers] of [
    ['garbage', { traceparent: 'not-a-traceparent' }],
    ['an all-zero trace id', { traceparent: `00-${'0'.repeat(32)}-${PARENT}-01` }],
    ['version ff', { traceparent: `ff-${TRACE}-${PARENT}-01` }],
    ['a short span id', { traceparent: `00-${TRACE}-00f067-01` }],
    ['two traceparent headers', { traceparent: [`00-${TRACE}-${PARENT}-01`, `00-${TRACE}-${PARENT}-01`] }],
  ] as const) {
    it(`a malformed traceparent (${what}) is ignored: a new root trace`, async () => {
      await withSpan('op', { parent: extractContext(headers as never) }, async () => undefined);
      const [span] = exporter.getFinishedSpans();
      expect(span!.parentSpanContext).to.equal(undefined);
      expect(span!.spanContext().traceId).to.not.equal(TRACE);
    });
  }
  it('a stored traceparent as a link: the span begins its own trace and links to that span; malformed or absent, no link', async () => {
    expect(linksTo('00-zz')).to.equal(undefined);
    expect(linksTo(`00-${'0'.repeat(32)}-${PARENT}-01`)).to.equal(undefined);
    expect(linksTo(null)).to.equal(undefined);
    await withSpan(
      'queue run',
      { parent: contextFromTraceparent(null), links: linksTo(`00-${TRACE}-${PARENT}-01`) },
      async () => undefined,
    );
    const [run] = exporter.getFinishedSpans();
    expect(run!.parentSpanContext).to.equal(undefined);
    expect(run!.spanContext().traceId).to.not.equal(TRACE);
    expect(run!.links.map((l) => [l.context.traceId, l.context.spanId])).to.deep.equal([[TRACE, PARENT]]);
  });

  it('a stored traceparent that is malformed or absent starts a root trace', async () => {
    await withSpan('a', { parent: contextFromTraceparent('00-zz') }, async () => undefined);
    await withSpan('b', { parent: contextFromTraceparent(null) }, async () => undefined);
    expect(exporter.getFinishedSpans().map((s) => s.parentSpanContext)).to.deep.equal([undefined, undefined]);
  });

  it('a throw is recorded (status ERROR, exception event with type and message only) and rethrown', async () => {
    const err = await withSpan('op', {}, async () => {
      throw new TypeError('boom');
    }).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(TypeError);
    const [span] = exporter.getFinishedSpans();
    expect(span!.status.code).to.equal(2);
    expect(span!.events[0]!.attributes).to.deep.include({ 'exception.type': 'TypeError', 'exception.message': 'boom' });
    expect(span!.events[0]!.attributes).to.not.have.property('exception.stacktrace');
  });

  it('tracedFetch sends traceparent in a client span, keeping the caller headers', async () => {
    let seen: Headers | undefined;
    const f = tracedFetch(async (_input, init) => {
      seen = new Headers(init?.headers);
      return new Response('ok', { status: 200 });
    });
    await withSpan('parent', {}, () => f('http://upstream.test/x', { method: 'POST', headers: { a: '1' } }));
    const [client, parent] = exporter.getFinishedSpans();
    expect(client!.name).to.equal('HTTP POST');
    expect(client!.parentSpanContext?.spanId).to.equal(parent!.spanContext().spanId);
    expect(seen!.get('a')).to.equal('1');
    expect(seen!.get('traceparent')).to.equal(`00-${client!.spanContext().traceId}-${client!.spanContext().spanId}-01`);
  });

  it('an event delivery: its span is made in the main thread, the delivery thread sends its traceparent', async () => {
    const receiver = await startReceiver();
    const poster = threadPoster({
      outboundAllowlist: ['127.0.0.0/8'],
      baseUrls: { triggers: 'http://switchyard.invalid' } as never,
      host: '0.0.0.0',
      port: 0,
    });
    try {
      const res = await poster.post({
        orgId: 'org_a',
        url: `${receiver.url}/hook`,
        body: '{}',
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status).to.equal(202);
    } finally {
      await poster.close();
      await receiver.close();
    }
    const [span] = exporter.getFinishedSpans();
    expect(span!.name).to.equal('event delivery');
    expect(span!.attributes['http.response.status_code']).to.equal(202);
    const { traceId, spanId } = span!.spanContext();
    expect(receiver.calls[0]!.headers.traceparent).to.equal(`00-${traceId}-${spanId}-01`);
  });

  it('log lines carry trace_id and span_id inside a span when the logger is made for tracing', async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        cb();
      },
    });
    const traced = createLogger('info', sink, { traceIds: true });
    const plain = createLogger('info', sink);
    let ids: { traceId: string; spanId: string } | undefined;
    await withSpan('op', {}, async (span) => {
      ids = span.spanContext();
      traced.info('inside');
      plain.info('plain');
    });
    traced.info('outside');
    expect(lines[0]).to.include({ msg: 'inside', trace_id: ids!.traceId, span_id: ids!.spanId });
    expect(lines[1]).to.include({ msg: 'plain' }).and.not.have.property('trace_id');
    expect(lines[2]).to.include({ msg: 'outside' }).and.not.have.property('trace_id');
  });

  it('OTEL_TRACES_SAMPLER and its argument choose the sampler (parentbased_always_on by default)', () => {
    expect(samplerFrom(sdk, {}).toString()).to.match(/ParentBased\{root=AlwaysOnSampler/);
    expect(samplerFrom(sdk, { OTEL_TRACES_SAMPLER: 'always_off' }).toString()).to.equal('AlwaysOffSampler');
    expect(
      samplerFrom(sdk, { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }).toString(),
    ).to.match(/root=TraceIdRatioBased\{0\.25\}/);
  });
});

describe('kernel/tracing with tracing off', () => {
  it('records nothing and propagates nothing; startTracing loads nothing when not enabled', async () => {
    expect(await startTracing({ enabled: false, disabled: false, serviceName: 'x' })).to.equal(undefined);
    const headers: Record<string, string> = {};
    await withSpan('op', { parent: extractContext({ traceparent: `00-${TRACE}-${PARENT}-01` }) }, async (span) => {
      expect(span.isRecording()).to.equal(false);
      injectHeaders(headers);
      expect(activeTraceparent()).to.equal(undefined);
    });
    expect(headers).to.deep.equal({});
    expect(linksTo(`00-${TRACE}-${PARENT}-01`)).to.equal(undefined);
  });

  it('the SDK packages are imported only by src/observability/tracing.ts, and only dynamically', () => {
    // A value import, re-export or require of an SDK package (type-only imports are erased).
    const SDK =
      /^(?:import(?!\s+type\b)|export)\b[^;]*?from\s+['"]@opentelemetry\/(?!api['"/])|require\(\s*['"]@opentelemetry\/(?!api['"/])/m;
    const src = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../../src');
    const offenders: string[] = [];
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const file = path.join(dir, e.name);
        if (e.isDirectory()) walk(file);
        else if (/\.(ts|mjs|cjs|js)$/.test(e.name) && SDK.test(readFileSync(file, 'utf8')))
          offenders.push(path.relative(src, file));
      }
    };
    walk(src);
    expect(offenders).to.deep.equal([]);
  });
});
