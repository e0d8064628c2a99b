/**
 * Chats as the management API shows them (openapi/management.yaml `listChats`, `getChat`): a
 * summary per chat (title or first-message excerpt, message count) and one chat's transcript
 * read from its history rows. The history holds the AI SDK messages as the model saw them;
 * here each becomes a role, a text and the tool calls it made or answered, with each call's
 * outcome joined from the tool message that carries it. A call's duration is kept with its
 * result under the provider-options key `switchyard`, which no model provider reads.
 */
import type { Knex } from 'knex';
import type { ModelMessage } from 'ai';
import { AppError } from '../errors/index.js';
import { pageLimit, type Page, type PageRequest } from '../kernel/page.js';
import { chatDigests, getChat, listChats, loadTranscript, type ChatRecord } from './chats.js';

/** Texts, results and errors longer than this are cut (`truncated`). */
const TEXT_MAX = 4000;
const EXCERPT_MAX = 200;
const META_KEY = 'switchyard';

type Part = { type: string } & Record<string, unknown>;

export interface ChatToolCallView {
  toolCallId: string;
  name: string;
  arguments: unknown;
  status: 'ok' | 'error' | 'pending';
  result: string | null;
  error: string | null;
  durationMs: number | null;
  truncated: boolean;
}

export interface ChatMessageView {
  seq: number;
  role: 'user' | 'assistant' | 'tool';
  text: string | null;
  toolCalls: ChatToolCallView[];
  truncated: boolean;
  createdAt: string;
}

/** Stamps each tool result of the turn with its call's duration (for the transcript). */
export function withToolDurations(messages: ModelMessage[], durations: ReadonlyMap<string, number>): ModelMessage[] {
  if (durations.size === 0) return messages;
  return messages.map((m) => {
    if (m.role !== 'tool') return m;
    return {
      ...m,
      content: m.content.map((p) => {
        if (p.type !== 'tool-result') return p;
        const ms = durations.get(p.toolCallId);
        if (ms === undefined) return p;
        return { ...p, providerOptions: { ...p.providerOptions, [META_KEY]: { durationMs: ms } } };
      }),
    };
  });
}

function cut(text: string, max: number): { text: string; truncated: boolean } {
  return text.length > max ? { text: `${text.slice(0, max)}…`, truncated: true } : { text, truncated: false };
}

function parts(m: ModelMessage): Part[] {
  if (typeof m.content === 'string') return [{ type: 'text', text: m.content }];
  return m.content as unknown as Part[];
}

/** The message's own words: its text parts, with a note for each attachment. */
function textOf(m: ModelMessage): string {
  return parts(m)
    .map((p) => {
      if (p.type === 'text' && typeof p.text === 'string') return p.text;
      if (p.type === 'image') return '[image]';
      if (p.type === 'file') return `[file${typeof p.filename === 'string' ? ` ${p.filename}` : ''}]`;
      return '';
    })
    .filter(Boolean)
    .join('\n');
}

function asJsonText(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null');
}

/** A tool result's outcome: the tools of src/agents/runtime/tools.ts answer a failure as `{isError, error}`. */
function outcomeOf(output: unknown): { status: 'ok' | 'error'; result: string | null; error: string | null } {
  const o = (output ?? {}) as { type?: string; value?: unknown; reason?: unknown };
  switch (o.type) {
    case 'text':
      return { status: 'ok', result: asJsonText(o.value), error: null };
    case 'json': {
      const v = o.value as { isError?: unknown; error?: unknown } | null;
      if (v && typeof v === 'object' && !Array.isArray(v) && v.isError === true)
        return { status: 'error', result: null, error: asJsonText(v.error ?? 'The tool failed') };
      return { status: 'ok', result: asJsonText(o.value), error: null };
    }
    case 'error-text':
    case 'error-json':
      return { status: 'error', result: null, error: asJsonText(o.value) };
    case 'execution-denied':
      return { status: 'error', result: null, error: `Not run: ${typeof o.reason === 'string' ? o.reason : 'denied'}` };
    case 'content': {
      const items = Array.isArray(o.value) ? (o.value as { type?: string; text?: unknown }[]) : [];
      const text = items.map((c) => (c.type === 'text' && typeof c.text === 'string' ? c.text : `[${c.type}]`));
      return { status: 'ok', result: text.join('\n'), error: null };
    }
    default:
      return { status: 'ok', result: asJsonText(o.value ?? null), error: null };
  }
}

interface ResultInfo {
  name: string;
  status: 'ok' | 'error';
  result: string | null;
  error: string | null;
  durationMs: number | null;
}

function resultInfo(p: Part): ResultInfo {
  const meta = (p.providerOptions as Record<string, { durationMs?: unknown }> | undefined)?.[META_KEY];
  const ms = meta?.durationMs;
  return {
    name: String(p.toolName ?? ''),
    ...outcomeOf(p.output),
    durationMs: typeof ms === 'number' && Number.isInteger(ms) && ms >= 0 ? ms : null,
  };
}

function callView(id: string, args: unknown, info: ResultInfo | undefined, name: string): ChatToolCallView {
  const result = info?.result == null ? null : cut(info.result, TEXT_MAX);
  const error = info?.error == null ? null : cut(info.error, TEXT_MAX);
  return {
    toolCallId: id,
    name: info?.name || name,
    arguments: args ?? null,
    status: info?.status ?? 'pending',
    result: result?.text ?? null,
    error: error?.text ?? null,
    durationMs: info?.durationMs ?? null,
    truncated: Boolean(result?.truncated || error?.truncated),
  };
}

/** The transcript: every message in order, each tool call with the outcome its result gives it. */
export function transcriptOf(stored: { seq: number; message: ModelMessage; createdAt: string }[]): ChatMessageView[] {
  const results = new Map<string, ResultInfo>();
  const args = new Map<string, unknown>();
  for (const { message } of stored)
    for (const p of typeof message.content === 'string' ? [] : parts(message)) {
      if (p.type === 'tool-result') results.set(String(p.toolCallId), resultInfo(p));
      if (p.type === 'tool-call') args.set(String(p.toolCallId), p.input);
    }
  const views: ChatMessageView[] = [];
  for (const { seq, message, createdAt } of stored) {
    if (message.role === 'system') continue;
    const own = parts(message);
    const toolCalls = own.flatMap((p) => {
      const id = String(p.toolCallId);
      if (message.role === 'assistant' && p.type === 'tool-call')
        return [callView(id, p.input, results.get(id), String(p.toolName ?? ''))];
      if (message.role === 'tool' && p.type === 'tool-result')
        return [callView(id, args.get(id), results.get(id), String(p.toolName ?? ''))];
      return [];
    });
    const text = message.role === 'tool' ? '' : textOf(message);
    const shown = cut(text, TEXT_MAX);
    views.push({
      seq,
      role: message.role,
      text: text ? shown.text : null,
      toolCalls,
      truncated: shown.truncated,
      createdAt,
    });
  }
  return views;
}

function summary(chat: ChatRecord, digest: { count: number; first: ModelMessage | null } | undefined) {
  const first = digest?.first ? textOf(digest.first) : '';
  return {
    chatId: chat.chatId,
    agentId: chat.agentId,
    channelId: chat.channelId,
    title: chat.title,
    excerpt: first ? cut(first, EXCERPT_MAX).text : null,
    messageCount: digest?.count ?? 0,
    createdAt: chat.createdAt,
    updatedAt: chat.updatedAt,
  };
}

export type ChatSummaryView = ReturnType<typeof summary>;

/** Newest first, optionally one agent's or one channel's. */
export async function listChatSummaries(
  db: Knex,
  orgId: string,
  filter: { agentId?: string | undefined; channelId?: string | undefined },
  page: PageRequest,
): Promise<Page<ChatSummaryView>> {
  const { chats, nextCursor } = await listChats(db, orgId, {
    ...filter,
    limit: pageLimit(page.limit),
    cursor: page.cursor,
  });
  const digests = await chatDigests(
    db,
    orgId,
    chats.map((c) => c.chatId),
  );
  return { items: chats.map((c) => summary(c, digests.get(c.chatId))), nextCursor };
}

/** One chat of the organisation with its transcript; another organisation's answers 404 like a missing one. */
export async function chatView(db: Knex, orgId: string, chatId: string) {
  const chat = await getChat(db, orgId, chatId);
  if (!chat) throw new AppError('ERR_NOT_FOUND', { message: `No chat ${chatId} in this organisation` });
  const stored = await loadTranscript(db, orgId, chatId);
  const messages = transcriptOf(stored);
  const first = stored[0]?.seq === 1 ? stored[0].message : null;
  return { ...summary(chat, { count: stored.length, first }), messages };
}
