/**
 * The lean hot path of an established Streamable HTTP session: one JSON-RPC request as one
 * POST over node:http(s) with the pool's keep-alive agent (MCP Streamable HTTP spec, "Sending
 * Messages to the Server"). The SDK client still opens the session; going around it for
 * calls avoids fetch and web streams per call and, above all, the SDK transport's habit of
 * passing one long-lived AbortSignal to every fetch, which gathers an abort listener per call
 * until garbage collection.
 *
 * Failures keep the shapes upstreamFailure (deadline.ts) and the pool already understand:
 * HTTP statuses as the SDK's StreamableHTTPError, upstream JSON-RPC errors as McpError,
 * network failures as node errors with their `code`.
 */
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  UnusableAnswer,
  mediaType,
  readJsonAnswer,
  readSseAnswer,
  readText,
  type OtherMessage,
  type RpcResponse,
} from './mcp-answer.js';

/** What ends a request early: the operation's Deadline (deadline.ts). */
export interface Abortable {
  readonly aborted: boolean;
  readonly reason: Error | undefined;
  onAbort(fn: (reason: Error) => void): () => void;
}

/** Where and how a session POSTs: fixed when the session opens. */
export interface PostTarget {
  request: typeof http.request;
  options: http.RequestOptions;
  /** Lower-case names: credential, forwarded and MCP transport headers. */
  headers: Readonly<Record<string, string>>;
}

/**
 * The upstream redirected the POST. The SDK follows same-origin redirects (and only those,
 * so the credential stays within the registered origin); the session leaves such calls to it.
 */
export class RedirectAnswer extends Error {
  constructor(readonly status: number) {
    super(`the upstream answered HTTP ${status} (redirect)`);
    this.name = 'RedirectAnswer';
  }
}

/** Characters of a failure body kept: enough for isSessionGone's "session" check. */
const FAILURE_TEXT_CHARS = 4096;

/**
 * The POST target of a session. Header order matters only for equal names: the MCP transport
 * headers come last, so nothing forwarded can stand in for them (forwarding.ts drops those
 * names anyway).
 */
export function postTarget(
  url: URL,
  agent: http.Agent,
  headers: Readonly<Record<string, string>>,
  { sessionId, protocolVersion }: { sessionId: string | undefined; protocolVersion: string | undefined },
): PostTarget {
  const all: Record<string, string> = {
    ...headers,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  if (sessionId) all['mcp-session-id'] = sessionId;
  if (protocolVersion) all['mcp-protocol-version'] = protocolVersion;
  return {
    request: url.protocol === 'https:' ? https.request : http.request,
    options: {
      protocol: url.protocol,
      hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      agent,
    },
    headers: all,
  };
}

/** The outcome of one answer: a JSON-RPC response, or the error the caller sees. */
function answer(res: IncomingMessage, id: number, other: OtherMessage): Promise<RpcResponse> {
  const status = res.statusCode ?? 0;
  if (status >= 300 && status < 400) {
    res.resume();
    return Promise.reject(new RedirectAnswer(status));
  }
  if (status < 200 || status > 299) {
    // Same shape as the SDK's, so httpStatusOf/isSessionGone (deadline.ts) read it unchanged.
    return readText(res, FAILURE_TEXT_CHARS).then((text) => {
      throw new StreamableHTTPError(status, `Error POSTing to endpoint: ${text}`);
    });
  }
  const type = mediaType(res.headers['content-type']);
  if (type === 'application/json') return readJsonAnswer(res, id, other);
  if (type === 'text/event-stream') return readSseAnswer(res, id, other);
  // 202 Accepted (no body) or another type: a request must get a response (spec).
  res.resume();
  return Promise.reject(new UnusableAnswer(`unexpected answer (HTTP ${status}, content type ${type || 'none'})`));
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The result of a JSON-RPC response; its error as the McpError the SDK client would raise. */
function resultOf(r: RpcResponse): Record<string, unknown> {
  if (r.error !== undefined) {
    const e = r.error;
    if (!isObject(e) || typeof e.code !== 'number' || typeof e.message !== 'string')
      throw new UnusableAnswer('malformed JSON-RPC error');
    throw McpError.fromError(e.code, e.message, e.data);
  }
  if (!isObject(r.result)) throw new UnusableAnswer('the JSON-RPC result is not an object');
  return r.result;
}

/**
 * Sends `method` with `id` and resolves with the result object. `until` (the operation's
 * Deadline) aborts the HTTP request; its hook is removed when the call settles. A stale
 * keep-alive socket (the upstream closed it while idle) is retried once on a fresh one, as
 * Node's documentation advises for `reusedSocket`: the request never reached the server.
 */
export function postRequest(
  target: PostTarget,
  id: number,
  method: string,
  { params, until, other }: { params: Record<string, unknown>; until: Abortable; other: OtherMessage },
): Promise<Record<string, unknown>> {
  // Kept a string: Node joins a string body with the request head into one chunk.
  const body = JSON.stringify({ jsonrpc: '2.0', id, method, params });
  const length = String(Buffer.byteLength(body, 'utf8'));
  return new Promise<Record<string, unknown>>((resolve, reject) => {
    if (until.aborted) {
      reject(until.reason!);
      return;
    }
    let settled = false;
    let req: http.ClientRequest | undefined;
    const finish = (err: Error | undefined, value?: Record<string, unknown>) => {
      if (settled) return;
      settled = true;
      off();
      if (err) reject(err);
      else resolve(value!);
    };
    const off = until.onAbort((reason) => {
      finish(reason);
      req?.destroy();
    });

    const send = ({ retried }: { retried: boolean }) => {
      const r = target.request({ ...target.options, headers: { ...target.headers, 'content-length': length } });
      req = r;
      let answered = false;
      r.on('error', (err: NodeJS.ErrnoException) => {
        // After the response head, failures surface on the response (mcp-answer.ts).
        if (answered || settled) return;
        if (!retried && r.reusedSocket && err.code === 'ECONNRESET') {
          send({ retried: true });
          return;
        }
        finish(err);
      });
      r.on('response', (res) => {
        answered = true;
        answer(res, id, other).then(
          (response) => {
            try {
              finish(undefined, resultOf(response));
            } catch (err) {
              finish(err as Error);
            }
          },
          (err: unknown) => finish(err as Error),
        );
      });
      r.end(body);
    };
    send({ retried: false });
  });
}
