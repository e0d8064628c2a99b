/**
 * Chats, their history and their turns (spec section 11: "with the same chatId the history is
 * kept"; "Agent API channel"). History rows are the messages exactly as the model saw them
 * (AI SDK ModelMessage JSON: user, assistant with tool calls, tool results), so a chat resumes
 * after a restart with nothing lost. Every query is scoped to the organisation.
 */
import type { Knex } from 'knex';
import type { ModelMessage } from 'ai';
import { fromJson, toJson } from '../storage/db.js';
import { newId, nowIso } from '../kernel/ids.js';
import { decodeCursor, encodeCursor } from '../kernel/page.js';
import { fileSummaries } from '../files/index.js';

export interface ChatRecord {
  chatId: string;
  agentId: string;
  /** The channel that started the chat (only it may continue it), or null. */
  channelId: string | null;
  title: string | null;
  createdAt: string;
  updatedAt: string;
}

interface ChatRow {
  id: string;
  org_id: string;
  agent_id: string;
  channel_id: string | null;
  title: string | null;
  created_at: string;
  updated_at: string;
}

export const CHAT_ID_PATTERN = /^chat_[0-9a-f]{32}$/;

function toChat(r: ChatRow): ChatRecord {
  return {
    chatId: r.id,
    agentId: r.agent_id,
    channelId: r.channel_id,
    title: r.title,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export async function createChat(
  db: Knex,
  input: {
    id?: string | undefined;
    orgId: string;
    agentId: string;
    channelId?: string | null | undefined;
    title?: string | null | undefined;
  },
): Promise<ChatRecord> {
  const now = nowIso();
  const row: ChatRow = {
    id: input.id ?? newId('chat'),
    org_id: input.orgId,
    agent_id: input.agentId,
    channel_id: input.channelId ?? null,
    title: input.title ?? null,
    created_at: now,
    updated_at: now,
  };
  await db('chats').insert(row);
  return toChat(row);
}

export async function getChat(db: Knex, orgId: string, chatId: string): Promise<ChatRecord | undefined> {
  if (!CHAT_ID_PATTERN.test(chatId)) return undefined;
  const row = (await db('chats').where({ org_id: orgId, id: chatId }).first()) as ChatRow | undefined;
  return row ? toChat(row) : undefined;
}

/** Newest first; the cursor walks back in time. */
export async function listChats(
  db: Knex,
  orgId: string,
  page: { agentId?: string | undefined; channelId?: string | undefined; limit: number; cursor?: string | undefined },
): Promise<{ chats: ChatRecord[]; nextCursor: string | null }> {
  const q = db('chats').where({ org_id: orgId });
  if (page.agentId !== undefined) q.where({ agent_id: page.agentId });
  if (page.channelId !== undefined) q.where({ channel_id: page.channelId });
  if (page.cursor !== undefined) q.where('id', '<', decodeCursor('chats', page.cursor, 'string', CHAT_ID_PATTERN));
  const rows = (await q.orderBy('id', 'desc').limit(page.limit + 1)) as ChatRow[];
  const items = rows.slice(0, page.limit).map(toChat);
  return {
    chats: items,
    nextCursor: rows.length > page.limit ? encodeCursor('chats', items[items.length - 1]!.chatId) : null,
  };
}

/** Clears the history; the chat id, its owner and its files stay (chat_reset_conversation). */
export async function resetChat(db: Knex, orgId: string, chatId: string): Promise<boolean> {
  return db.transaction(async (trx) => {
    const n = await trx('chats').where({ org_id: orgId, id: chatId }).update({ updated_at: nowIso() });
    if (n === 0) return false;
    await trx('chat_messages').where({ org_id: orgId, chat_id: chatId }).delete();
    return true;
  });
}

export async function loadHistory(db: Knex, orgId: string, chatId: string): Promise<ModelMessage[]> {
  const rows = (await db('chat_messages')
    .where({ org_id: orgId, chat_id: chatId })
    .orderBy('seq', 'asc')
    .select('message')) as { message: string }[];
  return rows.map((r) => fromJson<ModelMessage>(r.message)!).filter(Boolean);
}

export interface StoredMessage {
  seq: number;
  message: ModelMessage;
  createdAt: string;
}

/** The whole history with each message's position and time, for reading a transcript back. */
export async function loadTranscript(db: Knex, orgId: string, chatId: string): Promise<StoredMessage[]> {
  const rows = (await db('chat_messages')
    .where({ org_id: orgId, chat_id: chatId })
    .orderBy('seq', 'asc')
    .select('seq', 'message', 'created_at')) as { seq: number | string; message: string; created_at: string }[];
  return rows.flatMap((r) => {
    const message = fromJson<ModelMessage>(r.message);
    return message ? [{ seq: Number(r.seq), message, createdAt: r.created_at }] : [];
  });
}

/** Per chat of the list: its message count and its first message (seq 1: a turn starts with the user's). */
export async function chatDigests(
  db: Knex,
  orgId: string,
  chatIds: readonly string[],
): Promise<Map<string, { count: number; first: ModelMessage | null }>> {
  const out = new Map<string, { count: number; first: ModelMessage | null }>();
  if (chatIds.length === 0) return out;
  const counts = (await db('chat_messages')
    .where({ org_id: orgId })
    .whereIn('chat_id', chatIds)
    .groupBy('chat_id')
    .select('chat_id')
    .count({ n: '*' })) as { chat_id: string; n: number | string }[];
  const firsts = (await db('chat_messages')
    .where({ org_id: orgId, seq: 1 })
    .whereIn('chat_id', chatIds)
    .select('chat_id', 'message')) as { chat_id: string; message: string }[];
  for (const id of chatIds) out.set(id, { count: 0, first: null });
  for (const c of counts) out.get(c.chat_id)!.count = Number(c.n);
  for (const f of firsts) out.get(f.chat_id)!.first = fromJson<ModelMessage>(f.message);
  return out;
}

/**
 * Appends messages in order (pass the caller's transaction: this opens none). Turns of one
 * chat never overlap (src/agents/chat-order.ts), and the (chat_id, seq) primary key turns any
 * overlap that slipped through into a failed write rather than an interleaved history.
 */
export async function appendMessages(
  trx: Knex,
  orgId: string,
  chatId: string,
  { turnId, messages, firstSeq }: { turnId: string; messages: readonly ModelMessage[]; firstSeq?: number | undefined },
): Promise<void> {
  if (messages.length === 0) return;
  const now = nowIso();
  // Write first: the UPDATE takes the write lock (sqlite) or the row lock (PostgreSQL) before
  // anything is read, so writers queue instead of failing a read-to-write upgrade.
  const n = await trx('chats').where({ org_id: orgId, id: chatId }).update({ updated_at: now });
  // A chat deleted meanwhile (its agent was deleted): nothing to keep.
  if (n === 0) return;
  // The caller knows the next seq when it read the history within this chat's turn order.
  let first = firstSeq;
  if (first === undefined) {
    const last = (await trx('chat_messages').where({ chat_id: chatId }).max({ seq: 'seq' }).first()) as
      { seq: number | string | null } | undefined;
    first = Number(last?.seq ?? 0) + 1;
  }
  await trx('chat_messages').insert(
    messages.map((m, i) => ({
      chat_id: chatId,
      seq: first + i,
      org_id: orgId,
      turn_id: turnId,
      role: m.role,
      message: toJson(m),
      created_at: now,
    })),
  );
}

// ---- turns: one user message and its reply ----

export type TurnStatus = 'RUNNING' | 'COMPLETE' | 'FAILED';

export interface TurnRecord {
  turnId: string;
  chatId: string;
  agentId: string;
  channelId: string | null;
  status: TurnStatus;
  reply: string | null;
  output: Record<string, unknown> | null;
  error: { error: string; message: string } | null;
  createdAt: string;
  finishedAt: string | null;
}

interface TurnRow {
  id: string;
  org_id: string;
  chat_id: string;
  agent_id: string;
  channel_id: string | null;
  idem_key: string | null;
  status: TurnStatus;
  reply: string | null;
  output: string | null;
  error: string | null;
  created_at: string;
  finished_at: string | null;
}

function toTurn(r: TurnRow): TurnRecord {
  return {
    turnId: r.id,
    chatId: r.chat_id,
    agentId: r.agent_id,
    channelId: r.channel_id,
    status: r.status,
    reply: r.reply,
    output: fromJson<Record<string, unknown>>(r.output),
    error: fromJson<{ error: string; message: string }>(r.error),
    createdAt: r.created_at,
    finishedAt: r.finished_at,
  };
}

export class TurnIdempotencyRace extends Error {
  constructor(readonly turnId: string) {
    super('another call with the same Idempotency-Key started this turn');
  }
}

/** Inserts a RUNNING turn; a second turn with the same channel and Idempotency-Key fails on the unique key. */
export async function createTurn(
  db: Knex,
  input: {
    id?: string | undefined;
    orgId: string;
    chatId: string;
    agentId: string;
    channelId?: string | null | undefined;
    idemKey?: string | undefined;
  },
): Promise<TurnRecord> {
  const row: TurnRow = {
    id: input.id ?? newId('turn'),
    org_id: input.orgId,
    chat_id: input.chatId,
    agent_id: input.agentId,
    channel_id: input.channelId ?? null,
    idem_key: input.idemKey ?? null,
    status: 'RUNNING',
    reply: null,
    output: null,
    error: null,
    created_at: nowIso(),
    finished_at: null,
  };
  await db('agent_turns').insert(row);
  return toTurn(row);
}

export async function finishTurn(
  db: Knex,
  orgId: string,
  turnId: string,
  outcome: {
    status: 'COMPLETE' | 'FAILED';
    reply?: string | null;
    output?: Record<string, unknown> | null;
    error?: { error: string; message: string } | null;
  },
): Promise<void> {
  await db('agent_turns')
    .where({ org_id: orgId, id: turnId })
    .update({
      status: outcome.status,
      reply: outcome.reply ?? null,
      output: toJson(outcome.output ?? null),
      error: toJson(outcome.error ?? null),
      finished_at: nowIso(),
    });
}

export async function getTurn(db: Knex, orgId: string, turnId: string): Promise<TurnRecord | undefined> {
  const row = (await db('agent_turns').where({ org_id: orgId, id: turnId }).first()) as TurnRow | undefined;
  return row ? toTurn(row) : undefined;
}

const IDEMPOTENCY_WINDOW_MS = 24 * 3600_000;

/** Idempotency-Key replays (openapi/triggers.yaml): 24 hours per channel and key. */
export async function findTurnByIdempotencyKey(
  db: Knex,
  orgId: string,
  channelId: string,
  key: string,
): Promise<TurnRecord | undefined> {
  const since = new Date(Date.now() - IDEMPOTENCY_WINDOW_MS).toISOString();
  const row = (await db('agent_turns')
    .where({ org_id: orgId, channel_id: channelId, idem_key: key })
    .andWhere('created_at', '>=', since)
    .first()) as TurnRow | undefined;
  return row ? toTurn(row) : undefined;
}

/**
 * After the window the key may be used again: the old turn keeps its record but not the key (a
 * write, so it may open a transaction).
 */
export async function releaseExpiredIdempotencyKey(
  db: Knex,
  orgId: string,
  channelId: string,
  key: string,
): Promise<void> {
  const since = new Date(Date.now() - IDEMPOTENCY_WINDOW_MS).toISOString();
  await db('agent_turns')
    .where({ org_id: orgId, channel_id: channelId, idem_key: key })
    .andWhere('created_at', '<', since)
    .update({ idem_key: null });
}

/** A turn left RUNNING by a process that died: failed, never stuck (called at start-up). */
export async function failAbandonedTurns(db: Knex, olderThanMs: number): Promise<number> {
  const before = new Date(Date.now() - olderThanMs).toISOString();
  return db('agent_turns')
    .where({ status: 'RUNNING' })
    .andWhere('created_at', '<', before)
    .update({
      status: 'FAILED',
      error: toJson({ error: 'turn_abandoned', message: 'The process running this turn stopped before it finished' }),
      finished_at: nowIso(),
    });
}

// ---- files produced in a chat ----

export async function linkChatFile(
  db: Knex,
  input: { fileId: string; orgId: string; chatId: string; turnId: string },
): Promise<void> {
  await db('chat_files').insert({
    file_id: input.fileId,
    org_id: input.orgId,
    chat_id: input.chatId,
    turn_id: input.turnId,
    created_at: nowIso(),
  });
}

export async function listChatFiles(
  db: Knex,
  orgId: string,
  chatId: string,
): Promise<{ id: string; filename: string; mimeType: string; size: number }[]> {
  const fileIds = (await db('chat_files')
    .where({ org_id: orgId, chat_id: chatId })
    .orderBy('file_id', 'asc')
    .pluck('file_id')) as string[];
  // The file records are the runs context's (`files`).
  return fileSummaries(db, orgId, fileIds);
}
