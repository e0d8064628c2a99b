/** Writes a handler's Reply on a node:http response (JSON unless the reply says otherwise). */
import type { ServerResponse } from 'node:http';
import { pipeline } from 'node:stream';
import { contentType as withCharset } from 'mime-types';
import type { Reply } from './types.js';

/** `text/markdown` → `text/markdown; charset=utf-8` where the type is textual (as mime-db says). */
export function contentTypeHeader(type: string): string {
  return (type.includes(';') ? type : withCharset(type)) || type;
}

const JSON_TYPE = 'application/json; charset=utf-8';

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  {
    headers,
    type = JSON_TYPE,
  }: { headers?: Record<string, string | number | string[]> | undefined; type?: string } = {},
): void {
  const text = JSON.stringify(body ?? null);
  res.statusCode = status;
  if (headers) for (const k in headers) res.setHeader(k, headers[k]!);
  res.setHeader('Content-Type', type);
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

export function writeReply(res: ServerResponse, reply: Reply): void {
  const isJson = !reply.stream && (reply.contentType === undefined || reply.contentType.includes('json'));
  const empty =
    !reply.stream &&
    (reply.status === 204 || reply.status === 304 || (reply.body === undefined && reply.contentType === undefined));
  if (isJson && !empty) {
    sendJson(res, reply.status, reply.body, {
      headers: reply.headers,
      type: reply.contentType ? contentTypeHeader(reply.contentType) : JSON_TYPE,
    });
    return;
  }
  res.statusCode = reply.status;
  for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
  if (empty) {
    res.end();
    return;
  }
  if (reply.contentType) res.setHeader('Content-Type', contentTypeHeader(reply.contentType));
  if (reply.stream) {
    // pipeline destroys the source when the client goes away mid-download (no file handle left open).
    pipeline(reply.stream, res, () => undefined);
    return;
  }
  const body = typeof reply.body === 'string' || Buffer.isBuffer(reply.body) ? reply.body : String(reply.body);
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}
