/**
 * OpenTelemetry traces of the real service (README "Tracing"): a loopback OTLP/HTTP receiver
 * (OTEL_EXPORTER_OTLP_PROTOCOL=http/json, so the test reads plain JSON) gets one trace for a
 * trigger call carrying a traceparent → its run → the steps → the `http` step's client span →
 * a loopback upstream that saw the propagated traceparent. Parent/child links are checked by id.
 * On a sqlite file (one process) and on PostgreSQL + Redis, where an HTTP process that runs
 * nothing (RUN_CONCURRENCY=0) hands the run to a worker process: the trace crosses processes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { call, freePort } from '../../helpers/server.js';
import { isPgAvailable, TEST_PG_URL, dropRedisKeys } from '../../helpers/store.js';
import { bootstrapToken, bundled, ROOT, startServer, waitReady } from '../../helpers/process.js';
import { startReceiver, type Receiver } from '../../helpers/receiver.js';
import { uploadCsvTo } from '../../helpers/queues.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: Record<string, unknown> }[];
  links?: { traceId: string; spanId: string }[];
  pid: number;
}

/** Every span the receiver got, with the pid of the process that sent it (resource `process.pid`). */
function spansOf(otlp: Receiver): OtlpSpan[] {
  const out: OtlpSpan[] = [];
  for (const c of otlp.calls) {
    if (c.path !== '/v1/traces') continue;
    for (const rs of c.body.resourceSpans ?? []) {
      const pidAttr = (rs.resource?.attributes ?? []).find((a: { key: string }) => a.key === 'process.pid');
      const pid = Number(pidAttr?.value?.intValue ?? 0);
      for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) out.push({ ...s, pid });
    }
  }
  return out;
}

/** The spans of one trace once `until` holds (two processes export theirs in either order). */
async function traceOf(otlp: Receiver, traceId: string, until: (spans: OtlpSpan[]) => boolean): Promise<OtlpSpan[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const spans = spansOf(otlp).filter((s) => s.traceId === traceId);
    if (until(spans)) return spans;
    if (Date.now() > deadline) throw new Error(`trace ${traceId} incomplete: ${JSON.stringify(spans)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const attr = (s: OtlpSpan, key: string) => {
  const v = s.attributes?.find((a) => a.key === key)?.value;
  return v ? Object.values(v)[0] : undefined;
};

/** A trigger call's whole trace is there: the call, the run, both steps and the http step's request. */
const complete = (spans: OtlpSpan[]) =>
  ['callApiTrigger', 'run', 'HTTP GET'].every((n) => spans.some((s) => s.name === n)) &&
  spans.filter((s) => s.name === 'step').length === 2;

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

interface Backend {
  name: string;
  env(): Promise<Record<string, string> | undefined>;
  cleanup(): Promise<void>;
}

const pgSchema = `t_tracing_${process.pid}`;
const redisPrefix = `sy-tr-${process.pid}-${Date.now()}`;
const backends: Backend[] = [
  { name: 'sqlite file, one process', env: async () => ({}), cleanup: async () => undefined },
  {
    name: 'PostgreSQL + Redis, the run in a worker process',
    async env() {
      if (!(await isPgAvailable())) {
        if (process.env.CI === 'true') throw new Error(`PostgreSQL is required on CI (${TEST_PG_URL})`);
        return undefined;
      }
      const c = new pg.Client({ connectionString: TEST_PG_URL });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS "${pgSchema}" CASCADE; CREATE SCHEMA "${pgSchema}"`);
      await c.end();
      return {
        DATABASE_URL: `${TEST_PG_URL}?options=${encodeURIComponent(`-c search_path=${pgSchema}`)}`,
        REDIS_URL: 'redis://127.0.0.1:6379',
        REDIS_PREFIX: redisPrefix,
      };
    },
    async cleanup() {
      const c = new pg.Client({ connectionString: TEST_PG_URL });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS "${pgSchema}" CASCADE`);
      await c.end();
      await dropRedisKeys('redis://127.0.0.1:6379', redisPrefix);
    },
  },
];

for (const backend of backends) {
  describe(`process: OpenTelemetry traces (${backend.name})`, function () {
    this.timeout(60_000);
    const children: ChildProcess[] = [];
    let dataDir: string;
    let otlp: Receiver;
    let upstream: Receiver;
    let base: string;
    let apiKey: string;
    let triggerId: string;
    let token: string;
    let datastoreId: string;
    let crossProcess = false;

    before(async function () {
      const storeEnv = await backend.env();
      if (!storeEnv) return this.skip();
      crossProcess = 'REDIS_URL' in storeEnv;
      dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-tracing-'));
      [otlp, upstream] = await Promise.all([startReceiver(), startReceiver()]);
      otlp.status = 200;
      upstream.status = 200;
      const env = {
        ...storeEnv,
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '20',
        OTEL_TRACES_SAMPLER: 'parentbased_always_on',
      };
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      children.push(startServer(dataDir, port, crossProcess ? { ...env, RUN_CONCURRENCY: '0' } : env));
      // The worker starts once the server is ready: the store is migrated by then.
      await waitReady(base);
      let workerOutput = '';
      if (crossProcess) {
        const worker = spawn(process.execPath, [bundled('worker')], {
          cwd: ROOT,
          env: {
            ...process.env,
            ...env,
            DATA_DIR: dataDir,
            LOG_LEVEL: 'info',
            RUN_CONCURRENCY: '1',
            OUTBOUND_ALLOWLIST: '127.0.0.0/8',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        for (const stream of [worker.stdout!, worker.stderr!])
          stream.on('data', (d: Buffer) => (workerOutput += d.toString()));
        children.push(worker);
      }
      // The worker takes the runs: the tests start once it says so (or fail with what it said).
      for (const deadline = Date.now() + 30_000; crossProcess && !workerOutput.includes('switchyard worker started');) {
        const exited = children[1]!.exitCode !== null;
        if (exited || Date.now() > deadline) throw new Error(`the worker did not start:\n${workerOutput}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const boot = await bootstrapToken(base, dataDir);
      const b = boot.b;
      token = boot.token;
      apiKey = b.apiKey;
      datastoreId = b.demo.datastoreId;
      const wf = await call(base, 'POST', '/v1/workflows', {
        token,
        body: {
          name: 'Traced',
          steps: [
            { type: 'code', name: 'Greet', code: 'return "hi";' },
            { type: 'http', name: 'Call', request: { method: 'GET', url: `${upstream.url}/hook` } },
          ],
        },
      });
      expect(wf.status, wf.text).to.equal(201);
      const trg = await call(base, 'POST', '/v1/triggers', {
        token,
        body: { automationId: wf.body.automationId, kind: 'api' },
      });
      expect(trg.status, trg.text).to.equal(201);
      triggerId = trg.body.triggerId;
    });

    after(async () => {
      for (const c of children) c.kill('SIGKILL');
      await Promise.all([otlp?.close(), upstream?.close()]);
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
      await backend.cleanup();
    });

    const trigger = (headers: Record<string, string>) =>
      call(base, 'POST', `/ext/triggers/${triggerId}`, { headers: { 'x-api-key': apiKey, ...headers }, body: {} });

    it('a sync trigger call with a traceparent: one trace from the call to the upstream the http step called', async () => {
      const traceId = hex(16);
      const callerSpan = hex(8);
      const res = await trigger({ traceparent: `00-${traceId}-${callerSpan}-01`, 'x-api-wait': 'true' });
      expect(res.status, res.text).to.equal(200);
      const spans = await traceOf(otlp, traceId, complete);
      const byName = (name: string) => spans.filter((s) => s.name === name);
      const [server] = byName('callApiTrigger');
      const [run] = byName('run');
      const steps = byName('step');
      const [client] = byName('HTTP GET');
      expect(server, 'server span').to.exist;
      expect(server!.parentSpanId).to.equal(callerSpan);
      expect(server!.kind).to.equal(2); // SERVER
      expect(run, 'run span').to.exist;
      expect(run!.parentSpanId).to.equal(server!.spanId);
      expect(attr(run!, 'switchyard.run_id')).to.equal(res.headers.get('x-pf-run-id'));
      expect(attr(run!, 'switchyard.run.status')).to.equal('COMPLETE');
      expect(steps.map((s) => s.parentSpanId)).to.deep.equal([run!.spanId, run!.spanId]);
      expect(steps.map((s) => Number(attr(s, 'switchyard.step.index'))).sort()).to.deep.equal([0, 1]);
      const httpStep = steps.find((s) => Number(attr(s, 'switchyard.step.index')) === 1)!;
      expect(client, 'http step client span').to.exist;
      expect(client!.parentSpanId).to.equal(httpStep.spanId);
      expect(client!.kind).to.equal(3); // CLIENT
      // The upstream saw the client span's context.
      expect(upstream.calls).to.have.length(1);
      const seen = upstream.calls[0]!.headers.traceparent;
      expect(seen).to.equal(`00-${traceId}-${client!.spanId}-01`);
      if (crossProcess) expect(run!.pid, 'run executed by the worker process').to.not.equal(server!.pid);
      // No request data in attributes: the http step's span names the host, not the URL.
      expect(JSON.stringify(spans)).to.not.include('/hook');
    });

    it('an async trigger call: the run, executed later, is a child of the call in the same trace', async () => {
      const traceId = hex(16);
      const res = await trigger({ traceparent: `00-${traceId}-${hex(8)}-01` });
      expect(res.status, res.text).to.equal(200);
      const spans = await traceOf(otlp, traceId, complete);
      const server = spans.find((s) => s.name === 'callApiTrigger')!;
      const run = spans.find((s) => s.name === 'run')!;
      expect(run.parentSpanId).to.equal(server.spanId);
      expect(attr(run, 'switchyard.run_id')).to.equal(res.headers.get('x-pf-run-id'));
    });

    it("item changes with traceparents: each event call, delivered later, is a child of its change's request and carries its own span", async () => {
      const events = await startReceiver();
      events.status = 202;
      try {
        const patched = await call(base, 'PATCH', `/datacollection/${datastoreId}`, {
          token,
          body: { triggerUrls: [{ event: 'onCreate', url: `${events.url}/on-create`, apiKey: 'k-1234' }] },
        });
        expect(patched.status, patched.text).to.equal(200);
        // Three changes at once, each in a trace of its own: their writes may share one group
        // commit, and each delivery must still join its own change's trace.
        const callers = Array.from({ length: 3 }, () => ({ traceId: hex(16), span: hex(8) }));
        const items = await Promise.all(
          callers.map(({ traceId, span }) =>
            call(base, 'POST', `/memory/items?collectionId=${datastoreId}`, {
              token,
              headers: { traceparent: `00-${traceId}-${span}-01` },
              body: { key: `traced-${traceId}`, content: { n: 1 } },
            }),
          ),
        );
        for (const item of items) expect(item.status, item.text).to.be.oneOf([200, 201]);
        const received = await events.waitFor(3);
        for (const { traceId, span } of callers) {
          const spans = await traceOf(otlp, traceId, (all) => all.some((x) => x.name === 'event delivery'));
          const server = spans.find((x) => x.parentSpanId === span)!;
          const delivery = spans.filter((x) => x.name === 'event delivery');
          expect(server, 'the change request span').to.exist;
          expect(server.kind).to.equal(2); // SERVER
          expect(delivery, 'one delivery in this trace').to.have.length(1);
          expect(delivery[0]!.parentSpanId).to.equal(server.spanId);
          expect(delivery[0]!.kind).to.equal(3); // CLIENT
          if (crossProcess) expect(delivery[0]!.pid, 'delivered by the worker process').to.not.equal(server.pid);
          const sent = received.filter((r) => r.headers.traceparent === `00-${traceId}-${delivery[0]!.spanId}-01`);
          expect(sent, 'the receiver saw the delivery span').to.have.length(1);
        }
      } finally {
        const cleared = await call(base, 'PATCH', `/datacollection/${datastoreId}`, {
          token,
          body: { triggerUrls: [] },
        });
        expect(cleared.status, cleared.text).to.equal(200);
        await events.close();
      }
    });

    /** A CSV batch of two rows, in a new queue, created by a request carrying a traceparent of the test's. */
    async function tracedCsvBatch(paused: boolean): Promise<{ traceId: string; callerSpan: string; batchId: string }> {
      const queue = await call(base, 'POST', '/v1/queues', {
        token,
        body: { name: `traced-${hex(4)}`, triggerId, paused },
      });
      expect(queue.status, queue.text).to.equal(201);
      const queueId = queue.body.queueId as string;
      const csvKey = await uploadCsvTo(base, token, queueId, 'name\r\nAda\r\nGrace\r\n');
      const traceId = hex(16);
      const callerSpan = hex(8);
      const batch = await call(base, 'POST', `/api/queues/${queueId}/items/csv`, {
        token,
        headers: { traceparent: `00-${traceId}-${callerSpan}-01` },
        body: { csvKey, triggerId },
      });
      expect(batch.status, batch.text).to.equal(202);
      return { traceId, callerSpan, batchId: batch.body.batchId as string };
    }

    it('a CSV batch created with a traceparent: its load, done later by the loader, is a child of that request', async () => {
      const { traceId, callerSpan, batchId } = await tracedCsvBatch(true);
      const spans = await traceOf(otlp, traceId, (all) => all.some((x) => x.name === 'csv batch load'));
      const server = spans.find((x) => x.parentSpanId === callerSpan)!;
      const load = spans.find((x) => x.name === 'csv batch load')!;
      expect(server, 'the batch request span').to.exist;
      expect(load.parentSpanId).to.equal(server.spanId);
      expect(attr(load, 'switchyard.queue.batch_id')).to.equal(batchId);
    });

    it('runs a queue starts from a traced CSV batch begin traces of their own, each linked to the request that created the batch', async () => {
      const { traceId, callerSpan } = await tracedCsvBatch(false);
      const [server] = (await traceOf(otlp, traceId, (all) => all.some((x) => x.parentSpanId === callerSpan))).filter(
        (x) => x.parentSpanId === callerSpan,
      );
      const deadline = Date.now() + 15_000;
      let runs: OtlpSpan[] = [];
      for (;;) {
        runs = spansOf(otlp).filter((x) => x.name === 'run' && x.links?.some((l) => l.traceId === traceId));
        if (runs.length >= 2) break;
        if (Date.now() > deadline) throw new Error(`queue runs linked to the batch request: ${JSON.stringify(runs)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(runs).to.have.length(2);
      for (const run of runs) {
        expect(run.traceId, 'a trace of its own').to.not.equal(traceId);
        expect(run.parentSpanId ?? '', 'a root span').to.equal('');
        expect(run.links!.map((l) => [l.traceId, l.spanId])).to.deep.equal([[traceId, server!.spanId]]);
      }
      expect(runs[0]!.traceId).to.not.equal(runs[1]!.traceId);
    });

    it('a malformed traceparent is ignored: the call succeeds in a new trace', async () => {
      const bad = `00-${'0'.repeat(32)}-${hex(8)}-01`;
      const res = await trigger({ traceparent: bad, 'x-api-wait': 'true' });
      expect(res.status, res.text).to.equal(200);
      const runId = res.headers.get('x-pf-run-id');
      // The run and the call may be exported by two processes, in either order: wait for both.
      const deadline = Date.now() + 10_000;
      let run: OtlpSpan | undefined;
      let server: OtlpSpan | undefined;
      for (;;) {
        const spans = spansOf(otlp);
        run = spans.find((s) => s.name === 'run' && attr(s, 'switchyard.run_id') === runId);
        server = run && spans.find((s) => s.spanId === run!.parentSpanId);
        if (server) break;
        if (Date.now() > deadline) throw new Error(`no run span with its parent: ${JSON.stringify(run)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(run!.traceId).to.match(/^[0-9a-f]{32}$/);
      expect(run!.traceId).to.not.equal('0'.repeat(32));
      expect(server.name).to.equal('callApiTrigger');
      expect(server.parentSpanId ?? '').to.equal('');
    });
  });
}
