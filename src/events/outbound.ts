/**
 * Event calls through the outbound policy (src/kernel/outbound.ts): the SSRF guard checks the
 * address actually connected to, after DNS; URLs on this service's own triggers origin, and
 * the loopback names of its listening address on its port (`127.0.0.1`, `[::1]`, `localhost`;
 * OutboundPolicy's listener), are always allowed, so the demo and a Postman environment on
 * loopback work without OUTBOUND_ALLOWLIST. Calls follow no redirects,
 * time out after 10 s and read at most 1 MiB of the answer (openapi/resources.yaml).
 */
import { isIP } from 'node:net';
import { Worker } from 'node:worker_threads';
import type { Config } from '../config/index.js';
import { OutboundPolicy, outboundRequest, parseOutboundAllowlist } from '../kernel/outbound.js';
import { entryUrl } from '../kernel/package-files.js';
import type { Poster } from './dispatcher.js';
import type { AddressCheck } from './trigger-urls.js';
import type { ThreadCall, ThreadInit, ThreadReply } from './delivery-thread.js';
import { tickBatcher } from './tick-batch.js';
import { injectHeaders, markSpanError, SpanKind, tracingOn, withSpan } from '../kernel/tracing.js';

export const EVENT_CALL_TIMEOUT_MS = 10_000;
export const EVENT_CALL_MAX_RESPONSE_BYTES = 1024 * 1024;

export function eventCalls(config: Pick<Config, 'outboundAllowlist' | 'baseUrls' | 'host' | 'port'>): {
  post: Poster;
  addresses: AddressCheck;
} {
  const policy = new OutboundPolicy(
    parseOutboundAllowlist(config.outboundAllowlist.join(',')),
    [config.baseUrls.triggers],
    { listener: { host: config.host, port: config.port } },
  );
  const post: Poster = traced(async ({ orgId, url, body, headers }) => {
    const res = await outboundRequest(
      url,
      {
        orgId,
        method: 'POST',
        headers,
        body,
        timeoutMs: EVENT_CALL_TIMEOUT_MS,
        maxResponseBytes: EVENT_CALL_MAX_RESPONSE_BYTES,
        followRedirects: false,
      },
      policy,
    );
    return { status: res.status, headers: res.headers, durationMs: res.durationMs };
  });
  const addresses: AddressCheck = {
    refusal(url) {
      const host = url.hostname.replace(/^\[|\]$/g, '');
      const literal = host.toLowerCase() === 'localhost' ? '127.0.0.1' : isIP(host) ? host : undefined;
      if (!literal || policy.allowsOrigin(url)) return undefined;
      try {
        policy.check(literal);
        return undefined;
      } catch (err) {
        return (err as Error).message;
      }
    },
  };
  return { post, addresses };
}

/**
 * The dispatcher's Poster on a delivery thread (src/events/delivery-thread.ts): the same policy,
 * timeout and size cap, with the HTTP work off the main event loop. Calls made in one tick go
 * over as one message. The thread starts on first use; `close()` ends it.
 */
export function threadPoster(config: Pick<Config, 'outboundAllowlist' | 'baseUrls' | 'host' | 'port'>): {
  post: Poster;
  close(): Promise<void>;
} {
  let worker: Worker | undefined;
  let next = 0;
  const waiting = new Map<number, { resolve: (r: Awaited<ReturnType<Poster>>) => void; reject: (e: Error) => void }>();
  const start = (): Worker => {
    const init: ThreadInit = {
      allowlist: config.outboundAllowlist,
      origins: [config.baseUrls.triggers],
      listener: { host: config.host, port: config.port },
      timeoutMs: EVENT_CALL_TIMEOUT_MS,
      maxResponseBytes: EVENT_CALL_MAX_RESPONSE_BYTES,
    };
    const w = new Worker(entryUrl('delivery-thread', new URL('./delivery-thread-entry.mjs', import.meta.url)), {
      workerData: init,
    });
    w.unref();
    w.on('message', (batch: ThreadReply[]) => {
      for (const r of batch) {
        const p = waiting.get(r.n);
        if (!p) continue;
        waiting.delete(r.n);
        if ('error' in r) p.reject(new Error(r.error));
        else p.resolve({ status: r.status, headers: r.headers, durationMs: r.durationMs });
      }
    });
    // A dead thread fails its calls (recorded as failed, like any call that got no answer); the
    // next call starts another.
    const died = (why: string) => {
      if (worker === w) worker = undefined;
      for (const [n, p] of waiting) {
        waiting.delete(n);
        p.reject(new Error(why));
      }
    };
    w.on('error', (err) => died(`delivery thread failed: ${err.message}`));
    w.on('exit', (code) => died(`delivery thread exited (${code})`));
    return w;
  };
  const send = tickBatcher<ThreadCall>((batch) => {
    worker ??= start();
    worker.postMessage(batch);
  });
  // The span is made here, in the main thread; the thread only sends its traceparent header.
  const post: Poster = traced(
    ({ orgId, url, body, headers }) =>
      new Promise((resolve, reject) => {
        const n = next++;
        waiting.set(n, { resolve, reject });
        send({ n, orgId, url, body, headers });
      }),
  );
  return {
    post,
    async close() {
      const w = worker;
      worker = undefined;
      if (w) await w.terminate();
    },
  };
}

/**
 * An event delivery in a client span (`event delivery`), its request carrying the span's
 * traceparent. The span names the receiving host, not the URL (trigger URLs hold keys).
 */
function traced(post: Poster): Poster {
  return (call) => {
    if (!tracingOn()) return post(call);
    return withSpan('event delivery', { kind: SpanKind.CLIENT }, async (span) => {
      if (span.isRecording()) span.setAttribute('server.address', new URL(call.url).hostname);
      const res = await post({ ...call, headers: injectHeaders({ ...call.headers }) });
      if (span.isRecording()) {
        span.setAttribute('http.response.status_code', res.status);
        if (res.status >= 400) markSpanError(span);
      }
      return res;
    });
  };
}
