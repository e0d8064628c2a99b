/**
 * The one permitted stand-in for a language model (DESIGN.md section 5): a scripted
 * OpenAI-compatible model server on loopback, node:http only. It speaks the Chat Completions
 * wire format — a JSON `chat.completion`, or with `stream: true` server-sent
 * `chat.completion.chunk` events ending in `data: [DONE]` — and answers each request from a
 * script: a queue of replies consumed in order, or a function of the request. Every chat
 * completion request is recorded (parsed body and headers). An exhausted queue answers a loud
 * 500 so a test fails instead of hanging. A `response_format` (structured output) is checked
 * as OpenAI checks it — `text`, `json_object`, or `json_schema` with a `name` of at most 64
 * letters, digits, `_` or `-` and a `schema` object — and a malformed one answers 400; the
 * scripted reply is the content (`reply.json` writes a JSON one). It also speaks Anthropic's Messages API
 * (`POST /v1/messages`, not streamed) from the same script, for the anthropic provider with
 * ANTHROPIC_BASE_URL (tool calls become `tool_use` blocks).
 */
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ToolCallReply {
  /** One of the request's `tools[].function.name` (the test writes it; not checked). */
  name: string;
  arguments: Record<string, unknown> | string;
  id?: string;
}

export interface Reply {
  text?: string;
  toolCalls?: ToolCallReply[];
  /** Answer this HTTP status with an OpenAI-style error body instead. */
  error?: { status: number; message: string };
  /** Wait this long before answering (slow-model and timeout tests). */
  delayMs?: number;
}

export interface ScriptRequest {
  /** Which wire format the request came in (default openai). */
  api?: 'openai' | 'anthropic';
  messages: any[];
  tools: any[];
  body: Record<string, any>;
  headers: IncomingHttpHeaders;
}

export type Script = Reply[] | ((req: ScriptRequest) => Reply | Promise<Reply>);

export interface RecordedRequest {
  body: Record<string, any>;
  headers: IncomingHttpHeaders;
}

export interface ModelServer {
  /** Base URL for OPENAI_COMPATIBLE_BASE_URL / `baseURL`, e.g. http://127.0.0.1:PORT/v1. */
  baseUrl: string;
  /** Every chat completion request in arrival order (clear with `requests.length = 0`). */
  requests: RecordedRequest[];
  setScript(script: Script): void;
  close(): Promise<void>;
}

export interface ModelServerOptions {
  /** Model ids listed by GET /v1/models (default `['scripted']`). */
  models?: string[];
}

export const reply = {
  text: (text: string): Reply => ({ text }),
  toolCall: (name: string, args: Record<string, unknown> | string = {}, id?: string): Reply => ({
    toolCalls: [{ name, arguments: args, ...(id ? { id } : {}) }],
  }),
  toolCalls: (...calls: ToolCallReply[]): Reply => ({ toolCalls: calls }),
  error: (status: number, message: string): Reply => ({ error: { status, message } }),
  /** A structured answer: the value as JSON content. */
  json: (value: unknown): Reply => ({ text: JSON.stringify(value) }),
};

/** What OpenAI answers 400 for in a `response_format`, or undefined when it is well formed. */
function responseFormatProblem(format: unknown): string | undefined {
  if (format === undefined) return undefined;
  if (typeof format !== 'object' || format === null) return 'response_format must be an object';
  const { type, json_schema: spec } = format as { type?: unknown; json_schema?: Record<string, unknown> };
  if (type === 'text' || type === 'json_object') return undefined;
  if (type !== 'json_schema')
    return `response_format.type must be text, json_object or json_schema, got ${String(type)}`;
  if (typeof spec !== 'object' || spec === null) return 'response_format.json_schema is required';
  if (typeof spec.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(spec.name))
    return 'response_format.json_schema.name must be 1 to 64 of a-z, A-Z, 0-9, _ and -';
  if (typeof spec.schema !== 'object' || spec.schema === null || Array.isArray(spec.schema))
    return 'response_format.json_schema.schema must be a JSON Schema object';
  if (spec.strict !== undefined && typeof spec.strict !== 'boolean')
    return 'response_format.json_schema.strict must be a boolean';
  return undefined;
}

/** A model that never stops calling tools (step-limit tests). */
export function alwaysToolCall(name: string, args: Record<string, unknown> | string = {}): Script {
  return () => reply.toolCall(name, args);
}

/**
 * Calls `name` with `args` once, then answers with the content of the last tool result it was
 * sent (so a test sees what the tool returned to the model).
 */
export function echoLastToolResult(name: string, args: Record<string, unknown> | string = {}): Script {
  return ({ messages }) => {
    const last = [...messages].reverse().find((m: { role: string }) => m.role === 'tool');
    if (!last) return reply.toolCall(name, args);
    return reply.text(typeof last.content === 'string' ? last.content : JSON.stringify(last.content));
  };
}

let seq = 0;
const USAGE = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

function toolCallsOf(r: Reply) {
  return (r.toolCalls ?? []).map((c) => ({
    id: c.id ?? `call_${++seq}`,
    type: 'function' as const,
    function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) },
  }));
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, status: number, message: string, type = 'server_error'): void {
  sendJson(res, status, { error: { message, type, param: null, code: null } });
}

function complete(res: ServerResponse, model: string, r: Reply): void {
  const calls = toolCallsOf(r);
  const message = {
    role: 'assistant',
    content: r.text ?? (calls.length ? null : ''),
    ...(calls.length ? { tool_calls: calls } : {}),
  };
  sendJson(res, 200, {
    id: `chatcmpl-${++seq}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message, finish_reason: calls.length ? 'tool_calls' : 'stop' }],
    usage: USAGE,
  });
}

/** Splits a string into at most `n` non-empty pieces (deltas arrive in pieces from real servers). */
function pieces(s: string, n: number): string[] {
  const size = Math.max(1, Math.ceil(s.length / n));
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

function stream(res: ServerResponse, model: string, r: Reply, includeUsage: boolean): void {
  const id = `chatcmpl-${++seq}`;
  const created = Math.floor(Date.now() / 1000);
  const event = (payload: Record<string, unknown>) =>
    res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, ...payload })}\n\n`);
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    event({ choices: [{ index: 0, delta, finish_reason: finish }] });
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  chunk({ role: 'assistant', content: '' });
  for (const part of pieces(r.text ?? '', 3)) chunk({ content: part });
  const calls = toolCallsOf(r);
  calls.forEach((c, index) => {
    // First the id and name with empty arguments, then the arguments in pieces, as OpenAI does.
    chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } }] });
    for (const part of pieces(c.function.arguments, 2))
      chunk({ tool_calls: [{ index, function: { arguments: part } }] });
  });
  chunk({}, calls.length ? 'tool_calls' : 'stop');
  if (includeUsage) event({ choices: [], usage: USAGE });
  res.end('data: [DONE]\n\n');
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export async function startModelServer(initial: Script = [], opts: ModelServerOptions = {}): Promise<ModelServer> {
  let script: Script = Array.isArray(initial) ? [...initial] : initial;
  const requests: RecordedRequest[] = [];
  const models = opts.models ?? ['scripted'];

  async function next(req: ScriptRequest): Promise<Reply> {
    if (typeof script === 'function') return script(req);
    return (
      script.shift() ?? {
        error: {
          status: 500,
          message: `scripted model: the script ran out of replies (request ${requests.length}); add a reply or use a function script`,
        },
      }
    );
  }

  async function chatCompletion(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body: Record<string, any>;
    try {
      body = JSON.parse(await readBody(req)) as Record<string, any>;
    } catch {
      return sendError(res, 400, 'scripted model: the body is not JSON', 'invalid_request_error');
    }
    requests.push({ body, headers: req.headers });
    const formatProblem = responseFormatProblem(body.response_format);
    if (formatProblem) return sendError(res, 400, formatProblem, 'invalid_request_error');
    const r = await next({
      api: 'openai',
      messages: body.messages ?? [],
      tools: body.tools ?? [],
      body,
      headers: req.headers,
    });
    if (r.delayMs) await new Promise((resolve) => setTimeout(resolve, r.delayMs));
    if (r.error) return sendError(res, r.error.status, r.error.message);
    const model = typeof body.model === 'string' ? body.model : models[0]!;
    if (body.stream === true) stream(res, model, r, body.stream_options?.include_usage === true);
    else complete(res, model, r);
  }

  async function anthropicMessages(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body: Record<string, any>;
    try {
      body = JSON.parse(await readBody(req)) as Record<string, any>;
    } catch {
      return sendJson(res, 400, {
        type: 'error',
        error: { type: 'invalid_request_error', message: 'scripted model: the body is not JSON' },
      });
    }
    requests.push({ body, headers: req.headers });
    if (body.stream === true)
      return sendJson(res, 400, {
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: 'scripted model: streaming is not scripted for the Messages API',
        },
      });
    const r = await next({
      api: 'anthropic',
      messages: body.messages ?? [],
      tools: body.tools ?? [],
      body,
      headers: req.headers,
    });
    if (r.delayMs) await new Promise((resolve) => setTimeout(resolve, r.delayMs));
    if (r.error)
      return sendJson(res, r.error.status, { type: 'error', error: { type: 'api_error', message: r.error.message } });
    const calls = toolCallsOf(r);
    const content = [
      ...(r.text ? [{ type: 'text', text: r.text }] : []),
      ...calls.map((c) => ({
        type: 'tool_use',
        id: `toolu_${c.id}`,
        name: c.function.name,
        input: JSON.parse(c.function.arguments) as unknown,
      })),
    ];
    sendJson(res, 200, {
      id: `msg_${++seq}`,
      type: 'message',
      role: 'assistant',
      model: typeof body.model === 'string' ? body.model : models[0]!,
      content,
      stop_reason: calls.length ? 'tool_use' : 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 5 },
    });
  }

  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const handle = async () => {
      if (req.method === 'POST' && path === '/v1/chat/completions') return chatCompletion(req, res);
      if (req.method === 'POST' && path === '/v1/messages') return anthropicMessages(req, res);
      req.resume();
      if (req.method === 'GET' && path === '/v1/models') {
        return sendJson(res, 200, {
          object: 'list',
          data: models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'scripted' })),
        });
      }
      sendError(res, 404, `scripted model: no route ${req.method} ${path}`, 'invalid_request_error');
    };
    handle().catch((err: unknown) =>
      sendError(res, 500, `scripted model: the script threw: ${(err as Error).message ?? String(err)}`),
    );
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
