/**
 * `http` steps (schema httpStep): a declarative request whose url, headers, query and body are
 * templated against {inputs, steps}; the response body is the step result.
 * - JSON responses → json; text/markdown → markdown; other text → plaintext; a declared
 *   resultType overrides (json must then parse).
 * - Binary responses, and text over the 1 MiB result limit, become the file `response.<ext>`
 *   with a short plaintext result. Bodies over 10 MiB fail the step.
 * - Non-2xx → FAILED, exit code 1, `HTTP <status>: <first 500 characters>`.
 * - Time limit: the step's timeoutMs (default 30 s) and never beyond the run's signal.
 * - Destinations: the service's outbound policy (OUTBOUND_ALLOWLIST, src/kernel/outbound.ts);
 *   a refused address fails the step with the reason, nothing is sent.
 */
import type { WorkflowStep } from '../definition.js';
import { extensionFor } from '../sandbox/limits.js';
import { readBounded } from '../../http/read-bounded.js';
import { OutboundRefusedError } from '../../kernel/outbound.js';
import { injectFetchHeaders, markSpanError, SpanKind, withSpan } from '../../kernel/tracing.js';
import { renderTemplates, TemplateError } from '../template.js';
import { templateData } from './context.js';
import {
  EXIT,
  failed,
  stoppedByRun,
  type ExecutedStep,
  type ResultType,
  type StepDeps,
  type StepRunContext,
} from './types.js';

const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
const DEFAULT_TIMEOUT_MS = 30_000;
const MAX_BODY_BYTES = 10 * 1024 * 1024;
const MAX_RESULT_BYTES = 1024 * 1024;
const ERROR_EXCERPT = 500;

class StepFailure extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
  ) {
    super(message);
  }
}

const invalid = (message: string) => new StepFailure(EXIT.invalid, `Invalid step: ${message}`);

function text(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

interface Prepared {
  url: URL;
  init: RequestInit;
  timeoutMs: number;
}

async function prepare(step: WorkflowStep, ctx: StepRunContext): Promise<Prepared> {
  const request = step.request as Record<string, unknown> | undefined;
  if (!request || typeof request !== 'object') throw invalid('request must be an object');
  const method = request.method;
  if (typeof method !== 'string' || !METHODS.has(method))
    throw invalid('request.method must be one of GET, POST, PUT, PATCH, DELETE');
  const timeout = step.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 1 || timeout > 300_000)
    throw invalid('timeoutMs must be an integer from 1 to 300000');

  const rendered = (await renderTemplates(
    { url: request.url, headers: request.headers ?? {}, query: request.query ?? {} },
    templateData(ctx),
  )) as Record<string, unknown>;
  const body = request.body === undefined ? undefined : await renderTemplates(request.body, templateData(ctx));
  let url: URL;
  try {
    url = new URL(String(rendered.url ?? ''));
  } catch {
    throw invalid(`request.url is not an absolute URL: ${String(rendered.url ?? '').slice(0, 200)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw invalid(`request.url must use http or https, not ${url.protocol}`);
  for (const [k, v] of Object.entries((rendered.query ?? {}) as Record<string, unknown>)) {
    for (const item of Array.isArray(v) ? v : [v])
      if (item !== undefined && item !== null) url.searchParams.append(k, text(item));
  }
  const headers = new Headers();
  try {
    for (const [k, v] of Object.entries((rendered.headers ?? {}) as Record<string, unknown>))
      if (v !== undefined && v !== null) headers.set(k, text(v));
  } catch (err) {
    throw invalid(`bad request header: ${(err as Error).message}`);
  }
  let payload: string | undefined;
  if (body !== undefined) {
    if (method === 'GET') throw invalid('a GET request cannot have a body');
    payload = typeof body === 'string' ? body : JSON.stringify(body);
    if (!headers.has('content-type'))
      headers.set('content-type', typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json');
  }
  return { url, init: { method, headers, body: payload, redirect: 'follow' }, timeoutMs: timeout };
}

/** Reads at most MAX_BODY_BYTES; more fails the step instead of filling the service's memory. */
async function readBody(res: Response): Promise<Buffer> {
  const body = await readBounded(res, MAX_BODY_BYTES);
  if (body === 'too-large')
    throw new StepFailure(EXIT.error, `The response body is over the ${MAX_BODY_BYTES}-byte limit`);
  return body;
}

function decode(data: Buffer, contentType: string): string {
  const charset = /charset="?([\w-]+)"?/i.exec(contentType)?.[1];
  try {
    return new TextDecoder(charset ?? 'utf-8').decode(data);
  } catch {
    return new TextDecoder('utf-8').decode(data);
  }
}

type Kind = 'json' | 'markdown' | 'text' | 'binary';

function kindOf(contentType: string, data: Buffer): Kind {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (type === 'application/json' || type.endsWith('+json')) return 'json';
  if (type === 'text/markdown') return 'markdown';
  if (
    type.startsWith('text/') ||
    type.endsWith('+xml') ||
    /^application\/(xml|javascript|x-www-form-urlencoded|yaml|x-yaml|x-ndjson)$/.test(type)
  )
    return 'text';
  if (type === '') {
    // No type given: text when it decodes as UTF-8 without NULs.
    try {
      const s = new TextDecoder('utf-8', { fatal: true }).decode(data);
      return s.includes('\u0000') ? 'binary' : 'text';
    } catch {
      return 'binary';
    }
  }
  return 'binary';
}

function asFile(data: Buffer, contentType: string, why: string, durationMs: number): ExecutedStep {
  const mimeType = contentType.split(';')[0]!.trim() || 'application/octet-stream';
  const fileName = `response.${extensionFor(mimeType)}`;
  return {
    status: 'COMPLETE',
    resultType: 'plaintext',
    exitCode: EXIT.ok,
    durationMs,
    logs: [],
    result: `${why} response (${mimeType}, ${data.length} bytes) saved as ${fileName}`,
    files: [{ fileName, mimeType, data }],
  };
}

function toResult(res: Response, data: Buffer, declared: unknown, durationMs: number): ExecutedStep {
  const contentType = res.headers.get('content-type') ?? '';
  const kind = kindOf(contentType, data);
  if (kind === 'binary') return asFile(data, contentType, 'Binary', durationMs);
  if (data.length > MAX_RESULT_BYTES)
    return asFile(data, contentType || 'text/plain', `Large (over ${MAX_RESULT_BYTES} bytes)`, durationMs);
  const body = decode(data, contentType);
  const wantJson = declared === 'json' || (declared === undefined && kind === 'json');
  let resultType: ResultType = kind === 'markdown' ? 'markdown' : 'plaintext';
  if (declared === 'markdown' || declared === 'plaintext') resultType = declared;
  let result = body;
  if (wantJson) {
    try {
      result = JSON.stringify(JSON.parse(body));
      resultType = 'json';
    } catch {
      throw new StepFailure(EXIT.error, `The response is not valid JSON (content-type ${contentType || 'none'})`);
    }
  }
  return { status: 'COMPLETE', resultType, result, exitCode: EXIT.ok, durationMs, files: [], logs: [] };
}

export async function runHttpStep(step: WorkflowStep, ctx: StepRunContext, deps: StepDeps): Promise<ExecutedStep> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let prepared: Prepared | undefined;
  try {
    prepared = await prepare(step, ctx);
    if (deps.signal?.aborted) return stoppedByRun(deps.signal, elapsed());
    const timeout = AbortSignal.timeout(prepared.timeoutMs);
    const signal = deps.signal ? AbortSignal.any([deps.signal, timeout]) : timeout;
    const { url, init } = prepared;
    // A client span; the request carries its traceparent unless the step sets one itself.
    const { res, data } = await withSpan(`HTTP ${init.method}`, { kind: SpanKind.CLIENT }, async (span) => {
      if (span.isRecording())
        span.setAttributes({
          'http.request.method': String(init.method),
          'server.address': url.hostname,
          'server.port': Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
        });
      const headers = init.headers as Headers;
      if (!headers.has('traceparent')) injectFetchHeaders(headers);
      const response = await (deps.fetchImpl ?? fetch)(url, { ...init, signal });
      if (span.isRecording()) {
        span.setAttribute('http.response.status_code', response.status);
        if (response.status >= 400) markSpanError(span);
      }
      return { res: response, data: await readBody(response) };
    });
    if (res.status < 200 || res.status > 299) {
      const excerpt = decode(data, res.headers.get('content-type') ?? '').slice(0, ERROR_EXCERPT) || res.statusText;
      return failed('FAILED', EXIT.error, `HTTP ${res.status}: ${excerpt}`, { durationMs: elapsed() });
    }
    return toResult(res, data, step.resultType, elapsed());
  } catch (err) {
    if (err instanceof TemplateError) return failed('FAILED', EXIT.invalid, err.message, { durationMs: elapsed() });
    if (err instanceof StepFailure) return failed('FAILED', err.exitCode, err.message, { durationMs: elapsed() });
    if (deps.signal?.aborted) return stoppedByRun(deps.signal, elapsed());
    const e = err as { name?: string; message?: string; cause?: { message?: string; code?: string } };
    if (e.name === 'TimeoutError')
      return failed('TIMEOUT', EXIT.timeout, `The HTTP request timed out after ${prepared?.timeoutMs} ms`, {
        durationMs: elapsed(),
      });
    if (e.cause instanceof OutboundRefusedError)
      return failed('FAILED', EXIT.error, `The HTTP request was not sent: ${e.cause.message}`, {
        durationMs: elapsed(),
      });
    const cause = e.cause?.code ?? e.cause?.message;
    deps.log.debug({ origin: prepared?.url.origin, err: e.message }, 'http step request failed');
    return failed(
      'FAILED',
      EXIT.error,
      `The HTTP request failed: ${e.message ?? String(err)}${cause ? ` (${cause})` : ''}`,
      { durationMs: elapsed() },
    );
  }
}
