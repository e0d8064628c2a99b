/**
 * Reading the answer to one JSON-RPC request POSTed to a Streamable HTTP MCP server (MCP
 * Streamable HTTP spec, "Sending Messages to the Server"): the body is either one JSON
 * object (`application/json`) or an SSE stream (`text/event-stream`) that may carry the
 * server's own requests and notifications before the response to ours. Both are bounded by
 * the same 16 MiB rule as other upstream answers.
 */
import type { IncomingMessage } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import { createParser } from 'eventsource-parser';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { MAX_RESPONSE_BYTES } from './http-call.js';

/** An answer larger than MAX_RESPONSE_BYTES: refused rather than buffered. */
export class AnswerTooLarge extends Error {
  constructor() {
    super(`the upstream answer is larger than ${MAX_RESPONSE_BYTES} bytes`);
    this.name = 'AnswerTooLarge';
  }
}

/** An answer that is not a JSON-RPC response to our request (upstreamFailure: "unusable answer"). */
export class UnusableAnswer extends Error {
  constructor(why: string) {
    super(why);
    this.name = 'UnusableAnswer';
  }
}

/**
 * The upstream ended the body or the socket before our response arrived. No `cause`: a socket
 * error code on it would make the failure read as "unreachable" although the request got there.
 */
export const closedEarly = (): McpError =>
  new McpError(ErrorCode.ConnectionClosed, 'the upstream closed the connection before answering');

/** A JSON-RPC response to one of our requests. */
export interface RpcResponse {
  result?: unknown;
  error?: unknown;
}

/** Server-originated messages found on the way (requests, notifications). */
export type OtherMessage = (message: Record<string, unknown>) => void;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The response to `id`, or undefined for any other message (handed to `other`). */
function match(msg: unknown, id: number, other: OtherMessage): RpcResponse | undefined {
  if (!isObject(msg)) return undefined;
  // A numeric id echoed as a string is still ours (the SDK client accepts that too).
  if ((msg.id === id || msg.id === String(id)) && ('result' in msg || 'error' in msg)) return msg;
  // Responses to requests other than ours have no one waiting for them here.
  if (typeof msg.method === 'string') other(msg);
  return undefined;
}

/** `application/json; charset=utf-8` → `application/json`. */
export function mediaType(header: string | undefined): string {
  if (!header) return '';
  const semi = header.indexOf(';');
  return (semi < 0 ? header : header.slice(0, semi)).trim().toLowerCase();
}

/** How long an SSE answer stream may stay open after our response before it is cut off. */
const STREAM_GRACE_MS = 200;

/**
 * Consumes `res` and settles once: `onData` returns a value to finish early; `onEnd` gives the
 * outcome at the end of the body. Bytes are counted against MAX_RESPONSE_BYTES.
 */
function consume<T>(res: IncomingMessage, onData: (chunk: Buffer) => T | undefined, onEnd: () => T): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let size = 0;
    let settled = false;
    let grace: NodeJS.Timeout | undefined;
    const settle = (err: Error | undefined, value?: T) => {
      if (settled) return;
      settled = true;
      if (err) reject(err);
      else resolve(value as T);
    };
    const declared = Number(res.headers['content-length'] ?? NaN);
    if (declared > MAX_RESPONSE_BYTES) {
      res.destroy();
      settle(new AnswerTooLarge());
      return;
    }
    res.on('data', (chunk: Buffer) => {
      if (settled) {
        // Anything after our response (the spec says the server SHOULD close the stream
        // then) is not waited for: the socket is given up instead of being drained.
        res.destroy();
        return;
      }
      size += chunk.length;
      if (size > MAX_RESPONSE_BYTES) {
        res.destroy();
        settle(new AnswerTooLarge());
        return;
      }
      try {
        const v = onData(chunk);
        if (v !== undefined) {
          settle(undefined, v);
          // A server that ends the stream right after the response leaves a reusable
          // keep-alive socket; one that keeps it open is cut off shortly after.
          if (!res.complete) grace = setTimeout(() => res.destroy(), STREAM_GRACE_MS);
        }
      } catch (err) {
        res.destroy();
        settle(err as Error);
      }
    });
    res.on('end', () => {
      clearTimeout(grace);
      try {
        settle(undefined, onEnd());
      } catch (err) {
        settle(err as Error);
      }
    });
    // A socket closed mid-body: 'error' (ECONNRESET "aborted") and/or 'close' without 'end'.
    // (The error is built only when it is needed: most responses close after settling.)
    res.on('error', () => {
      if (!settled) settle(closedEarly());
    });
    res.on('close', () => {
      clearTimeout(grace);
      if (!settled) settle(closedEarly());
    });
  });
}

/** A JSON body: one message or a batch (JSON-RPC 2.0 section 6). */
export function readJsonAnswer(res: IncomingMessage, id: number, other: OtherMessage): Promise<RpcResponse> {
  const chunks: Buffer[] = [];
  return consume<RpcResponse>(
    res,
    (chunk) => {
      chunks.push(chunk);
      return undefined;
    },
    () => {
      const text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw new UnusableAnswer('the upstream answer is not JSON');
      }
      let found: RpcResponse | undefined;
      for (const msg of Array.isArray(body) ? (body as unknown[]) : [body]) found = match(msg, id, other) ?? found;
      if (!found) throw new UnusableAnswer('the upstream answer holds no response to the request');
      return found;
    },
  );
}

/**
 * An SSE body (MCP Streamable HTTP: "the server MAY send JSON-RPC requests and notifications
 * before sending the JSON-RPC response"), read until the response to `id`. Events of a type
 * other than `message` are skipped, as the SDK client does.
 */
export function readSseAnswer(res: IncomingMessage, id: number, other: OtherMessage): Promise<RpcResponse> {
  const decoder = new StringDecoder('utf8');
  let found: RpcResponse | undefined;
  const parser = createParser({
    onEvent(event) {
      if (found || (event.event !== undefined && event.event !== 'message')) return;
      let msg: unknown;
      try {
        msg = JSON.parse(event.data);
      } catch {
        // Malformed or empty data (a priming event carries only an id) is skipped, as the SDK
        // client does; the response may still follow.
        return;
      }
      found = match(msg, id, other);
    },
  });
  return consume<RpcResponse>(
    res,
    (chunk) => {
      parser.feed(decoder.write(chunk));
      return found;
    },
    () => {
      parser.feed(decoder.end());
      parser.reset({ consume: true });
      if (!found) throw closedEarly();
      return found;
    },
  );
}

/** Up to `max` characters of a (failure) body, for the error message's status check only. */
export function readText(res: IncomingMessage, max: number): Promise<string> {
  let text = '';
  const decoder = new StringDecoder('utf8');
  return consume<string>(
    res,
    (chunk) => {
      text += decoder.write(chunk);
      return text.length >= max ? text.slice(0, max) : undefined;
    },
    () => text + decoder.end(),
  ).catch(() => text);
}
