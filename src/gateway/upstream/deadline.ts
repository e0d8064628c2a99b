/**
 * Upstream deadlines and failure messages (spec Errors: validation and timeouts are JSON-RPC
 * -32000). Every upstream operation runs under one Deadline: the configured timeout combined
 * with the call's own signal (client gone, call deadline). Failures become GatewayError
 * messages that say what failed — never a stack trace, a URL or a secret; a connection the
 * outbound policy refused says so, with the reason.
 */
import { McpError, ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SseError } from '@modelcontextprotocol/sdk/client/sse.js';
import type { Logger } from '../../config/logger.js';
import { OutboundRefusedError } from '../../kernel/outbound.js';
import { GatewayError, RPC } from '../types.js';
import { AnswerTooLarge } from './mcp-answer.js';

class DeadlineExpired extends Error {
  constructor() {
    super('upstream deadline expired');
    this.name = 'DeadlineExpired';
  }
}

/**
 * One operation's deadline. `done()` must be called when the operation ends: the timer is
 * cleared and the caller's signal released, so nothing aborts (and no MCP cancellation is sent)
 * after a request completed. An AbortSignal is made only for consumers that need one (fetch,
 * the SDK client): an AbortController per call is a measurable cost on the proxied hot path,
 * which subscribes with `onAbort` instead.
 */
export class Deadline {
  private ac: AbortController | undefined;
  private readonly timer: NodeJS.Timeout;
  private readonly onParentAbort: () => void;
  private hooks: Set<(reason: Error) => void> | undefined;
  private abortReason: Error | undefined;
  /** True once the deadline ended the operation (timeout or caller's signal). */
  aborted = false;
  timedOut = false;

  constructor(
    private readonly parent: AbortSignal,
    readonly timeoutMs: number,
  ) {
    this.onParentAbort = () => this.abort(parent.reason as Error);
    if (parent.aborted) this.abort(parent.reason as Error);
    else parent.addEventListener('abort', this.onParentAbort, { once: true });
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.abort(new DeadlineExpired());
    }, timeoutMs);
  }

  /** Why the operation was ended (undefined while it runs). */
  get reason(): Error | undefined {
    return this.abortReason;
  }

  get signal(): AbortSignal {
    if (!this.ac) {
      this.ac = new AbortController();
      if (this.aborted) this.ac.abort(this.abortReason);
    }
    return this.ac.signal;
  }

  /** Calls `fn` once if the deadline ends the operation; the returned function unsubscribes. */
  onAbort(fn: (reason: Error) => void): () => void {
    (this.hooks ??= new Set()).add(fn);
    return () => {
      this.hooks?.delete(fn);
    };
  }

  private abort(reason: Error): void {
    if (this.aborted) return;
    this.aborted = true;
    this.abortReason = reason;
    this.ac?.abort(reason);
    const hooks = this.hooks;
    this.hooks = undefined;
    if (hooks) for (const fn of hooks) fn(reason);
  }

  /** Waits for a promise shared with other callers (a session's connect) until this deadline. */
  race<T>(p: Promise<T>): Promise<T> {
    if (this.aborted) return Promise.reject(this.abortReason!);
    return new Promise<T>((resolve, reject) => {
      const off = this.onAbort(reject);
      p.then(
        (v) => {
          off();
          resolve(v);
        },
        (e: unknown) => {
          off();
          reject(e as Error);
        },
      );
    });
  }

  done(): void {
    clearTimeout(this.timer);
    this.parent.removeEventListener('abort', this.onParentAbort);
  }
}

function httpStatusOf(err: unknown): number | undefined {
  if (err instanceof StreamableHTTPError || err instanceof SseError)
    return typeof err.code === 'number' && err.code > 0 ? err.code : undefined;
  // The SSE client's POST failure is a plain Error naming the status.
  const m = err instanceof Error ? /\(HTTP (\d{3})\)/.exec(err.message) : null;
  return m ? Number(m[1]) : undefined;
}

/**
 * The upstream forgot our session: HTTP 404 on a request carrying a session id (MCP Streamable
 * HTTP spec, "Session Management"). Some servers (the reference "everything" server among
 * them) answer 400 "No valid session ID" instead; that is treated the same way.
 */
export function isSessionGone(err: unknown): boolean {
  const status = httpStatusOf(err);
  if (status === 404) return true;
  return status === 400 && err instanceof Error && /session/i.test(err.message);
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'EPIPE',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
]);

function networkCode(err: unknown): string | undefined {
  // The SSE client's EventSource keeps only the text of the fetch failure.
  if (err instanceof SseError) {
    const named = /\b(E[A-Z_]+|UND_ERR_[A-Z_]+)\b/.exec(err.message)?.[1];
    if (named && NETWORK_CODES.has(named)) return named;
  }
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return code;
    const errors = (e as { errors?: unknown }).errors; // AggregateError of happy-eyeballs attempts
    if (Array.isArray(errors))
      for (const inner of errors) {
        const c = networkCode(inner);
        if (c) return c;
      }
  }
  return undefined;
}

/** The text of OutboundRefusedError (src/kernel/outbound.ts) inside a message that kept only text. */
const REFUSED_TEXT = /Outbound request to (\S+) refused: (.+?) \(allow it with OUTBOUND_ALLOWLIST\)/;

/**
 * The outbound policy's refusal behind a failure: the error itself, one of its causes (fetch
 * wraps it in "fetch failed"), an attempt of an AggregateError, or its text in the message (the
 * SSE client's EventSource keeps only the text of a fetch failure).
 */
function refusalOf(err: unknown, depth = 0): { address: string; reason: string } | undefined {
  if (!err || depth > 5) return undefined;
  if (err instanceof OutboundRefusedError && err.detail) return err.detail;
  const text = err instanceof Error ? REFUSED_TEXT.exec(err.message) : null;
  if (text) return { address: text[1]!, reason: text[2]! };
  const errors = (err as { errors?: unknown }).errors;
  if (Array.isArray(errors)) {
    for (const inner of errors) {
      const found = refusalOf(inner, depth + 1);
      if (found) return found;
    }
  }
  return refusalOf((err as { cause?: unknown }).cause, depth + 1);
}

/** "MCP error -32602: Tool x not found" → "Tool x not found". */
const mcpMessage = (e: McpError) => e.message.replace(/^MCP error -?\d+: /, '');

/**
 * A GatewayError for a failed upstream operation. `what` names it, e.g. "upstream github
 * tools/call search". Upstream JSON-RPC errors keep their code and message.
 */
export function upstreamFailure(err: unknown, what: string, deadline: Deadline, log: Logger): GatewayError {
  if (err instanceof GatewayError) return err;
  const timedOut = () => new GatewayError(RPC.SERVER, `${what} timed out after ${deadline.timeoutMs} ms`);
  if (deadline.timedOut || err instanceof DeadlineExpired) return timedOut();
  // The SDK reports any abort as RequestTimeout: the caller's signal is checked first.
  if (deadline.aborted) return new GatewayError(RPC.SERVER, `${what} was cancelled: the call was aborted`);
  if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) return timedOut();
  const refused = refusalOf(err);
  if (refused) {
    // The address is for the operator's log; the caller learns why, not where (no URL, no address).
    log.warn({ what, address: refused.address, reason: refused.reason }, 'upstream refused by the outbound policy');
    return new GatewayError(
      RPC.SERVER,
      `${what} failed: the outbound policy refuses the upstream's address (${refused.reason}; allow it with OUTBOUND_ALLOWLIST)`,
    );
  }
  const net = networkCode(err);
  if (net) return new GatewayError(RPC.SERVER, `${what} failed: the upstream is unreachable (${net})`);
  const status = httpStatusOf(err);
  if (status === 401 || status === 403) {
    return new GatewayError(
      RPC.SERVER,
      `${what} failed: the upstream refused the connection's credential (HTTP ${status})`,
    );
  }
  if (status !== undefined) return new GatewayError(RPC.SERVER, `${what} failed: the upstream answered HTTP ${status}`);
  if (err instanceof AnswerTooLarge) return new GatewayError(RPC.SERVER, `${what} failed: ${err.message}`);
  if (err instanceof McpError) {
    if (err.code === ErrorCode.ConnectionClosed)
      return new GatewayError(RPC.SERVER, `${what} failed: the upstream closed the connection`);
    return new GatewayError(err.code, `${what}: ${mcpMessage(err)}`, { upstream: true });
  }
  if ((err instanceof TypeError || err instanceof SseError) && /fetch failed/i.test(err.message))
    return new GatewayError(RPC.SERVER, `${what} failed: the upstream is unreachable`);
  log.warn(
    { err: err instanceof Error ? { name: err.name, message: err.message } : String(err), what },
    'upstream call failed',
  );
  return new GatewayError(RPC.SERVER, `${what} failed: the upstream sent an unusable answer`);
}
