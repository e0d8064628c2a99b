/**
 * Starting and running agent turns, for every surface that talks to an agent: the agent API
 * channel (spec 5), `agent-management_agent_invoke` (spec 11) and the workflow `agent` step.
 * `start` checks everything that can be refused (agent, model, chat ownership) before any chat
 * or turn exists, records the turn, and queues it on its chat (one turn at a time per chat, in
 * arrival order: src/agents/chat-order.ts); `done` settles when the turn has finished and its
 * messages are in the history. A caller that stops waiting (the channel's 60 s) does not stop
 * the turn: it completes into the history.
 */
import type { ModelMessage } from 'ai';
import type { Knex } from 'knex';
import type { Config } from '../config/index.js';
import type { Logger } from '../config/logger.js';
import type { BlobStore } from '../kernel/blobs.js';
import type { GatewayContext, GatewayServices, ToolCallObserver } from '../gateway/index.js';
import type { GatewayCatalog } from '../gateway/index.js';
import { AppError } from '../errors/index.js';
import { recordFile } from '../files/index.js';
import { newId } from '../kernel/ids.js';
import { requireAgent, runnableConfig, type AgentConfig } from './agents.js';
import {
  appendMessages,
  createChat,
  createTurn,
  findTurnByIdempotencyKey,
  releaseExpiredIdempotencyKey,
  finishTurn,
  getChat,
  getTurn,
  linkChatFile,
  loadHistory,
  resetChat,
  TurnIdempotencyRace,
  type TurnRecord,
} from './chats.js';
import { WriteQueue } from '../storage/write-queue.js';
import type { ChatOrder } from './chat-order.js';
import { resolveModel, type ResolvedModel } from './runtime/providers.js';
import { agentTools } from './runtime/tools.js';
import { runTurn, TurnFailure } from './runtime/turn.js';
import { agentTurns } from '../kernel/metrics.js';
import { withToolDurations } from './transcript.js';

export type AgentEvent =
  | { type: 'text-delta'; delta: string }
  | { type: 'tool-call-start'; toolCallId: string; server: string; tool: string }
  | { type: 'tool-call-end'; toolCallId: string; server: string; tool: string; isError: boolean; durationMs: number };

export interface InvokeRequest {
  orgId: string;
  agentId: string;
  message: string;
  chatId?: string | undefined;
  /** A channel call: the chat must be this channel's (else 403 unowned_chat_id), new chats become its. */
  channelId?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
  forwardedHeaders?: Record<string, string> | undefined;
  idempotencyKey?: string | undefined;
  onEvent?: ((e: AgentEvent) => void) | undefined;
  /** Stops the turn early (a workflow run cancelled or past its deadline). */
  signal?: AbortSignal | undefined;
}

export type TurnOutcome =
  | { ok: true; reply: string; output: Record<string, unknown> | null; messages: ModelMessage[] }
  | { ok: false; error: { error: string; message: string }; messages: ModelMessage[] };

export interface Invocation {
  chatId: string;
  turnId: string;
  config: AgentConfig;
  done: Promise<TurnOutcome>;
}

export interface AgentServiceDeps {
  db: Knex;
  config: Config;
  log: Logger;
  /** Files from tool results are kept here. */
  blobs: BlobStore;
  /** Agents' tools resolve through the catalogue; discovery's learning from use is told of their calls. */
  gateway: {
    catalog: Pick<GatewayCatalog, 'resolve'>;
    usage?: ToolCallObserver | undefined;
  };
}

/** One turn to run, as `start` queues it on its chat. */
interface TurnJob {
  req: InvokeRequest;
  chatId: string;
  turnId: string;
  agentConfig: AgentConfig;
  resolved: ResolvedModel;
  /** The chat is made for this turn: it has no history to read. */
  newChat: boolean;
  /** Settles when the chat (if new) and turn rows are committed. */
  recorded: Promise<void>;
}

export class AgentService {
  /** Turns running in this process, so a replay or a second waiter can await the same promise. */
  private readonly running = new Map<string, Promise<TurnOutcome>>();

  private readonly writes: WriteQueue;

  /** What an agent's tool calls reach through the gateway. */
  private readonly tools: GatewayServices;

  constructor(
    private readonly services: AgentServiceDeps,
    private readonly order: ChatOrder,
  ) {
    this.writes = WriteQueue.for(services.db);
    const { db, config, log } = services;
    this.tools = { db, config, log };
  }

  async start(req: InvokeRequest): Promise<Invocation> {
    const { db, config } = this.services;
    const agent = await requireAgent(db, req.orgId, req.agentId);
    const agentConfig = await runnableConfig(db, agent);
    // Refuse before anything is recorded: no model configured means no chat and no turn.
    const resolved = resolveModel(config.models, req.orgId, agentConfig.model);
    if (req.chatId !== undefined) {
      const chat = await getChat(db, req.orgId, req.chatId);
      if (req.channelId !== undefined) {
        // Spec Errors: not owned by this channel → 403 unowned_chat_id; an unknown chat answers the
        // same (no existence oracle).
        if (!chat || chat.channelId !== req.channelId) throw new AppError('ERR_CHANNEL_UNOWNED_CHAT');
      } else if (!chat || chat.agentId !== req.agentId) {
        throw new AppError('ERR_NOT_FOUND', {
          message: `No chat ${req.chatId} with agent ${req.agentId} in this organisation`,
        });
      }
    }
    const chatId = req.chatId ?? newId('chat');
    const turnId = newId('turn');
    // The new chat (if any) and the turn commit together: a refused turn leaves no empty chat.
    const recorded = this.writes.run(async (trx) => {
      // A key older than the 24-hour replay window is free again: release it from its old turn.
      if (req.idempotencyKey && req.channelId)
        await releaseExpiredIdempotencyKey(trx, req.orgId, req.channelId, req.idempotencyKey);
      if (req.chatId === undefined)
        await createChat(trx, { id: chatId, orgId: req.orgId, agentId: req.agentId, channelId: req.channelId ?? null });
      await createTurn(trx, {
        id: turnId,
        orgId: req.orgId,
        chatId,
        agentId: req.agentId,
        channelId: req.channelId,
        idemKey: req.idempotencyKey,
      });
    });
    if (req.idempotencyKey) {
      // A replay must find the turn: the key is claimed before the model runs.
      try {
        await recorded;
      } catch (err) {
        if (req.channelId) {
          const earlier = await findTurnByIdempotencyKey(db, req.orgId, req.channelId, req.idempotencyKey);
          if (earlier) throw new TurnIdempotencyRace(earlier.turnId);
        }
        throw err;
      }
    } else {
      // The model starts while the rows commit; the turn's end is written after them (one queue, in order).
      recorded.catch(() => undefined);
    }
    const done = this.order.run(chatId, () =>
      this.execute({ req, chatId, turnId, agentConfig, resolved, newChat: req.chatId === undefined, recorded }),
    );
    this.running.set(turnId, done);
    const forget = () => this.running.delete(turnId);
    done.then(forget, forget);
    return { chatId, turnId, config: agentConfig, done };
  }

  /** chat_reset_conversation: queued behind the chat's running turns, so no turn writes into a cleared history. */
  reset(orgId: string, chatId: string): Promise<boolean> {
    return this.order.run(chatId, () => resetChat(this.services.db, orgId, chatId));
  }

  /**
   * The finished turn, waiting up to `timeoutMs`: the in-process promise when this process
   * runs it, else the store (a replay that reached another process).
   */
  async waitForTurn(orgId: string, turnId: string, timeoutMs: number): Promise<TurnRecord | undefined> {
    const deadline = Date.now() + timeoutMs;
    const local = this.running.get(turnId);
    if (local) await Promise.race([local.catch(() => undefined), new Promise((r) => setTimeout(r, timeoutMs).unref())]);
    for (;;) {
      const turn = await getTurn(this.services.db, orgId, turnId);
      if (!turn || turn.status !== 'RUNNING' || Date.now() >= deadline) return turn;
      await new Promise((r) => setTimeout(r, Math.min(200, Math.max(1, deadline - Date.now()))));
    }
  }

  private async execute(job: TurnJob): Promise<TurnOutcome> {
    const { req, chatId, turnId, agentConfig, newChat, recorded } = job;
    const { model, structuredOutput } = job.resolved;
    const { db, config, log } = this.services;
    const limit = AbortSignal.timeout(config.agentTurnTimeoutMs);
    const signal = req.signal ? AbortSignal.any([limit, req.signal]) : limit;
    const ctx: GatewayContext = {
      services: this.tools,
      log,
      orgId: req.orgId,
      forwardedHeaders: req.forwardedHeaders ?? {},
      signal,
      // Discovery learns per caller (src/servers/sidekick/usage.ts): one conversation is one caller.
      callerId: `chat:${chatId}`,
      ...(req.metadata ? { sourceMetadata: req.metadata } : {}),
    };
    let outcome: TurnOutcome;
    // Seq of this turn's first message: history rows are numbered 1..n without gaps (a reset deletes them all).
    let nextSeq: number | undefined;
    // Each tool call's duration, kept with its result in the history (transcript reads show it).
    const durations = new Map<string, number>();
    try {
      // A chat made for this turn has no history yet: no read needed.
      const history = newChat ? [] : await loadHistory(db, req.orgId, chatId);
      nextSeq = history.length + 1;
      const { tools } = await agentTools(
        ctx,
        agentConfig.servers,
        (c, p) => this.services.gateway.catalog.resolve(c, p),
        {
          onToolStart: (e) => req.onEvent?.({ type: 'tool-call-start', ...e }),
          onToolEnd: (e) => {
            durations.set(e.toolCallId, e.durationMs);
            req.onEvent?.({ type: 'tool-call-end', ...e });
            // A tool the agent used after its capabilities_discover (gateway_invoke reports its target itself).
            this.services.gateway.usage?.toolCalled(ctx, { server: e.server, tool: e.tool, ok: !e.isError });
          },
          onFile: (f) => this.saveFile(req.orgId, chatId, turnId, f),
        },
      );
      const result = await runTurn({
        orgId: req.orgId,
        model,
        config: agentConfig,
        history,
        message: req.message,
        sourceMetadata: req.metadata,
        tools,
        structuredOutput,
        maxSteps: config.agentMaxSteps,
        signal,
        onTextDelta: req.onEvent ? (delta) => req.onEvent?.({ type: 'text-delta', delta }) : undefined,
      });
      outcome = { ok: true, reply: result.reply, output: result.output, messages: result.messages };
    } catch (err) {
      if (!(err instanceof TurnFailure)) log.error({ err, chatId, turnId }, 'agent turn failed unexpectedly');
      const error =
        err instanceof TurnFailure
          ? { error: err.code, message: err.message }
          : { error: 'internal_error', message: `The agent turn failed: ${(err as Error).message}` };
      const messages =
        err instanceof TurnFailure ? err.messages : [{ role: 'user', content: req.message } as ModelMessage];
      outcome = { ok: false, error, messages };
    }
    // The failure codes are TurnFailureCode's few values, or internal_error.
    agentTurns.labels(outcome.ok ? 'completed' : outcome.error.error).inc();
    try {
      await recorded;
      await this.writes.run(async (trx) => {
        await finishTurn(
          trx,
          req.orgId,
          turnId,
          outcome.ok
            ? { status: 'COMPLETE', reply: outcome.reply, output: outcome.output }
            : { status: 'FAILED', error: outcome.error },
        );
        await appendMessages(trx, req.orgId, chatId, {
          turnId,
          messages: withToolDurations(outcome.messages, durations),
          firstSeq: nextSeq,
        });
      });
    } catch (err) {
      // The reply is not kept: the caller must not believe it is in the history.
      log.error({ err, chatId, turnId }, 'agent turn could not be recorded');
      const error = {
        error: 'internal_error',
        message: 'The agent answered but its turn could not be recorded; try again',
      };
      await finishTurn(db, req.orgId, turnId, { status: 'FAILED', error }).catch(() => undefined);
      return { ok: false, error, messages: outcome.messages };
    }
    return outcome;
  }

  /** A file from a tool result: a `files` row (kind chat) linked to the chat; its id, or undefined. */
  private async saveFile(
    orgId: string,
    chatId: string,
    turnId: string,
    f: { fileName: string; mimeType: string; data: Buffer },
  ): Promise<string | undefined> {
    const { blobs, log } = this.services;
    try {
      const id = newId('file');
      const blobKey = `chats/${chatId}/${id}`;
      await blobs.put(blobKey, f.data);
      await this.writes.run(async (trx) => {
        await recordFile(trx, {
          id,
          orgId,
          kind: 'chat',
          filename: f.fileName.slice(0, 255),
          mimeType: f.mimeType.slice(0, 255),
          size: f.data.length,
          blobKey,
        });
        await linkChatFile(trx, { fileId: id, orgId, chatId, turnId });
      });
      return id;
    } catch (err) {
      log.warn({ err: (err as Error).message, chatId }, 'a chat file could not be saved');
      return undefined;
    }
  }
}
