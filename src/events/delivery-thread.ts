/**
 * The delivery thread (worker_threads): makes the outbox's HTTP calls off the main event loop,
 * so an API process's request handling does not share its thread with them
 * (src/events/outbound.ts threadPoster). Messages are batches in both directions.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { OutboundPolicy, outboundRequest, parseOutboundAllowlist, type ServiceListener } from '../kernel/outbound.js';
import { tickBatcher } from './tick-batch.js';

export interface ThreadInit {
  allowlist: string[];
  origins: string[];
  listener: ServiceListener;
  timeoutMs: number;
  maxResponseBytes: number;
}
export interface ThreadCall {
  n: number;
  /** The organisation whose event this delivers: its connections are kept apart (kernel/org-pools.ts). */
  orgId: string;
  url: string;
  body: string;
  headers: Record<string, string>;
}
export type ThreadReply =
  | { n: number; status: number; headers: Record<string, string | string[] | undefined>; durationMs: number }
  | { n: number; error: string };

const init = workerData as ThreadInit;
const policy = new OutboundPolicy(parseOutboundAllowlist(init.allowlist.join(',')), init.origins, {
  listener: init.listener,
});
const reply = tickBatcher<ThreadReply>((batch) => parentPort!.postMessage(batch));

parentPort!.on('message', (calls: ThreadCall[]) => {
  for (const c of calls) {
    outboundRequest(
      c.url,
      {
        orgId: c.orgId,
        method: 'POST',
        headers: c.headers,
        body: c.body,
        timeoutMs: init.timeoutMs,
        maxResponseBytes: init.maxResponseBytes,
        followRedirects: false,
      },
      policy,
    ).then(
      (res) =>
        reply({
          n: c.n,
          status: res.status,
          headers: { 'x-pf-run-id': res.headers['x-pf-run-id'] },
          durationMs: res.durationMs,
        }),
      (err: unknown) => reply({ n: c.n, error: (err as Error).message || 'delivery failed' }),
    );
  }
});
