/**
 * Agents: the organisation's agents (`GET /v1/agents`) with their API channels
 * (`GET /v1/channels`) and chats (the agent-management tool `chat_list` through the gateway),
 * and a chat panel that talks to an agent through one of its channels, streaming the reply as
 * server-sent events (`Accept: text/event-stream`): text as it comes, and each tool call with
 * its outcome. The channel key is typed by the user and kept in this page's memory only.
 */
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiFailure, failureOf, unwrap } from '../api.ts';
import { callTool } from '../mcp.ts';
import { Empty, ErrorBox, PageTitle, Show, Time, useApi } from '../ui.tsx';
import type { Agent, Channel } from '../../../generated/openapi/client.ts';

async function load() {
  const [agents, channels] = await Promise.all([
    unwrap(api.GET('/v1/agents', { params: { query: { limit: 200 } } })),
    unwrap(api.GET('/v1/channels', { params: { query: { limit: 200 } } })),
  ]);
  return { agents: agents.items, channels: channels.items };
}

interface ChatRecord {
  chatId: string;
  agentId: string;
  title: string | null;
  createdAt: string;
  updatedAt: string;
}

function Chats({ agentId, current, onPick }: { agentId: string; current?: string; onPick: (id: string) => void }) {
  const state = useApi(
    () =>
      callTool<{ chats: ChatRecord[]; nextCursor: string | null }>('agent-management', 'agent-management_chat_list', {
        agentId,
        limit: 50,
      }),
    [agentId, current],
  );
  return (
    <Show state={state} what="the chats">
      {({ chats }) =>
        chats.length === 0 ? (
          <Empty title="No chats yet.">Send a message in the chat panel to start one.</Empty>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">Chat</th>
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
                    {c.title ?? <code>{c.chatId}</code>}
                    {c.chatId === current && <span class="muted"> (in the panel)</span>}
                  </td>
                  <td>
                    <Time iso={c.updatedAt} />
                  </td>
                  <td>
                    <button
                      type="button"
                      class="small"
                      onClick={() => onPick(c.chatId)}
                      aria-label={`Continue chat ${c.title ?? c.chatId}`}
                    >
                      Continue
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
  | { kind: 'tool'; id: string; server: string; tool: string; state: 'running' | 'ok' | 'failed'; durationMs?: number };

/** Sends one message over the channel and feeds the streamed events to `on`. */
async function stream(
  channel: Channel,
  key: string,
  body: { message: string; chatId?: string },
  on: (event: string, data: Record<string, unknown>) => void,
): Promise<{ chatId: string | null }> {
  let response: Response;
  try {
    response = await fetch(`/ext/channels/${encodeURIComponent(channel.triggerId)}`, {
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
}: {
  agent: Agent;
  channels: Channel[];
  chatId: string | undefined;
  setChatId: (id: string | undefined) => void;
}) {
  const usable = channels.filter((c) => c.enabled);
  const [entries, setEntries] = useState<Entry[]>([]);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [status, setStatus] = useState('');
  const key = useRef('');
  // The chat this panel's transcript belongs to: choosing another one in the list starts an
  // empty transcript (the API does not return a chat's earlier messages).
  const shown = useRef<string | undefined>(chatId);
  useEffect(() => {
    if (chatId !== shown.current) {
      shown.current = chatId;
      setEntries([]);
      setError(undefined);
    }
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
            shown.current = out.chatId;
            setChatId(out.chatId);
          }
          form.querySelector<HTMLTextAreaElement>('#chat-message')!.value = '';
          setStatus('The agent replied.');
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
      {entries.length > 0 && (
        <ol class="transcript" aria-label="Transcript of this conversation">
          {entries.map((x, i) =>
            x.kind === 'tool' ? (
              <li key={i} class="tool">
                Tool call <code>{x.tool}</code> on <code>{x.server}</code>:{' '}
                {x.state === 'running'
                  ? 'running…'
                  : `${x.state === 'ok' ? 'succeeded' : 'failed'} in ${x.durationMs ?? 0} ms`}
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
        <select id="chat-channel" name="channel">
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
        <p class="muted small-text">
          The API lists chats but does not return their history: the transcript shows the messages sent from this panel.
        </p>
        <Chats agentId={agent.agentId} current={chatId} onPick={setChatId} />
      </section>
      <ChatPanel agent={agent} channels={channels} chatId={chatId} setChatId={setChatId} />
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
