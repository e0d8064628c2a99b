/**
 * Agents: the organisation's agents (`GET /v1/agents`) with their API channels
 * (`GET /v1/channels`) and chats (`GET /v1/chats`), and a chat panel that shows a chosen chat's
 * transcript (`GET /v1/chats/{chatId}`, tool calls with their arguments and outcome) and talks
 * to the agent through one of its channels, streaming the reply as server-sent events
 * (`Accept: text/event-stream`): text as it comes, and each tool call with its outcome. The
 * channel key is typed by the user and kept in this page's memory only.
 */
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiFailure, failureOf, unwrap } from '../api.ts';
import { SERVICE_URL } from '../base.ts';
import { Empty, ErrorBox, PageTitle, Show, Time, useApi } from '../ui.tsx';
import type { Agent, Channel, ChatMessage } from '../../../generated/openapi/client.ts';

async function load() {
  const [agents, channels] = await Promise.all([
    unwrap(api.GET('/v1/agents', { params: { query: { limit: 200 } } })),
    unwrap(api.GET('/v1/channels', { params: { query: { limit: 200 } } })),
  ]);
  return { agents: agents.items, channels: channels.items };
}

function Chats({
  agentId,
  channels,
  current,
  replies,
  onPick,
}: {
  agentId: string;
  channels: Channel[];
  current?: string | undefined;
  /** Replies the panel has received: each one reads the list again (message counts, times). */
  replies: number;
  onPick: (id: string) => void;
}) {
  const state = useApi(
    () => unwrap(api.GET('/v1/chats', { params: { query: { agentId, limit: 50 } } })),
    [agentId, current, replies],
  );
  return (
    <Show state={state} what="the chats">
      {({ items: chats }) =>
        chats.length === 0 ? (
          <Empty title="No chats yet.">Send a message in the chat panel to start one.</Empty>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">Chat</th>
                <th scope="col">Channel</th>
                <th scope="col">Messages</th>
                <th scope="col">Last message</th>
                <th scope="col">
                  <span class="visually-hidden">Action</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {chats.map((c) => (
                <tr key={c.chatId}>
                  <td>
                    {c.title ?? c.excerpt ?? <code>{c.chatId}</code>}
                    {c.chatId === current && <span class="muted"> (in the panel)</span>}
                  </td>
                  <td>
                    {c.channelId ? (channels.find((ch) => ch.triggerId === c.channelId)?.name ?? 'deleted') : '—'}
                  </td>
                  <td>{c.messageCount}</td>
                  <td>
                    <Time iso={c.updatedAt} />
                  </td>
                  <td>
                    <button
                      type="button"
                      class="small"
                      onClick={() => onPick(c.chatId)}
                      aria-label={`Open chat ${c.title ?? c.excerpt ?? c.chatId}`}
                    >
                      Open
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      }
    </Show>
  );
}

type Entry =
  | { kind: 'user'; text: string }
  | { kind: 'agent'; text: string; done: boolean }
  | {
      kind: 'tool';
      id: string;
      /** Unknown for a call read back from the transcript (its name is the model's name for the tool). */
      server?: string | undefined;
      tool: string;
      state: 'running' | 'ok' | 'failed' | 'no result';
      durationMs?: number | undefined;
      /** Arguments and result (or error) as text, for a call read back from the transcript. */
      detail?: string | undefined;
    };

/** A chat's stored transcript as the panel's entries: each assistant message's tool calls, then its text. */
function entriesOf(messages: ChatMessage[]): Entry[] {
  return messages.flatMap((m): Entry[] => {
    if (m.role === 'user') return [{ kind: 'user', text: m.text ?? '' }];
    if (m.role !== 'assistant') return [];
    const calls = m.toolCalls.map((c): Entry => ({
      kind: 'tool',
      id: c.toolCallId,
      tool: c.name,
      state: c.status === 'ok' ? 'ok' : c.status === 'error' ? 'failed' : 'no result',
      durationMs: c.durationMs ?? undefined,
      detail: `Arguments: ${JSON.stringify(c.arguments)}\n${c.status === 'error' ? `Error: ${c.error ?? ''}` : `Result: ${c.result ?? '(none)'}`}`,
    }));
    return m.text ? [...calls, { kind: 'agent', text: m.text, done: true }] : calls;
  });
}

function toolOutcome(x: Extract<Entry, { kind: 'tool' }>): string {
  if (x.state === 'running') return 'running…';
  if (x.state === 'no result') return 'no result (the turn stopped first)';
  const verb = x.state === 'ok' ? 'succeeded' : 'failed';
  return x.durationMs === undefined ? verb : `${verb} in ${x.durationMs} ms`;
}

/** Sends one message over the channel and feeds the streamed events to `on`. */
async function stream(
  channel: Channel,
  key: string,
  body: { message: string; chatId?: string },
  on: (event: string, data: Record<string, unknown>) => void,
): Promise<{ chatId: string | null }> {
  let response: Response;
  try {
    response = await fetch(`${SERVICE_URL}/ext/channels/${encodeURIComponent(channel.triggerId)}`, {
      method: 'POST',
      credentials: 'omit',
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream', 'X-API-Key': key },
      body: JSON.stringify(body),
    });
  } catch (err) {
    throw new ApiFailure(0, 'network_error', `The service could not be reached: ${(err as Error).message}`);
  }
  const chatId = response.headers.get('X-Pf-Chat-Id');
  const type = response.headers.get('Content-Type') ?? '';
  if (!response.ok || !type.startsWith('text/event-stream') || !response.body) {
    const error: unknown = await response.json().catch(() => undefined);
    throw failureOf(response, error);
  }
  const events = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
  const reader = events.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    let data: Record<string, unknown>;
    try {
      data = JSON.parse(value.data) as Record<string, unknown>;
    } catch {
      continue;
    }
    on(value.event ?? 'message', data);
  }
  return { chatId };
}

function ChatPanel({
  agent,
  channels,
  chatId,
  setChatId,
  onReply,
}: {
  agent: Agent;
  channels: Channel[];
  chatId: string | undefined;
  setChatId: (id: string | undefined) => void;
  onReply: () => void;
}) {
  const usable = channels.filter((c) => c.enabled);
  const [entries, setEntries] = useState<Entry[]>([]);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [status, setStatus] = useState('');
  const key = useRef('');
  // The chat this panel's transcript belongs to: choosing another one in the list loads its
  // earlier messages; a chat this panel just started already shows them.
  const shown = useRef<string | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>();
  /** The channel of the chosen chat (only it may continue the chat); null for a chat started elsewhere. */
  const [chatChannel, setChatChannel] = useState<string | null>();
  useEffect(() => {
    if (chatId === shown.current) return;
    shown.current = chatId;
    setEntries([]);
    setError(undefined);
    setLoadError(undefined);
    setChatChannel(undefined);
    if (!chatId) return;
    setStatus('Loading the chat…');
    unwrap(api.GET('/v1/chats/{chatId}', { params: { path: { chatId } } })).then(
      (chat) => {
        if (shown.current !== chatId) return;
        setEntries(entriesOf(chat.messages));
        setChatChannel(chat.channelId);
        setStatus(`Chat loaded: ${chat.messages.length} messages.`);
      },
      (err: unknown) => {
        if (shown.current !== chatId) return;
        setLoadError(err);
        setStatus('');
      },
    );
  }, [chatId]);
  if (usable.length === 0)
    return (
      <Empty title="This agent has no enabled API channel.">
        Create one with <code>POST /v1/channels</code> or <code>switchyard channels create</code> to chat from here.
      </Empty>
    );
  return (
    <form
      aria-labelledby="chat-title"
      onSubmit={async (e) => {
        e.preventDefault();
        const form = e.currentTarget;
        const data = new FormData(form);
        const message = String(data.get('message') ?? '').trim();
        const channel = usable.find((c) => c.triggerId === data.get('channel')) ?? usable[0]!;
        key.current = String(data.get('key') ?? '');
        if (!message) return;
        setError(undefined);
        setBusy(true);
        setStatus('The agent is replying…');
        let list: Entry[] = [...entries, { kind: 'user', text: message }, { kind: 'agent', text: '', done: false }];
        setEntries(list);
        const update = (fn: (l: Entry[]) => Entry[]) => setEntries((list = fn(list)));
        const replyAt = list.length - 1;
        try {
          const out = await stream(channel, key.current, chatId ? { message, chatId } : { message }, (event, d) => {
            if (event === 'text-delta') {
              update((l) =>
                l.map((x, i) =>
                  i === replyAt && x.kind === 'agent' ? { ...x, text: x.text + String(d.delta ?? '') } : x,
                ),
              );
            } else if (event === 'tool-call-start') {
              const tool: Entry = {
                kind: 'tool',
                id: String(d.toolCallId),
                server: String(d.server),
                tool: String(d.tool),
                state: 'running',
              };
              update((l) => [...l.slice(0, replyAt), tool, ...l.slice(replyAt)]);
            } else if (event === 'tool-call-end') {
              update((l) =>
                l.map((x) =>
                  x.kind === 'tool' && x.id === d.toolCallId
                    ? { ...x, state: d.isError ? 'failed' : 'ok', durationMs: Number(d.durationMs) }
                    : x,
                ),
              );
            } else if (event === 'done') {
              update((l) =>
                l.map((x) =>
                  x.kind === 'agent' && !x.done ? { ...x, text: String(d.reply ?? x.text), done: true } : x,
                ),
              );
            } else if (event === 'error') {
              throw new ApiFailure(200, String(d.error ?? 'stream_error'), String(d.message ?? 'The turn failed'));
            }
          });
          if (out.chatId) {
            if (out.chatId !== shown.current) setChatChannel(channel.triggerId);
            shown.current = out.chatId;
            setChatId(out.chatId);
          }
          form.querySelector<HTMLTextAreaElement>('#chat-message')!.value = '';
          setStatus('The agent replied.');
          onReply();
        } catch (err) {
          setError(err);
          setStatus('');
          update((l) => l.filter((x) => !(x.kind === 'agent' && !x.done && x.text === '')));
        } finally {
          setBusy(false);
        }
      }}
    >
      <h3 id="chat-title">Chat with {agent.name}</h3>
      <p class="muted">
        {chatId ? (
          <>
            Continuing chat <code>{chatId}</code>.{' '}
            <button type="button" class="small" onClick={() => setChatId(undefined)}>
              New chat
            </button>
          </>
        ) : (
          'The first message starts a new chat.'
        )}
      </p>
      {chatChannel === null && (
        <p class="muted">
          This chat was not started through an API channel (agent-management tools or a workflow step): only its
          transcript is shown here; a message sent from this panel is refused.
        </p>
      )}
      {loadError !== undefined && <ErrorBox error={loadError} title="The chat's transcript could not be loaded" />}
      {entries.length > 0 && (
        <ol class="transcript" aria-label="Transcript of this conversation">
          {entries.map((x, i) =>
            x.kind === 'tool' ? (
              <li key={i} class="tool">
                Tool call <code>{x.tool}</code>
                {x.server && (
                  <>
                    {' '}
                    on <code>{x.server}</code>
                  </>
                )}
                : {toolOutcome(x)}
                {x.detail && (
                  <details>
                    <summary>Arguments and result</summary>
                    {x.detail}
                  </details>
                )}
              </li>
            ) : (
              <li key={i} class={x.kind}>
                <span class="who">{x.kind === 'user' ? 'You' : agent.name}</span>
                {x.text || (x.kind === 'agent' && !x.done ? '…' : '')}
              </li>
            ),
          )}
        </ol>
      )}
      <div class="field">
        <label for="chat-channel">Channel</label>
        <select id="chat-channel" name="channel" key={chatChannel ?? ''} defaultValue={chatChannel ?? undefined}>
          {usable.map((c) => (
            <option key={c.triggerId} value={c.triggerId}>
              {c.name} (key …{c.keyHint})
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="chat-key">Channel key</label>
        <input
          id="chat-key"
          name="key"
          type="password"
          required
          autocomplete="off"
          defaultValue={key.current}
          aria-describedby="chat-key-help"
        />
        <p class="help" id="chat-key-help">
          The channel's key (<code>syc_…</code>, shown when the channel was created or its key rotated); kept in this
          page's memory only.
        </p>
      </div>
      <div class="field">
        <label for="chat-message">Message</label>
        <textarea id="chat-message" name="message" rows={3} required />
      </div>
      <button type="submit" class="primary" disabled={busy}>
        {busy ? 'Sending…' : 'Send'}
      </button>
      <p class="visually-hidden" role="status">
        {status}
      </p>
      {error !== undefined && <ErrorBox error={error} title="The message was not answered" />}
    </form>
  );
}

function AgentDetail({ agent, channels }: { agent: Agent; channels: Channel[] }) {
  const [chatId, setChatId] = useState<string>();
  const [replies, setReplies] = useState(0);
  return (
    <section aria-labelledby="agent-title">
      <h2 id="agent-title">{agent.name}</h2>
      <dl class="facts">
        <dt>Id</dt>
        <dd>
          <code>{agent.agentId}</code>
        </dd>
        <dt>Model</dt>
        <dd>{agent.model ?? 'installation default'}</dd>
        <dt>Release</dt>
        <dd>{agent.releaseVersion ?? 'none (chats run the draft)'}</dd>
        <dt>Tool servers</dt>
        <dd>{agent.servers.map((s) => s.server).join(', ') || '—'}</dd>
      </dl>
      <h3>Channels</h3>
      {channels.length === 0 ? (
        <Empty title="No API channel.">
          Create one with <code>POST /v1/channels</code> to talk to this agent over HTTP.
        </Empty>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Channel</th>
              <th scope="col">Format</th>
              <th scope="col">Enabled</th>
              <th scope="col">Key</th>
              <th scope="col">URL</th>
            </tr>
          </thead>
          <tbody>
            {channels.map((c) => (
              <tr key={c.triggerId}>
                <td>{c.name}</td>
                <td>{c.outputFormat}</td>
                <td>{c.enabled ? 'yes' : 'no'}</td>
                <td>…{c.keyHint}</td>
                <td>
                  <code>{c.url}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <section aria-labelledby="chats-title">
        <h3 id="chats-title">Chats</h3>
        <Chats agentId={agent.agentId} channels={channels} current={chatId} replies={replies} onPick={setChatId} />
      </section>
      <ChatPanel
        agent={agent}
        channels={channels}
        chatId={chatId}
        setChatId={setChatId}
        onReply={() => setReplies((n) => n + 1)}
      />
    </section>
  );
}

export function AgentsPage() {
  const state = useApi(load, []);
  const [selected, setSelected] = useState<string>();
  return (
    <>
      <PageTitle>Agents</PageTitle>
      <Show state={state} what="the agents">
        {({ agents, channels }) => {
          if (agents.length === 0)
            return (
              <Empty title="No agents yet.">
                Create one with <code>POST /v1/agents</code>, <code>switchyard agents create --file</code> or the{' '}
                <code>agent-management_agent_create</code> tool.
              </Empty>
            );
          const agent = agents.find((a) => a.agentId === selected);
          return (
            <>
              <table>
                <thead>
                  <tr>
                    <th scope="col">Agent</th>
                    <th scope="col">Model</th>
                    <th scope="col">Channels</th>
                    <th scope="col">Updated</th>
                  </tr>
                </thead>
                <tbody>
                  {agents.map((a) => (
                    <tr key={a.agentId}>
                      <td>
                        <button
                          type="button"
                          class="link"
                          aria-pressed={a.agentId === selected}
                          onClick={() => setSelected(a.agentId)}
                        >
                          {a.name}
                        </button>
                        <div class="muted small-text">{a.description}</div>
                      </td>
                      <td>{a.model ?? 'default'}</td>
                      <td>{channels.filter((c) => c.agentId === a.agentId).length}</td>
                      <td>
                        <Time iso={a.updatedAt} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              {agent ? (
                <AgentDetail
                  key={agent.agentId}
                  agent={agent}
                  channels={channels.filter((c) => c.agentId === agent.agentId)}
                />
              ) : (
                <p class="muted">Choose an agent to see its channels and chats and to talk to it.</p>
              )}
            </>
          );
        }}
      </Show>
    </>
  );
}
