/**
 * Metrics and traces of an embedded Switchyard (src/embed.ts, README "Embedding"): its
 * Prometheus registry is handed to the host and, with METRICS_PORT, served on a listener of its
 * own that closes with it; a host that registered its own OpenTelemetry SDK gets the service's
 * spans in it (continuing an inbound traceparent), unless OTEL_SDK_DISABLED=true.
 */
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import * as sdk from '@opentelemetry/sdk-trace';
import { createSwitchyard, type Switchyard } from '../../../src/embed.js';
import { createLogger } from '../../../src/config/logger.js';
import { tracingOn } from '../../../src/kernel/tracing.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

interface Mounted {
  switchyard: Switchyard;
  server: Server;
  base: string;
  dataDir: string;
  close(): Promise<void>;
}

/**
 * A plain node:http host that hands /switchyard/* to the embedded service, as express would;
 * with `hostSpans`, inside a server span of the host's own, active.
 */
async function mount(env: Record<string, string> = {}, hostSpans = false): Promise<Mounted> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-embed-obs-'));
  const server = http.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/switchyard`;
  const switchyard = await createSwitchyard({
    env: { DATA_DIR: dataDir, PUBLIC_URL: base, DATABASE_URL: '', REDIS_URL: '', RUN_CONCURRENCY: '0', ...env },
    log: createLogger('silent'),
  });
  server.on('request', (req, res) => {
    if (!req.url?.startsWith('/switchyard/')) return void res.writeHead(404).end();
    Object.assign(req, { originalUrl: req.url, url: req.url.slice('/switchyard'.length) });
    if (!hostSpans) return switchyard.handler(req, res);
    // A host traced like HTTP instrumentation does it: its own server span, active for the handler.
    trace.getTracer('host').startActiveSpan('host request', (span) => {
      res.on('finish', () => span.end());
      switchyard.handler(req, res);
    });
  });
  return {
    switchyard,
    server,
    base,
    dataDir,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await switchyard.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** An async call of the demo workflow's API trigger through the mount. */
async function callTrigger(m: Mounted, headers: Record<string, string> = {}): Promise<Response> {
  const { apiKey, demo } = m.switchyard.bootstrap!;
  return fetch(`${m.base}/ext/triggers/${demo.apiTriggerId}`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ name: 'embedded' }),
  });
}

async function freePort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('embedding: metrics and traces of an embedded Switchyard (sqlite)', function () {
  this.timeout(60_000);

  it("hands the host its metrics registry, the store's gauges included", async () => {
    const m = await mount();
    try {
      const before = await m.switchyard.metrics.getSingleMetricAsString('switchyard_http_requests_total');
      const count = (text: string) =>
        Number(/switchyard_http_requests_total\{[^}]*operation="callApiTrigger"[^}]*\} (\d+)/.exec(text)?.[1] ?? 0);
      expect((await callTrigger(m)).status).to.equal(200);
      const text = await m.switchyard.metrics.metrics();
      expect(count(text) - count(before)).to.equal(1);
      expect(m.switchyard.metrics.contentType).to.match(/^text\/plain/);
      // RUN_CONCURRENCY=0: the run waits, and the pending gauge, read from the store at scrape, says so.
      expect(text).to.match(/^switchyard_runs_pending \d+$/m);
      expect(Number(/^switchyard_runs_pending (\d+)$/m.exec(text)![1])).to.be.at.least(1);
    } finally {
      await m.close();
    }
  });

  it('METRICS_PORT serves the metrics on a listener of its own, which closes with the service', async () => {
    const port = await freePort();
    const m = await mount({ METRICS_PORT: String(port) });
    const url = `http://127.0.0.1:${port}/metrics`;
    try {
      expect((await callTrigger(m)).status).to.equal(200);
      const res = await fetch(url);
      expect(res.status).to.equal(200);
      const text = await res.text();
      expect(text).to.match(/switchyard_http_requests_total\{[^}]*operation="callApiTrigger"/);
      expect(text).to.include('process_cpu_user_seconds_total');
    } finally {
      await m.close();
    }
    const refused = await fetch(url).then(
      () => 'answered',
      () => 'refused',
    );
    expect(refused).to.equal('refused');
  });

  describe("with the host's own OpenTelemetry SDK registered", () => {
    let exporter: sdk.InMemorySpanExporter;
    let provider: sdk.TracerProvider;
    before(() => {
      exporter = new sdk.InMemorySpanExporter();
      provider = new sdk.TracerProvider({ spanProcessors: [new sdk.SimpleSpanProcessor({ exporter })] });
      context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
      propagation.setGlobalPropagator(new W3CTraceContextPropagator());
      trace.setGlobalTracerProvider(provider);
    });
    after(() => {
      trace.disable();
      propagation.disable();
      context.disable();
    });
    beforeEach(() => exporter.reset());

    it("the service's spans go into the host's SDK, continuing the caller's traceparent; closing leaves the host's SDK in place", async () => {
      const m = await mount();
      try {
        expect(tracingOn()).to.equal(true);
        const res = await callTrigger(m, { traceparent: `00-${TRACE}-${PARENT}-01` });
        expect(res.status).to.equal(200);
        const deadline = Date.now() + 5_000;
        while (!exporter.getFinishedSpans().some((s) => s.name === 'callApiTrigger') && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 20));
        const span = exporter.getFinishedSpans().find((s) => s.name === 'callApiTrigger');
        expect(span, 'the server span in the host exporter').to.not.equal(undefined);
        expect(span!.spanContext().traceId).to.equal(TRACE);
        expect(span!.parentSpanContext?.spanId).to.equal(PARENT);
        expect(span!.attributes['http.response.status_code']).to.equal(200);
      } finally {
        await m.close();
      }
      expect(tracingOn()).to.equal(false);
      // The host's provider is still the registered one: its own spans still record.
      const own = trace.getTracer('host').startSpan('host work');
      expect(own.isRecording()).to.equal(true);
      own.end();
      expect(exporter.getFinishedSpans().map((s) => s.name)).to.include('host work');
    });

    it("a request the host already traced: the service's span is a child of the host's span", async () => {
      const m = await mount({}, true);
      try {
        expect((await callTrigger(m)).status).to.equal(200);
        const deadline = Date.now() + 5_000;
        const find = (name: string) => exporter.getFinishedSpans().find((s) => s.name === name);
        while (!(find('callApiTrigger') && find('host request')) && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 20));
        const host = find('host request')!;
        const ours = find('callApiTrigger')!;
        expect(ours.spanContext().traceId).to.equal(host.spanContext().traceId);
        expect(ours.parentSpanContext?.spanId).to.equal(host.spanContext().spanId);
      } finally {
        await m.close();
      }
    });

    it('OTEL_SDK_DISABLED=true: no span of the service, in the host SDK or anywhere', async () => {
      const m = await mount({ OTEL_SDK_DISABLED: 'true' });
      try {
        expect(tracingOn()).to.equal(false);
        expect((await callTrigger(m, { traceparent: `00-${TRACE}-${PARENT}-01` })).status).to.equal(200);
        await new Promise((r) => setTimeout(r, 100));
        expect(exporter.getFinishedSpans()).to.deep.equal([]);
      } finally {
        await m.close();
      }
    });
  });
});
