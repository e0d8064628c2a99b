/**
 * Beyond the spec: `Accept: text/event-stream` on an agent channel streams the turn as
 * server-sent events (openapi/triggers.yaml `sendChannelMessage`, "Streaming"):
 *   event: text-delta       data: {"delta": "..."}
 *   event: tool-call-start  data: {"toolCallId", "server", "tool"}
 *   event: tool-call-end    data: {"toolCallId", "server", "tool", "isError", "durationMs"}
 *   event: done             data: {"chatId", "runId", "reply", "output"}
 *   event: error            data: {"error", "message"}
 * The headers (X-Pf-Chat-Id, X-Pf-Run-Id) go out before the first event. A comment line every
 * 15 s keeps proxies from closing a quiet stream; the turn's own time limit bounds it.
 */
import { PassThrough } from 'node:stream';
import type { Logger } from '../config/logger.js';
import type { Reply } from '../http/types.js';
import type { AgentEvent, TurnOutcome } from './service.js';

const HEARTBEAT_MS = 15_000;

/** `text/event-stream` among the accepted types (with a non-zero quality). */
export function wantsEventStream(accept: string | undefined): boolean {
  if (!accept) return false;
  return accept.split(',').some((part) => {
    const [type, ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    if (type !== 'text/event-stream') return false;
    const q = params.find((p) => p.startsWith('q='));
    return !q || Number(q.slice(2)) > 0;
  });
}

/** Buffers a turn's events until the response stream exists, then forwards them. */
export interface EventCollector {
  push: (e: AgentEvent) => void;
  attach(sink: (e: AgentEvent) => void): void;
}

export function eventCollector(): EventCollector {
  let buffered: AgentEvent[] | undefined = [];
  let sink: ((e: AgentEvent) => void) | undefined;
  return {
    push: (e) => (sink ? sink(e) : buffered?.push(e)),
    attach(s) {
      sink = s;
      for (const e of buffered ?? []) s(e);
      buffered = undefined;
    },
  };
}

function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

export interface StreamedTurn {
  chatId: string;
  turnId: string;
  replay: boolean;
  done: Promise<TurnOutcome | 'timeout'>;
  events?: EventCollector | undefined;
  format: (o: { reply: string; output: Record<string, unknown> | null }) => Pick<Reply, 'body' | 'contentType'>;
}

/** A stream only logs a turn that failed outright. */
export interface StreamTurnDeps {
  log: Logger;
}

export function streamTurn(services: StreamTurnDeps, turn: StreamedTurn): Reply {
  const out = new PassThrough();
  let open = true;
  const write = (event: string, data: unknown) => {
    if (open) out.write(frame(event, data));
  };
  out.on('close', () => {
    open = false;
  });
  const heartbeat = setInterval(() => open && out.write(': keep-alive\n\n'), HEARTBEAT_MS);
  heartbeat.unref();
  turn.events?.attach((e) => {
    const { type, ...data } = e;
    write(type, data);
  });
  void turn.done
    .then(
      (outcome) => {
        if (outcome === 'timeout') {
          write('error', {
            error: 'timeout',
            message: 'The agent turn is still running; its reply will be kept in the chat history.',
          });
        } else if (outcome.ok) {
          write('done', { chatId: turn.chatId, runId: turn.turnId, reply: outcome.reply, output: outcome.output });
        } else {
          write('error', outcome.error);
        }
      },
      (err: unknown) => {
        services.log.error({ err, turnId: turn.turnId }, 'agent turn stream failed');
        write('error', { error: 'internal_error', message: 'The agent turn failed' });
      },
    )
    .finally(() => {
      clearInterval(heartbeat);
      out.end();
    });
  const headers: Record<string, string> = {
    'X-Pf-Chat-Id': turn.chatId,
    'X-Pf-Run-Id': turn.turnId,
    'Cache-Control': 'no-cache',
    'X-Accel-Buffering': 'no',
  };
  if (turn.replay) headers['Idempotent-Replay'] = 'true';
  return { status: 200, headers, contentType: 'text/event-stream', stream: out };
}
