/**
 * The cost of tracing (not a test): async trigger intake (the demo workflow's API trigger,
 * RUN_CONCURRENCY=0, 50 connections) of the compiled service as `npm start` runs it
 * (dist/main.js, built first) with tracing off, and on with every span exported
 * (OTEL_TRACES_SAMPLER=always_on, OTLP http/protobuf to a loopback receiver that accepts and
 * discards), alternating in the same run (BENCH_TRACING_ROUNDS rounds, default 3, of BENCH_TRACING_SECONDS, default 6). The target is
 * on/off ≥ 0.9. The receiver counts the server spans it got, to show none was dropped.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildDist, startCompiled, load, report, baselineLoad, processCpu, type LoadResult } from './lib.js';

/** An OTLP/HTTP receiver that discards what it gets, counting the occurrences of `marker` (a span name). */
async function sink(marker: string): Promise<{ url: string; count(): number; close(): Promise<void> }> {
  const needle = Buffer.from(marker);
  let count = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      for (let i = body.indexOf(needle); i >= 0; i = body.indexOf(needle, i + needle.length)) count++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    count: () => count,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

type Measured = LoadResult & { cpuUsPerCall: number; mainUsPerCall: number };

const SECONDS = Number(process.env.BENCH_TRACING_SECONDS ?? 6);

/** Intake load on a fresh service; also the service's CPU per call, all threads (export included) and the main thread. */
async function intake(name: string, env: Record<string, string>): Promise<Measured> {
  const target = await startCompiled({ RUN_CONCURRENCY: '0', ...env });
  const pid = target.child.pid!;
  try {
    const before = processCpu(pid)!;
    const r = await load(name, {
      url: `${target.info.url}/ext/triggers/${target.info.bootstrap.demo.apiTriggerId}`,
      method: 'POST',
      headers: { 'x-api-key': target.info.bootstrap.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench' }),
      durationSeconds: SECONDS,
    });
    // Spans still buffered are exported within OTEL_BSP_SCHEDULE_DELAY: counted before stopping.
    await new Promise((res) => setTimeout(res, 1000));
    const after = processCpu(pid)!;
    const perCall = (ms: number) => Math.round((ms * 1000) / Math.max(1, r.requests));
    return {
      ...r,
      cpuUsPerCall: perCall(after.threads - before.threads),
      mainUsPerCall: perCall(after.main - before.main),
    };
  } finally {
    // SIGTERM: the service closes, flushing the spans it still holds.
    await target.stop();
  }
}

export async function run(): Promise<void> {
  buildDist();
  const base = await baselineLoad();
  const rounds = Number(process.env.BENCH_TRACING_ROUNDS ?? 3);
  const off: Measured[] = [];
  const on: Measured[] = [];
  const exported: { answered: number; spans: number }[] = [];
  for (let i = 0; i < rounds; i++) {
    const traced = async () => {
      const receiver = await sink('callApiTrigger');
      try {
        const r = await intake(`tracing on, round ${i + 1}`, {
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
          OTEL_TRACES_SAMPLER: process.env.BENCH_TRACING_SAMPLER ?? 'always_on',
          // A queue that never drops at this rate; the batch settings can be tried from the environment.
          OTEL_BSP_MAX_QUEUE_SIZE: '200000',
          OTEL_BSP_SCHEDULE_DELAY: process.env.OTEL_BSP_SCHEDULE_DELAY ?? '200',
          OTEL_BSP_MAX_EXPORT_BATCH_SIZE: process.env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE ?? '512',
        });
        on.push(r);
        exported.push({ answered: r.requests, spans: receiver.count() });
      } finally {
        await receiver.close();
      }
    };
    const plain = async () => off.push(await intake(`tracing off, round ${i + 1}`, {}));
    // Alternating which goes first, so a drift of the machine within a round favours neither.
    if (i % 2 === 0) {
      await plain();
      await traced();
    } else {
      await traced();
      await plain();
    }
  }
  report('Async trigger intake, tracing off and on (every span exported)', base, [...off, ...on]);
  const sum = (rs: Measured[], k: 'reqPerSec' | 'cpuUsPerCall' | 'mainUsPerCall') => rs.reduce((a, r) => a + r[k], 0);
  console.log(`\n- on/off intake ratio: ${(sum(on, 'reqPerSec') / sum(off, 'reqPerSec')).toFixed(3)} (target ≥ 0.9)`);
  console.log(
    `- service CPU per call (all threads), off / on: ${off.map((r) => r.cpuUsPerCall).join(', ')} / ${on
      .map((r) => r.cpuUsPerCall)
      .join(', ')} µs; off/on CPU ratio ${(sum(off, 'cpuUsPerCall') / sum(on, 'cpuUsPerCall')).toFixed(3)}`,
  );
  console.log(
    `- main thread CPU per call, off / on: ${off.map((r) => r.mainUsPerCall).join(', ')} / ${on
      .map((r) => r.mainUsPerCall)
      .join(', ')} µs`,
  );
  for (const [i, e] of exported.entries())
    console.log(`- round ${i + 1}: ${e.answered} calls sent, ${e.spans} server spans received by the collector`);
}
