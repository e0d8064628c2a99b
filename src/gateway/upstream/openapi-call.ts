/**
 * Calling one operation of an OpenAPI-described server (argument shape in openapi-tools.ts).
 * Only the connection's credential is added; forwarded headers never reach these servers
 * (spec section 5).
 */
import { GatewayError, RPC, type CallResult } from '../types.js';
import type { Deadline } from './deadline.js';
import { send, toResult, type HttpUpstream } from './http-call.js';
import type { Operation } from './openapi-tools.js';

const invalid = (message: string) => new GatewayError(RPC.SERVER, message);

function scalar(v: unknown): string {
  return typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
}

/** Checks arguments against the operation: known names, required ones present. */
export function checkArgs(tool: string, op: Operation, args: Record<string, unknown>): void {
  for (const name of Object.keys(args)) {
    if (!op.args.has(name)) throw invalid(`tool ${tool} has no argument "${name.slice(0, 100)}"`);
  }
  for (const name of op.required) {
    if (args[name] === undefined || args[name] === null) throw invalid(`tool ${tool}: argument "${name}" is required`);
  }
}

/** The request URL and headers (credential headers last: nothing overrides them). */
export function buildRequest(
  baseUrl: string,
  op: Operation,
  args: Record<string, unknown>,
  credential: Record<string, string>,
): { url: string; init: RequestInit } {
  let path = op.path;
  const query = new URLSearchParams();
  const headers: Record<string, string> = { accept: 'application/json' };
  for (const p of op.params) {
    const v = args[p.arg];
    if (v === undefined || v === null) continue;
    if (p.in === 'path') {
      const text = Array.isArray(v) ? v.map(scalar).join(',') : scalar(v);
      path = path.split(`{${p.name}}`).join(encodeURIComponent(text));
    } else if (p.in === 'query') {
      if (Array.isArray(v)) {
        if (p.explode) for (const item of v) query.append(p.name, scalar(item));
        else query.append(p.name, v.map(scalar).join(','));
      } else if (typeof v === 'object' && p.explode) {
        for (const [k, inner] of Object.entries(v as Record<string, unknown>)) query.append(k, scalar(inner));
      } else {
        query.append(p.name, scalar(v));
      }
    } else {
      const text = Array.isArray(v) ? v.map(scalar).join(',') : scalar(v);
      if (/[\r\n\0]/.test(text)) throw invalid(`argument "${p.arg}" must not contain line breaks`);
      headers[p.name.toLowerCase()] = text;
    }
  }
  const init: RequestInit = { method: op.method, headers };
  if (op.body && args.body !== undefined) {
    headers['content-type'] = op.body.mediaType;
    init.body = JSON.stringify(args.body);
  }
  Object.assign(headers, credential);
  const qs = query.toString();
  return { url: `${baseUrl.replace(/\/+$/, '')}${path}${qs ? `?${qs}` : ''}`, init };
}

/** One operation called as tool `tool` with `args`. */
export interface OperationCall {
  tool: string;
  op: Operation;
  args: Record<string, unknown>;
}

export async function callOperation(
  upstream: HttpUpstream,
  call: OperationCall,
  deadline: Deadline,
): Promise<CallResult> {
  checkArgs(call.tool, call.op, call.args);
  const { url, init } = buildRequest(upstream.baseUrl, call.op, call.args, upstream.credential);
  return toResult(await send(upstream.fetch, url, init, deadline));
}
