/**
 * One session with a remote MCP server (spec section 7, application servers), over
 * Streamable HTTP or the legacy SSE transport, with the MCP SDK client. The session's HTTP
 * headers are fixed when it opens: the connection's credential and the forwarded headers
 * (spec section 5) — which is why both are part of the pool's session key.
 *
 * Results are passed through unchanged: requests use a loose result schema instead of
 * `Client.callTool`, which would validate structuredContent against the tool's outputSchema
 * and reject content types it does not know. Validation is the end client's business.
 *
 * Over Streamable HTTP, once the SDK client has opened the session (initialize,
 * notifications/initialized), tools/call and tools/list go the lean way of mcp-post.ts; the
 * legacy SSE transport, a redirecting upstream and anything the server sends on its own stay
 * with the SDK client.
 */
import type { Agent } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import { JSONRPCMessageSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Logger } from '../../config/logger.js';
import type { McpUpstream } from '../registry-validate.js';
import type { CallResult, ContentBlock, JsonSchemaObject, ToolDef } from '../types.js';
import type { Deadline } from './deadline.js';
import { RedirectAnswer, postRequest, postTarget, type PostTarget } from './mcp-post.js';

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
const NO_RECONNECT = {
  maxRetries: 0,
  initialReconnectionDelay: 1000,
  maxReconnectionDelay: 1000,
  reconnectionDelayGrowFactor: 1,
};
/** Ending a session tells the upstream (HTTP DELETE), without holding up eviction for long. */
const TERMINATE_TIMEOUT_MS = 2_000;
/**
 * First id of the lean path's requests. The SDK client numbers its own requests of the same
 * session (initialize, and any it still sends) from 0, and a session's request ids must not
 * repeat (MCP base protocol, "Requests"); this stays within 32-bit integers for strict servers.
 */
const LEAN_FIRST_ID = 1_000_000;

export interface McpSessionOptions {
  upstream: McpUpstream;
  /** Lower-case names: credential and forwarded headers. */
  headers: Record<string, string>;
  toolsTtlMs: number;
  timeoutMs: number;
  log: Logger;
  /** Keep-alive agent of the pool for the upstream's scheme; without it every request goes through the SDK. */
  agent?: Agent | undefined;
  /** The SDK transports' fetch: the pool's, so every connection passes the outbound policy. */
  fetch: typeof fetch;
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
  /** Set once a Streamable HTTP session is open, unless the upstream redirects our POSTs. */
  private lean: PostTarget | undefined;
  private nextId = LEAN_FIRST_ID;
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
    // registered origin: the credential never leaves it. Those hops go through opts.fetch too.
    const transport =
      opts.upstream.transport === 'sse'
        ? new SSEClientTransport(url, { requestInit, fetch: opts.fetch })
        : // A dropped standalone GET stream is not re-opened: calls ride on POSTs, and the tool
          // list cache has a TTL anyway.
          new StreamableHTTPClientTransport(url, { requestInit, reconnectionOptions: NO_RECONNECT, fetch: opts.fetch });
    const client = new Client(
      { name: 'switchyard-gateway', version: '0.1.0' },
      { capabilities: {}, jsonSchemaValidator: noValidation },
    );
    const session = new McpSession(client, transport, opts);
    client.onerror = (err) =>
      opts.log.debug({ err: { name: err.name, message: err.message } }, 'upstream transport error');
    client.onclose = () => session.onClose?.();
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      session.tools = undefined;
    });
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
    if (transport instanceof StreamableHTTPClientTransport && opts.agent) {
      // The negotiated version goes on every request after initialize (MCP Streamable HTTP,
      // "Protocol Version Header"); the session id likewise ("Session Management").
      session.lean = postTarget(url, opts.agent, opts.headers, {
        sessionId: transport.sessionId,
        protocolVersion: transport.protocolVersion,
      });
    }
    return session;
  }

  /**
   * What the server sends on a lean call's SSE stream besides our response goes to the SDK
   * client as if its transport had read it: it answers pings and the like as before, and
   * notifications/tools/list_changed still drops the tool cache.
   */
  private readonly fromServer = (message: Record<string, unknown>): void => {
    const parsed = JSONRPCMessageSchema.safeParse(message);
    if (parsed.success) this.transport.onmessage?.(parsed.data);
  };

  /** One request on the lean path when there is one, else through the SDK client. */
  private async request(
    method: string,
    params: Record<string, unknown>,
    deadline: Deadline,
  ): Promise<Record<string, unknown>> {
    const lean = this.lean;
    if (lean) {
      const id = this.nextId++;
      try {
        return await postRequest(lean, id, method, { params, until: deadline, other: this.fromServer });
      } catch (err) {
        if (!(err instanceof RedirectAnswer)) {
          if (deadline.aborted) this.cancel(id);
          throw err;
        }
        this.opts.log.debug({ status: err.status }, 'upstream redirects POSTs; calls go through the SDK client');
        this.lean = undefined;
      }
    }
    return this.client.request({ method, params }, LooseResult, {
      signal: deadline.signal,
      timeout: this.opts.timeoutMs + SDK_TIMEOUT_SLACK_MS,
    });
  }

  /**
   * A request given up (timeout, caller gone) is cancelled explicitly: closing its HTTP
   * request is not a cancellation (MCP Streamable HTTP, "Sending Messages to the Server";
   * MCP "Cancellation"). The SDK client does the same for its own requests.
   */
  private cancel(requestId: number): void {
    this.client
      .notification({ method: 'notifications/cancelled', params: { requestId, reason: 'the gateway gave up waiting' } })
      .catch((err: unknown) =>
        this.opts.log.debug(
          { err: err instanceof Error ? err.message : String(err) },
          'upstream cancellation not sent',
        ),
      );
  }

  /** The upstream's tools, cached for toolsTtlMs and dropped on notifications/tools/list_changed. */
  async listTools(deadline: Deadline): Promise<ToolDef[]> {
    if (this.tools && this.tools.until > Date.now()) return this.tools.list;
    const list: ToolDef[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_TOOL_PAGES; page++) {
      const result = await this.request('tools/list', cursor ? { cursor } : {}, deadline);
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

  /**
   * tools/call, the result passed through as the upstream sent it. An agent channel's
   * `metadata` travels as `_meta.sourceMetadata` (MCP request metadata), so tools see it.
   */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    deadline: Deadline,
    sourceMetadata?: Readonly<Record<string, unknown>>,
  ): Promise<CallResult> {
    const params: Record<string, unknown> = { name, arguments: args };
    if (sourceMetadata) params._meta = { sourceMetadata };
    const result = await this.request('tools/call', params, deadline);
    // content is required (MCP CallToolResult); an upstream that omits it gets an empty list.
    if (Array.isArray(result.content)) return result as unknown as CallResult;
    return { ...result, content: [] as ContentBlock[] } as CallResult;
  }

  /** Ends the session: DELETE for Streamable HTTP (MCP "Session Management"), then close. */
  async close(): Promise<void> {
    this.onClose = undefined;
    this.lean = undefined;
    const t = this.transport;
    if (t instanceof StreamableHTTPClientTransport && t.sessionId) {
      let timer: NodeJS.Timeout | undefined;
      const giveUp = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, TERMINATE_TIMEOUT_MS);
        timer.unref();
      });
      await Promise.race([t.terminateSession().catch(() => undefined), giveUp]);
      clearTimeout(timer);
    }
    await this.client.close().catch(() => undefined);
  }
}
