/**
 * The span processor of the service's tracer provider: it hands each finished, sampled span to
 * the trace export thread (export-thread.ts) in its wire form (span-wire.ts), in batches of up to
 * HANDOFF_SPANS or every HANDOFF_MS, whichever comes first. Batching for export, the queue limit,
 * the export timeout and the sending itself are the export thread's, so the serving thread keeps
 * only the spans of the last few milliseconds and none of the work of exporting them.
 */
import { Worker } from 'node:worker_threads';
import { TraceFlags } from '@opentelemetry/api';
import type { InstrumentationScope } from '@opentelemetry/core';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace';
import { entryUrl } from '../kernel/package-files.js';
import {
  toWire,
  type ExportThreadInit,
  type ExportThreadMessage,
  type ExportThreadReply,
  type WireSpan,
} from './span-wire.js';

const HANDOFF_SPANS = 256;
const HANDOFF_MS = 50;

export class ThreadSpanProcessor implements SpanProcessor {
  private pending: WireSpan[] = [];
  /** Each instrumentation scope's index, and the scopes the export thread has not been sent yet. */
  private readonly scopes = new Map<InstrumentationScope, number>();
  private newScopes: InstrumentationScope[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly waiting = new Map<number, { resolve(): void; reject(err: Error): void }>();
  private next = 1;
  private stopped = false;

  private constructor(private readonly worker: Worker) {
    worker.on('message', (reply: ExportThreadReply) => {
      const p = this.waiting.get(reply.n);
      if (!p) return;
      this.waiting.delete(reply.n);
      if (reply.error) p.reject(new Error(reply.error));
      else p.resolve();
      if (!this.waiting.size) worker.unref();
    });
    // A thread that ends unasked (an uncaught error, out of memory) ends the export: said once,
    // on stderr, and later spans are dropped as the tracer goes on recording.
    const died = (why: string) => {
      if (!this.stopped) process.emitWarning(`${why}; spans are no longer exported`, 'TraceExportWarning');
      this.stopped = true;
      for (const [n, p] of this.waiting) {
        this.waiting.delete(n);
        p.reject(new Error(why));
      }
    };
    worker.on('error', (err) => died(`trace export thread failed: ${err.message}`));
    worker.on('exit', (code) => died(`trace export thread exited (${code})`));
  }

  /**
   * Starts the export thread, whose exporter and batch processor read `env`, and resolves once it
   * is ready (its exporter made), or rejects with why it is not.
   */
  static async start(init: ExportThreadInit, env: NodeJS.ProcessEnv): Promise<ThreadSpanProcessor> {
    const worker = new Worker(entryUrl('export-thread', new URL('./export-thread-entry.mjs', import.meta.url)), {
      workerData: init,
      env: { ...env },
    });
    await new Promise<void>((resolve, reject) => {
      const failed = (err: Error) => {
        worker.off('message', ready);
        worker.off('exit', exited);
        reject(new Error(`the trace export thread did not start: ${err.message}`));
      };
      const exited = (code: number) => failed(new Error(`it exited (${code})`));
      const ready = () => {
        worker.off('error', failed);
        worker.off('exit', exited);
        resolve();
      };
      worker.once('message', ready);
      worker.once('error', failed);
      worker.once('exit', exited);
    });
    // The service's own shutdown flushes the spans (TracingHandle.shutdown); an idle thread keeps nothing alive.
    worker.unref();
    return new ThreadSpanProcessor(worker);
  }

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if (this.stopped || (span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    let scope = this.scopes.get(span.instrumentationScope);
    if (scope === undefined) {
      scope = this.scopes.size;
      this.scopes.set(span.instrumentationScope, scope);
      this.newScopes.push(span.instrumentationScope);
    }
    this.pending.push(toWire(span, scope));
    if (this.pending.length >= HANDOFF_SPANS) this.handOff();
    else this.timer ??= setTimeout(() => this.handOff(), HANDOFF_MS).unref();
  }

  /** Sends the pending spans to the export thread. */
  private handOff(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (!this.pending.length || this.stopped) return;
    const spans = JSON.stringify(this.pending);
    const scopes = this.newScopes;
    this.pending = [];
    this.newScopes = [];
    this.worker.postMessage({ kind: 'spans', scopes, spans } satisfies ExportThreadMessage);
  }

  /** Hands off the pending spans and asks the export thread to flush or to shut down; resolves when it has. */
  private ask(kind: 'flush' | 'shutdown'): Promise<void> {
    this.handOff();
    if (this.stopped) return Promise.resolve();
    const n = this.next++;
    return new Promise<void>((resolve, reject) => {
      this.waiting.set(n, { resolve, reject });
      // Kept alive until it answers: the process may have nothing else left to wait for.
      this.worker.ref();
      this.worker.postMessage({ kind, n } satisfies ExportThreadMessage);
    });
  }

  forceFlush(): Promise<void> {
    return this.ask('flush');
  }

  async shutdown(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.ask('shutdown');
    } finally {
      // Asked to end: its exit is no surprise.
      this.stopped = true;
      await this.worker.terminate();
    }
  }
}
