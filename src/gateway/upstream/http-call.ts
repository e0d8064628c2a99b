/**
 * Plain HTTP calls to upstream APIs (OpenAPI-described servers and the coding-agent
 * template) and the mapping of their answers to tool results (documented on AppServerUpstream
 * in openapi/management.yaml): a 2xx JSON object is the structuredContent, any other 2xx body
 * is wrapped as `{result}`, a non-2xx answer is `isError: true` with `{status, error}`.
 * Redirects are not followed, so the credential never leaves the registered origin. Requests
 * go through the pool's fetch, whose every connection passes the outbound policy (pool.ts).
 */
import type { CallResult } from '../types.js';
import type { Deadline } from './deadline.js';
import { readBounded } from '../../http/read-bounded.js';

/** Answers larger than this are refused rather than buffered. */
export const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
/** How much of a failed answer's body is shown in the tool error. */
const EXCERPT_CHARS = 2000;

/** Where an upstream's plain HTTP calls go: its base URL, the connection's credential headers, the pool's fetch. */
export interface HttpUpstream {
  baseUrl: string;
  credential: Record<string, string>;
  fetch: typeof fetch;
}

export interface HttpAnswer {
  status: number;
  contentType: string;
  text: string;
}

class TooLarge extends Error {}

async function readCapped(res: Response): Promise<string> {
  const body = await readBounded(res, MAX_RESPONSE_BYTES);
  if (body === 'too-large') throw new TooLarge();
  return body.toString('utf8');
}

/** One request under the deadline; network failures, refusals and timeouts throw (see upstreamFailure). */
export async function send(
  fetchImpl: typeof fetch,
  url: string,
  init: RequestInit,
  deadline: Deadline,
): Promise<HttpAnswer | 'too-large'> {
  const res = await fetchImpl(url, { ...init, redirect: 'manual', signal: deadline.signal });
  try {
    return { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await readCapped(res) };
  } catch (e) {
    if (e instanceof TooLarge) return 'too-large';
    throw e;
  }
}

const isJsonType = (ct: string) => /^application\/(?:[\w.+-]+\+)?json\b/i.test(ct.trim());
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function parsed(a: HttpAnswer): { ok: true; value: unknown } | { ok: false } {
  if (a.text === '' || !isJsonType(a.contentType)) return { ok: false };
  try {
    return { ok: true, value: JSON.parse(a.text) as unknown };
  } catch {
    return { ok: false };
  }
}

export function errorResult(status: number | undefined, message: string): CallResult {
  const body: Record<string, unknown> = status === undefined ? { error: message } : { status, error: message };
  return {
    content: [{ type: 'text', text: status === undefined ? message : `HTTP ${status}: ${message}` }],
    structuredContent: body,
    isError: true,
  };
}

/** The tool result of an answer; `transform` may reshape a 2xx JSON object. */
export function toResult(
  a: HttpAnswer | 'too-large',
  transform?: (v: Record<string, unknown>) => CallResult,
): CallResult {
  if (a === 'too-large')
    return errorResult(undefined, `the upstream answer is larger than ${MAX_RESPONSE_BYTES} bytes`);
  if (a.status < 200 || a.status > 299) {
    const excerpt = a.text.length > EXCERPT_CHARS ? `${a.text.slice(0, EXCERPT_CHARS)}…` : a.text;
    return errorResult(a.status, excerpt);
  }
  const json = parsed(a);
  if (json.ok && isObject(json.value) && transform) return transform(json.value);
  const structured = json.ok ? (isObject(json.value) ? json.value : { result: json.value }) : { result: a.text };
  const text = a.text !== '' ? a.text : JSON.stringify(structured);
  return { content: [{ type: 'text', text }], structuredContent: structured };
}
