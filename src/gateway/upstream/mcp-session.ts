/**
 * One session with a remote MCP server (spec section 7, application servers), over
 * Streamable HTTP or the legacy SSE transport, with the MCP SDK client. The session's HTTP
 * headers are fixed when it opens: the connection's credential and the forwarded headers
 * (spec section 5) — which is why both are part of the pool's session key.
 *
 * Results are passed through unchanged: requests use a loose result schema instead of
 * `Client.callTool`, which would validate structuredContent against the tool's outputSchema
 * and reject content types it does not know. Validation is the end client's business.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Logger } from '../../config/logger.js';
import type { McpUpstream } from '../registry-validate.js';
import type { CallResult, ContentBlock, JsonSchemaObject, ToolDef } from '../types.js';

/** Anything object-shaped: the gateway does not re-validate what it passes through. */
const LooseResult = z.looseObject({});

/** The SDK client would build an Ajv instance per session for outputSchema checks we skip. */
const noValidation: jsonSchemaValidator = {
  getValidator<T>(): JsonSchemaValidator<T> {
    return (input: unknown) => ({ valid: true, data: input as T, errorMessage: undefined });
  },
};

/** Pages of tools/list read at most (a guard against an upstream that never stops paging). */
const MAX_TOOL_PAGES = 50;
/** The SDK's own request timeout is only a backstop behind our Deadline. */
const SDK_TIMEOUT_SLACK_MS = 5_000;
const NO_RECONNECT = { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 };
/** Ending a session tells the upstream (HTTP DELETE), without holding up eviction for long. */
const TERMINATE_TIMEOUT_MS = 2_000;

export interface McpSessionOptions {
  upstream: McpUpstream;
  /** Lower-case names: credential and forwarded headers. */
  headers: Record<string, string>;
  toolsTtlMs: number;
  timeoutMs: number;
  log: Logger;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function toToolDef(t: Record<string, unknown>): ToolDef | undefined {
  if (typeof t.name !== 'string') return undefined;
  const input = isObject(t.inputSchema) ? t.inputSchema : {};
  const def: ToolDef = {
    name: t.name,
    description: typeof t.description === 'string' ? t.description : '',
    inputSchema: { ...input, type: 'object' } as JsonSchemaObject,
  };
  if (typeof t.title === 'string') def.title = t.title;
  if (isObject(t.outputSchema)) def.outputSchema = t.outputSchema as JsonSchemaObject;
  if (isObject(t.annotations)) def.annotations = t.annotations;
  return def;
}

export class McpSession {
  private tools: { list: ToolDef[]; until: number } | undefined;
  /** Called once when the transport closes on its own (stream ended, upstream went away). */
  onClose: (() => void) | undefined;

  private constructor(
    private readonly client: Client,
    private readonly transport: StreamableHTTPClientTransport | SSEClientTransport,
    private readonly opts: McpSessionOptions,
  ) {}

  /**
   * Opens the transport and runs the MCP initialize handshake, within timeoutMs. The connect
   * is shared by concurrent callers, so no single caller's signal may abort it.
   */
  static async open(opts: McpSessionOptions): Promise<McpSession> {
    const url = new URL(opts.upstream.url);
    const requestInit: RequestInit = { headers: opts.headers };
    // The SDK's default redirect policy ('same-origin') follows only redirects within the
    // registered origin: the credential never leaves it.
    const transport = opts.upstream.transport === 'sse'
      ? new SSEClientTransport(url, { requestInit })
      // A dropped standalone GET stream is not re-opened: calls ride on POSTs, and the tool
      // list cache has a TTL anyway.
      : new StreamableHTTPClientTransport(url, { requestInit, reconnectionOptions: NO_RECONNECT });
    const client = new Client({ name: 'switchyard-gateway', version: '0.1.0' }, { capabilities: {}, jsonSchemaValidator: noValidation });
    const session = new McpSession(client, transport, opts);
    client.onerror = (err) => opts.log.debug({ err: { name: err.name, message: err.message } }, 'upstream transport error');
    client.onclose = () => session.onClose?.();
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => { session.tools = undefined; });
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(new Error('connect timed out')), opts.timeoutMs);
    try {
      await client.connect(transport, { signal: ac.signal, timeout: opts.timeoutMs + SDK_TIMEOUT_SLACK_MS });
    } catch (err) {
      await client.close().catch(() => undefined);
      throw err;
    } finally {
      clearTimeout(timer);
    }
    return session;
  }

  /** The upstream's tools, cached for toolsTtlMs and dropped on notifications/tools/list_changed. */
  async listTools(signal: AbortSignal): Promise<ToolDef[]> {
    if (this.tools && this.tools.until > Date.now()) return this.tools.list;
    const list: ToolDef[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_TOOL_PAGES; page++) {
      const result = await this.client.request(
        { method: 'tools/list', params: cursor ? { cursor } : {} },
        LooseResult,
        { signal, timeout: this.opts.timeoutMs + SDK_TIMEOUT_SLACK_MS },
      );
      const tools = Array.isArray(result.tools) ? result.tools : [];
      for (const t of tools) {
        const def = isObject(t) ? toToolDef(t) : undefined;
        if (def) list.push(def);
      }
      cursor = typeof result.nextCursor === 'string' && result.nextCursor !== '' ? result.nextCursor : undefined;
      if (!cursor) break;
    }
    if (this.opts.toolsTtlMs > 0) this.tools = { list, until: Date.now() + this.opts.toolsTtlMs };
    return list;
  }

  /** tools/call, the result passed through as the upstream sent it. */
  async callTool(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<CallResult> {
    const result = await this.client.request(
      { method: 'tools/call', params: { name, arguments: args } },
      LooseResult,
      { signal, timeout: this.opts.timeoutMs + SDK_TIMEOUT_SLACK_MS },
    );
    const content = Array.isArray(result.content) ? (result.content as ContentBlock[]) : [];
    return { ...result, content } as CallResult;
  }

  /** Ends the session: DELETE for Streamable HTTP (MCP "Session Management"), then close. */
  async close(): Promise<void> {
    this.onClose = undefined;
    const t = this.transport;
    if (t instanceof StreamableHTTPClientTransport && t.sessionId) {
      let timer: NodeJS.Timeout | undefined;
      const giveUp = new Promise<void>((resolve) => { timer = setTimeout(resolve, TERMINATE_TIMEOUT_MS); timer.unref(); });
      await Promise.race([t.terminateSession().catch(() => undefined), giveUp]);
      clearTimeout(timer);
    }
    await this.client.close().catch(() => undefined);
  }
}
