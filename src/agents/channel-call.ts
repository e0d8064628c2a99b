/**
 * The agent API channel (spec section 5, "Agent API channel", Errors; openapi/triggers.yaml
 * `sendChannelMessage`), served at `/ext/channels/{triggerId}` and, for a channel trigger id,
 * at `/ext/triggers/{triggerId}`.
 *
 * POST only: any other method on a channel URL answers 405 `Allow: POST` in the pipeline,
 * whatever the key (trigger-calls.ts `callApiTriggerWithQuery.servesPath`).
 * Before the body is read: the key (`X-API-Key`; missing or wrong → 401, the same for an
 * unknown id), the enabled flag (403 trigger_disabled) and the media type (415 unless
 * application/json). Then the body (400 malformed or unknown fields), the Idempotency-Key
 * replay, the chat's owner (403 unowned_chat_id, chat id never echoed) and the turn. The reply
 * is in the channel's format; `X-Pf-Chat-Id` and `X-Pf-Run-Id` (the turn id) go on every
 * response that produced or continued a chat. Past 60 s the timeout body answers and the turn
 * completes into the history. `Accept: text/event-stream` streams the turn (channel-sse.ts).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { operationValidators } from '../../generated/validators/operations.js';
import { AppError } from '../errors/index.js';
import { check } from '../http/pipeline.js';
import { header, idempotencyKey } from '../http/support.js';
import type { Knex } from 'knex';
import type { Config } from '../config/index.js';
import type { Logger } from '../config/logger.js';
import type { BeforeBody, Handler, Reply } from '../services.js';
import { forwardedHeaders } from '../gateway/index.js';
import { isChannelId, verifyChannelKey, type ChannelRecord } from './channels.js';
import { findTurnByIdempotencyKey, TurnIdempotencyRace, type TurnRecord } from './chats.js';
import type { AgentService, TurnOutcome } from './service.js';
import { eventCollector, streamTurn, wantsEventStream } from './channel-sse.js';

/** What a channel call reads: the channel and its turns in the store, the wait limit, the agent turns. */
export interface ChannelCallDeps {
  db: Knex;
  config: Pick<Config, 'syncWaitMs'>;
  log: Logger;
  agents: Pick<AgentService, 'start' | 'waitForTurn'>;
}

interface ChannelRequest {
  message: string;
  chatId?: string;
  metadata?: Record<string, unknown>;
}

/** The key and flag checks, before any body byte is read (openapi/triggers.yaml channelApiKey). */
export async function authoriseChannel(
  services: Pick<ChannelCallDeps, 'db'>,
  triggerId: string,
  headers: IncomingHttpHeaders,
  contentType: string | undefined,
): Promise<ChannelRecord> {
  const key = header({ headers }, 'x-api-key');
  if (!key) throw new AppError('ERR_AUTH_MISSING_API_KEY');
  const channel = isChannelId(triggerId) ? await verifyChannelKey(services.db, triggerId, key) : undefined;
  if (!channel) throw new AppError('ERR_AUTH_INVALID_API_KEY');
  if (!channel.enabled) throw new AppError('ERR_TRIGGER_DISABLED', { message: 'This channel is disabled' });
  if (contentType !== 'application/json')
    throw new AppError('ERR_REQUEST_UNSUPPORTED_MEDIA', { message: 'Content-Type must be application/json' });
  return channel;
}

/** Statuses of a turn that failed after its chat existed (openapi/triggers.yaml ChannelAgentFailed). */
function failureStatus(code: string): number {
  return code === 'turn_timeout' ? 504 : 502;
}

/** The turn a channel response answers for; `replay` when it repeats an earlier call's turn. */
interface AnsweredTurn {
  chatId: string;
  turnId: string;
  replay: boolean;
}

function baseHeaders(turn: AnsweredTurn): Record<string, string> {
  const h: Record<string, string> = { 'X-Pf-Chat-Id': turn.chatId, 'X-Pf-Run-Id': turn.turnId };
  if (turn.replay) h['Idempotent-Replay'] = 'true';
  return h;
}

/** The reply in the channel's output format (spec "Agent API channel" table). */
export function formatReply(
  channel: ChannelRecord,
  chatId: string,
  outcome: { reply: string; output: Record<string, unknown> | null },
): Pick<Reply, 'body' | 'contentType'> {
  switch (channel.outputFormat) {
    case 'markdown':
      return { body: outcome.reply, contentType: 'text/markdown' };
    case 'json':
      return { body: outcome.output ?? { chatId, output: outcome.reply }, contentType: 'application/json' };
    default:
      return { body: outcome.reply, contentType: 'text/plain' };
  }
}

function timeoutBody(services: Pick<ChannelCallDeps, 'config'>) {
  const seconds = Math.round(services.config.syncWaitMs / 1000);
  return {
    status: 'timeout',
    message: `The agent did not reply within ${seconds} seconds; the reply will be kept in the chat history.`,
  };
}

function answer(
  services: Pick<ChannelCallDeps, 'config'>,
  turn: AnsweredTurn & { channel: ChannelRecord; outcome: TurnOutcome | 'timeout' },
): Reply {
  const { channel, chatId, outcome } = turn;
  const headers = baseHeaders(turn);
  if (outcome === 'timeout') return { status: 200, headers, body: timeoutBody(services) };
  if (!outcome.ok) return { status: failureStatus(outcome.error.error), headers, body: outcome.error };
  return { status: 200, headers, ...formatReply(channel, chatId, outcome) };
}

function fromRecord(turn: TurnRecord | undefined): TurnOutcome | 'timeout' {
  if (!turn || turn.status === 'RUNNING') return 'timeout';
  if (turn.status === 'COMPLETE') return { ok: true, reply: turn.reply ?? '', output: turn.output, messages: [] };
  return {
    ok: false,
    error: turn.error ?? { error: 'internal_error', message: 'The agent turn failed' },
    messages: [],
  };
}

/** An earlier call's turn answered again, as a stream when `sse`. */
async function replay(
  services: ChannelCallDeps,
  earlier: { channel: ChannelRecord; turn: TurnRecord; sse: boolean },
): Promise<Reply> {
  const { channel, turn, sse } = earlier;
  const done = fromRecord(await services.agents.waitForTurn(channel.orgId, turn.turnId, services.config.syncWaitMs));
  if (sse)
    return streamTurn(services, {
      chatId: turn.chatId,
      turnId: turn.turnId,
      replay: true,
      done: Promise.resolve(done),
      format: (o) => formatReply(channel, turn.chatId, o),
    });
  return answer(services, { channel, chatId: turn.chatId, turnId: turn.turnId, replay: true, outcome: done });
}

async function withinSyncWait(
  services: Pick<ChannelCallDeps, 'config'>,
  done: Promise<TurnOutcome>,
): Promise<TurnOutcome | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), services.config.syncWaitMs);
  });
  try {
    return await Promise.race([done, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export async function serveChannel(
  services: ChannelCallDeps,
  channel: ChannelRecord,
  body: unknown,
  headers: IncomingHttpHeaders,
): Promise<Reply> {
  check(operationValidators.sendChannelMessage?.json, body, 'body');
  const request = body as ChannelRequest;
  const key = idempotencyKey({ headers });
  const sse = wantsEventStream(header({ headers }, 'accept'));
  if (key) {
    const earlier = await findTurnByIdempotencyKey(services.db, channel.orgId, channel.triggerId, key);
    if (earlier) return replay(services, { channel, turn: earlier, sse });
  }
  const events = sse ? eventCollector() : undefined;
  let inv;
  try {
    inv = await services.agents.start({
      orgId: channel.orgId,
      agentId: channel.agentId,
      message: request.message,
      chatId: request.chatId,
      channelId: channel.triggerId,
      metadata: request.metadata,
      forwardedHeaders: forwardedHeaders(headers),
      idempotencyKey: key,
      onEvent: events?.push,
    });
  } catch (err) {
    if (err instanceof TurnIdempotencyRace) {
      const earlier = await findTurnByIdempotencyKey(services.db, channel.orgId, channel.triggerId, key!);
      if (earlier) return replay(services, { channel, turn: earlier, sse });
    }
    throw err;
  }
  if (events)
    return streamTurn(services, {
      chatId: inv.chatId,
      turnId: inv.turnId,
      replay: false,
      done: inv.done,
      events,
      format: (o) => formatReply(channel, inv.chatId, o),
    });
  const outcome = await withinSyncWait(services, inv.done);
  return answer(services, { channel, chatId: inv.chatId, turnId: inv.turnId, replay: false, outcome });
}

/** Handler of `sendChannelMessage` (`POST /ext/channels/{triggerId}`). */
export const sendChannelMessage: Handler<'sendChannelMessage'> & { beforeBody: BeforeBody } = Object.assign(
  (async (req, ctx) =>
    serveChannel(ctx.services, ctx.preBody as ChannelRecord, req.body, req.headers)) as Handler<'sendChannelMessage'>,
  {
    beforeBody: ((req, ctx) =>
      authoriseChannel(ctx.services, req.params.triggerId ?? '', req.headers, req.contentType)) as BeforeBody,
  },
);
