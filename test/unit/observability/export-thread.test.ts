/**
 * ThreadSpanProcessor and the trace export thread (src/observability/thread-processor.ts,
 * export-thread.ts, span-wire.ts): spans recorded here reach a loopback OTLP/HTTP receiver
 * (http/json, read back) through the thread's own batch processor and exporter with every field
 * an exporter sends; unsampled spans are not sent; flush and shutdown wait for the export; an
 * unreachable collector loses the spans but neither hangs nor crashes anything.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { ROOT_CONTEXT, SamplingDecision, SpanKind, SpanStatusCode, trace, type Sampler } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import * as resources from '@opentelemetry/resources';
import * as sdk from '@opentelemetry/sdk-trace';
import { ThreadSpanProcessor } from '../../../src/observability/thread-processor.js';
import { startReceiver, type Receiver } from '../../helpers/receiver.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const LINKED_TRACE = '0af7651916cd43dd8448eb211c80319c';
const LINKED_SPAN = 'b7ad6b7169203331';

const env = (receiver: Receiver, extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  // Nothing leaves before a flush unless a test asks for it.
  OTEL_BSP_SCHEDULE_DELAY: '60000',
  ...extra,
});

async function providerWith(e: NodeJS.ProcessEnv, sampler?: Sampler) {
  const processor = await ThreadSpanProcessor.start(
    { resource: { attributes: { 'service.name': 'thread-test', 'deployment.environment': 'test' } } },
    e,
  );
  const provider = new sdk.TracerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': 'thread-test' }),
    spanProcessors: [processor],
    ...(sampler ? { sampler } : {}),
  });
  return { processor, provider };
}

/** The spans of every export request the receiver got, with their scope and resource. */
function received(receiver: Receiver) {
  const out: { span: any; scope: any; resource: any }[] = [];
  for (const call of receiver.calls)
    for (const rs of call.body.resourceSpans ?? [])
      for (const ss of rs.scopeSpans ?? [])
        for (const span of ss.spans ?? []) out.push({ span, scope: ss.scope, resource: rs.resource });
  return out;
}

const attr = (list: any[], key: string) => list.find((a) => a.key === key)?.value;

/** This process's threads and the nice value of each (proc(5): stat field 19, after the name). */
function threadNice(): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      out.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
    } catch {
      // the thread ended while being read
    }
  }
  return out;
}

describe('trace export thread (ThreadSpanProcessor)', function () {
  this.timeout(20_000);
  let receiver: Receiver;
  beforeEach(async () => (receiver = await startReceiver()));
  afterEach(() => receiver.close());

  it('every field of a span reaches the collector: ids, parent, kind, times, status, attributes, events, links, scope, resource', async () => {
    const { processor, provider } = await providerWith(env(receiver));
    try {
      const parent = trace.setSpanContext(ROOT_CONTEXT, {
        traceId: TRACE,
        spanId: PARENT,
        traceFlags: 1,
        isRemote: true,
        traceState: new TraceState('vendor=abc'),
      });
      const span = provider.getTracer('switchyard').startSpan(
        'callApiTrigger',
        {
          kind: SpanKind.SERVER,
          attributes: { 'http.route': '/ext/triggers/{id}', 'retry.count': 2, ok: true, tags: ['a', 'b'] },
          links: [
            { context: { traceId: LINKED_TRACE, spanId: LINKED_SPAN, traceFlags: 1 }, attributes: { why: 'batch' } },
          ],
        },
        parent,
      );
      span.addEvent('step started', { step: 'fetch' });
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'upstream said 502' });
      span.end();
      provider.getTracer('ai', '5.0.0').startSpan('ai.generateText', {}, ROOT_CONTEXT).end();
      await processor.forceFlush();

      const spans = received(receiver);
      expect(spans).to.have.length(2);
      const server = spans.find((s) => s.span.name === 'callApiTrigger')!;
      const sc = span.spanContext();
      expect(server.span.traceId).to.equal(TRACE);
      expect(server.span.spanId).to.equal(sc.spanId);
      expect(server.span.parentSpanId).to.equal(PARENT);
      expect(server.span.traceState).to.equal('vendor=abc');
      expect(server.span.kind).to.equal(2); // OTLP SPAN_KIND_SERVER
      // Flags: sampled, and the parent was remote (HAS_IS_REMOTE | IS_REMOTE).
      expect(server.span.flags).to.equal(0x1 | 0x100 | 0x200);
      const start = BigInt(server.span.startTimeUnixNano);
      const end = BigInt(server.span.endTimeUnixNano);
      expect(end >= start).to.equal(true);
      expect(Number(start / 1_000_000n)).to.be.closeTo(Date.now(), 10_000);
      expect(server.span.status).to.deep.equal({ code: SpanStatusCode.ERROR, message: 'upstream said 502' });
      expect(attr(server.span.attributes, 'http.route')).to.deep.equal({ stringValue: '/ext/triggers/{id}' });
      expect(attr(server.span.attributes, 'retry.count')).to.deep.equal({ intValue: 2 });
      expect(attr(server.span.attributes, 'ok')).to.deep.equal({ boolValue: true });
      expect(attr(server.span.attributes, 'tags')).to.deep.equal({
        arrayValue: { values: [{ stringValue: 'a' }, { stringValue: 'b' }] },
      });
      expect(server.span.events).to.have.length(1);
      expect(server.span.events[0].name).to.equal('step started');
      expect(attr(server.span.events[0].attributes, 'step')).to.deep.equal({ stringValue: 'fetch' });
      expect(server.span.links).to.have.length(1);
      expect(server.span.links[0].traceId).to.equal(LINKED_TRACE);
      expect(server.span.links[0].spanId).to.equal(LINKED_SPAN);
      expect(attr(server.span.links[0].attributes, 'why')).to.deep.equal({ stringValue: 'batch' });
      expect(server.scope.name).to.equal('switchyard');
      expect(attr(server.resource.attributes, 'service.name')).to.deep.equal({ stringValue: 'thread-test' });
      expect(attr(server.resource.attributes, 'deployment.environment')).to.deep.equal({ stringValue: 'test' });

      const ai = spans.find((s) => s.span.name === 'ai.generateText')!;
      expect(ai.scope).to.include({ name: 'ai', version: '5.0.0' });
      expect(ai.span.parentSpanId ?? '').to.equal('');
      expect(ai.span.kind).to.equal(1); // INTERNAL
    } finally {
      await processor.shutdown();
    }
  });

  it('a span recorded but not sampled is not exported', async () => {
    const recordOnly: Sampler = {
      shouldSample: () => ({ decision: SamplingDecision.RECORD }),
      toString: () => 'record',
    };
    const { processor, provider } = await providerWith(env(receiver), recordOnly);
    try {
      const span = provider.getTracer('switchyard').startSpan('kept locally', {}, ROOT_CONTEXT);
      expect(span.isRecording()).to.equal(true);
      span.end();
      await processor.forceFlush();
      expect(received(receiver)).to.deep.equal([]);
    } finally {
      await processor.shutdown();
    }
  });

  it('shutdown exports what is still pending, in batches of OTEL_BSP_MAX_EXPORT_BATCH_SIZE, then ends the thread', async () => {
    const { processor, provider } = await providerWith(env(receiver, { OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '100' }));
    const tracer = provider.getTracer('switchyard');
    for (let i = 0; i < 1000; i++) tracer.startSpan(`op ${i}`, {}, ROOT_CONTEXT).end();
    await processor.shutdown();
    const names = received(receiver).map((s) => s.span.name);
    expect(names).to.have.length(1000);
    expect(new Set(names).size).to.equal(1000);
    expect(receiver.calls.length).to.be.at.least(10);
    for (const call of receiver.calls) expect(call.body.resourceSpans[0].scopeSpans[0].spans.length).to.be.at.most(100);
    // Ended: a span after shutdown goes nowhere, and a second shutdown is harmless.
    tracer.startSpan('late', {}, ROOT_CONTEXT).end();
    await processor.shutdown();
    await processor.forceFlush();
    expect(received(receiver)).to.have.length(1000);
  });

  it('spans leave on the schedule (OTEL_BSP_SCHEDULE_DELAY) without a flush', async () => {
    const { processor, provider } = await providerWith(env(receiver, { OTEL_BSP_SCHEDULE_DELAY: '50' }));
    try {
      provider.getTracer('switchyard').startSpan('scheduled', {}, ROOT_CONTEXT).end();
      await receiver.waitFor(1, 5_000);
      expect(received(receiver).map((s) => s.span.name)).to.deep.equal(['scheduled']);
    } finally {
      await processor.shutdown();
    }
  });

  it('an unreachable collector: flush and shutdown still end, and the recording side goes on', async () => {
    const closed = await startReceiver();
    const url = closed.url;
    await closed.close();
    const { processor, provider } = await providerWith({
      OTEL_EXPORTER_OTLP_ENDPOINT: url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_TIMEOUT: '2000',
      OTEL_BSP_EXPORT_TIMEOUT: '3000',
    });
    const tracer = provider.getTracer('switchyard');
    tracer.startSpan('lost', {}, ROOT_CONTEXT).end();
    const started = Date.now();
    // The batch processor reports the failed export (a rejected flush, as without the thread).
    const flushed = await processor.forceFlush().then(
      () => 'flushed',
      (err: Error) => err.message,
    );
    expect(flushed).to.be.a('string');
    tracer.startSpan('lost too', {}, ROOT_CONTEXT).end();
    await processor.shutdown().catch(() => undefined);
    expect(Date.now() - started).to.be.below(10_000);
    // The thread is gone: nothing more is sent, nothing throws.
    tracer.startSpan('after', {}, ROOT_CONTEXT).end();
    await processor.forceFlush();
  });

  it('a thread that ends unasked is reported once on stderr (a warning), and recording goes on', async () => {
    const { processor, provider } = await providerWith(env(receiver));
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      // As if it had crashed: the thread is gone without a shutdown.
      await (processor as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
      await new Promise((r) => setTimeout(r, 50));
      const tracer = provider.getTracer('switchyard');
      for (let i = 0; i < 300; i++) tracer.startSpan(`after ${i}`, {}, ROOT_CONTEXT).end();
      await processor.forceFlush();
      await processor.shutdown();
      const ours = warnings.filter((w) => w.name === 'TraceExportWarning');
      expect(ours).to.have.length(1);
      expect(ours[0]!.message).to.match(/^trace export thread exited \(\d+\); spans are no longer exported$/);
      expect(received(receiver)).to.deep.equal([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('the export thread runs at a lower scheduling priority than the process (Linux: nice + 10, at most 19)', async function () {
    if (process.platform !== 'linux') this.skip();
    const before = threadNice();
    const own = before.get(process.pid)!;
    const { processor } = await providerWith(env(receiver));
    try {
      const added = [...threadNice()].filter(([tid]) => !before.has(tid));
      expect(added.map(([, nice]) => nice)).to.include(Math.min(19, own + 10));
      expect(threadNice().get(process.pid)).to.equal(own);
    } finally {
      await processor.shutdown();
    }
  });
});
