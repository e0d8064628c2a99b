/**
 * The one permitted stand-in (DESIGN.md section 5): a scripted OpenAI-compatible model server
 * on loopback. It speaks the Chat Completions wire format — a JSON `chat.completion`, or with
 * `stream: true` server-sent `chat.completion.chunk` events ending in `[DONE]` — and answers
 * each request from a script: a queue of replies consumed in order, or a function of the
 * request. Every request is recorded (body and headers). An exhausted queue answers a loud 500
 * so a test fails instead of hanging.
 */
import http, { type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ToolCallReply {
  name: string;
  arguments: Record<string, unknown> | string;
  id?: string;
}

export interface Reply {
  text?: string;
  toolCalls?: ToolCallReply[];
  error?: { status: number; message: string };
  delayMs?: number;
}

export interface ScriptRequest {
  messages: any[];
  tools: any[];
  body: Record<string, unknown>;
  headers: IncomingHttpHeaders;
}

export type Script = Reply[] | ((req: ScriptRequest) => Reply | Promise<Reply>);

export interface RecordedRequest {
  body: Record<string, unknown>;
  headers: IncomingHttpHeaders;
}

export interface ModelServer {
  /** Base URL for OPENAI_COMPATIBLE_BASE_URL, e.g. http://127.0.0.1:PORT/v1. */
  baseUrl: string;
  requests: RecordedRequest[];
  setScript(script: Script): void;
  close(): Promise<void>;
}

export const reply = {
  text: (text: string): Reply => ({ text }),
  toolCall: (name: string, args: Record<string, unknown> = {}): Reply => ({ toolCalls: [{ name, arguments: args }] }),
  toolCalls: (...calls: ToolCallReply[]): Reply => ({ toolCalls: calls }),
};

/** A model that never stops calling tools (step-limit tests). */
export function alwaysToolCall(name: string, args: Record<string, unknown> = {}): Script {
  return () => reply.toolCall(name, args);
}

let callSeq = 0;

function toolCallsOf(r: Reply) {
  return (r.toolCalls ?? []).map((c) => ({
    id: c.id ?? `call_${++callSeq}`,
    type: 'function',
    function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) },
  }));
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function complete(res: ServerResponse, model: string, r: Reply): void {
  const calls = toolCallsOf(r);
  sendJson(res, 200, {
    id: `chatcmpl-${++callSeq}`, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model,
    choices: [{ index: 0, message: { role: 'assistant', content: r.text ?? (calls.length ? null : ''), ...(calls.length ? { tool_calls: calls } : {}) }, finish_reason: calls.length ? 'tool_calls' : 'stop' }],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  });
}

function stream(res: ServerResponse, model: string, r: Reply, includeUsage: boolean): void {
  const id = `chatcmpl-${++callSeq}`;
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write(chunk({ role: 'assistant', content: '' }));
  const text = r.text ?? '';
  // A few deltas, as real servers send them.
  for (let i = 0; i < text.length; i += 4) res.write(chunk({ content: text.slice(i, i + 4) }));
  const calls = toolCallsOf(r);
  calls.forEach((c, index) => {
    res.write(chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } }] }));
    res.write(chunk({ tool_calls: [{ index, function: { arguments: c.function.arguments } }] }));
  });
  res.write(chunk({}, calls.length ? 'tool_calls' : 'stop'));
  if (includeUsage) res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })}\n\n`);
  res.end('data: [DONE]\n\n');
}

export async function startModelServer(initial: Script = []): Promise<ModelServer> {
  let script: Script = initial;
  const requests: RecordedRequest[] = [];

  async function next(req: ScriptRequest): Promise<Reply> {
    if (typeof script === 'function') return script(req);
    const r = script.shift();
    return r ?? { error: { status: 500, message: `scripted model: the script ran out (request ${requests.length})` } };
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const url = req.url ?? '/';
        if (req.method === 'GET' && url === '/v1/models') return sendJson(res, 200, { object: 'list', data: [{ id: 'scripted', object: 'model', owned_by: 'test' }] });
        if (req.method !== 'POST' || url !== '/v1/chat/completions') return sendJson(res, 404, { error: { message: `no route ${req.method} ${url}`, type: 'not_found' } });
        let body: Record<string, unknown>;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
        } catch {
          return sendJson(res, 400, { error: { message: 'invalid JSON', type: 'invalid_request_error' } });
        }
        requests.push({ body, headers: req.headers });
        const r = await next({ messages: (body.messages as unknown[]) ?? [], tools: (body.tools as unknown[]) ?? [], body, headers: req.headers });
        if (r.delayMs) await new Promise((resolve) => setTimeout(resolve, r.delayMs));
        if (r.error) return sendJson(res, r.error.status, { error: { message: r.error.message, type: 'server_error', code: null } });
        const model = typeof body.model === 'string' ? body.model : 'scripted';
        if (body.stream === true) stream(res, model, r, Boolean((body.stream_options as { include_usage?: boolean } | undefined)?.include_usage));
        else complete(res, model, r);
      })().catch((err: unknown) => sendJson(res, 500, { error: { message: String(err), type: 'server_error' } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    setScript(s) {
      script = Array.isArray(s) ? [...s] : s;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
