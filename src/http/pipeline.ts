/**
 * The one named pipeline, on node:http: access log → route → params/query → auth → body →
 * handler → reply. Routing is find-my-way (a radix tree); request parts are checked by the
 * generated ajv standalone validators. No web framework sits in between: express 5 costs
 * most of the bare node:http throughput on 2-core machines, more than the trigger and gateway
 * benchmarks allow (bench/triggers.ts, bench/gateway.ts).
 */
import { randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import querystring from 'node:querystring';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { operations, type OperationId, type OperationMeta } from '../../generated/openapi/operations.js';
import { operationValidators } from '../../generated/validators/operations.js';
import { AppError } from '../errors/index.js';
import { redactUrl, type Logger } from '../config/logger.js';
import { errorFormatOf, renderError, sendError } from './render.js';
import { hasBody, mediaType, readForm, readJson } from './body.js';
import { writeReply } from './reply.js';
import {
  markSpanError,
  requestParent,
  runInSpan,
  SpanKind,
  startSpan,
  tracingOn,
  type Span,
} from '../kernel/tracing.js';
import type {
  BeforeBody,
  HandlerMap,
  HandlerRequest,
  PipelineServices,
  Reply,
  RequestContext,
  ServesPath,
} from './types.js';
import type { ResponseValidator } from './response-validator.js';
import { httpDuration, httpRequests, secondsSince, statusClass } from '../kernel/metrics.js';

export { mediaType } from './body.js';

export interface PipelineOptions<S extends PipelineServices = PipelineServices> {
  services: S;
  handlers: HandlerMap<S>;
  /** Tests pass one: every response is checked against the OpenAPI bundle. */
  responseValidator?: ResponseValidator | undefined;
  /**
   * Listeners that answer every request whose path is `prefix` or lies under `prefix/`, outside
   * the OpenAPI routes (the web console, src/console). Checked before routing.
   */
  mounts?: readonly Mount[];
}

export interface Mount {
  prefix: string;
  listener: (req: IncomingMessage, res: ServerResponse) => void;
}

function mountFor(mounts: readonly Mount[], pathname: string): Mount | undefined {
  for (const m of mounts)
    if (pathname.startsWith(m.prefix) && (pathname.length === m.prefix.length || pathname[m.prefix.length] === '/'))
      return m;
  return undefined;
}

/** A node:http request listener that can also listen by itself. */
export interface HttpApp {
  (req: IncomingMessage, res: ServerResponse): void;
  listen(port: number, host: string, ready?: () => void): Server;
}

function ajvDetails(
  errors: ErrorObject[] | null | undefined,
  where: string,
): { where: string; path: string; message: string }[] {
  return (errors ?? []).map((e) => ({
    where,
    path: e.instancePath || (e.params && 'missingProperty' in e.params ? `/${String(e.params.missingProperty)}` : '/'),
    message:
      e.keyword === 'additionalProperties'
        ? `unknown field "${String((e.params as { additionalProperty?: string }).additionalProperty)}"`
        : (e.message ?? 'invalid'),
  }));
}

/** Throws 400 invalid_request listing every problem of `data` (handlers use it for parts they validate themselves). */
export function check(validate: ValidateFunction | undefined, data: unknown, where: string): void {
  if (validate && !validate(data)) {
    throw new AppError('ERR_REQUEST_INVALID', {
      message: `Invalid ${where}: ${ajvDetails(validate.errors, where)
        .map((d) => `${d.path} ${d.message}`)
        .join('; ')}`,
      details: ajvDetails(validate.errors, where),
    });
  }
}

/** Parses and validates the body for JSON and form requests; other media types are streamed by the handler. */
async function readBody(
  op: OperationMeta,
  operationId: OperationId,
  req: IncomingMessage,
): Promise<{ body: unknown; contentType: string | undefined }> {
  const contentType = mediaType(req);
  if (op.requestContentTypes.length === 0 || !hasBody(req)) {
    if (op.requestBodyRequired) throw new AppError('ERR_REQUEST_INVALID', { message: 'A request body is required' });
    return { body: undefined, contentType };
  }
  const accepted =
    contentType !== undefined &&
    (op.requestContentTypes.includes(contentType) ||
      op.requestContentTypes.some((t) => t.endsWith('/*') && contentType.startsWith(t.slice(0, -1))));
  if (!accepted) {
    throw new AppError('ERR_REQUEST_UNSUPPORTED_MEDIA', {
      message: `Content-Type must be one of: ${op.requestContentTypes.join(', ')}`,
    });
  }
  const v = operationValidators[operationId];
  if (contentType === 'application/json') {
    const body = await readJson(req);
    check(v?.json, body, 'body');
    return { body, contentType };
  }
  if (contentType === 'application/x-www-form-urlencoded') {
    const body = await readForm(req);
    check(v?.form, body, 'body');
    return { body, contentType };
  }
  return { body: undefined, contentType };
}

/** Bearer verification for operations secured by bearerAuth (spec "Authentication" 3). */
async function authenticate(services: PipelineServices, req: IncomingMessage): Promise<RequestContext['auth']> {
  const header = req.headers.authorization;
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  if (!match)
    throw new AppError('ERR_AUTH_MISSING_TOKEN', { headers: { 'WWW-Authenticate': 'Bearer realm="switchyard"' } });
  const auth = await services.tokens.verify(match[1]!);
  const selected = req.headers['x-selected-org'];
  if (typeof selected === 'string' && selected !== '' && selected !== auth.orgId)
    throw new AppError('ERR_AUTH_ORG_MISMATCH');
  return auth;
}

/** What the router found for a request, beside the request and response themselves. */
interface RouteMatch {
  params: Record<string, string>;
  query: Record<string, unknown>;
  requestId: string;
  /** `performance.now()` when the request came in (the duration metric). */
  started: number;
}

type RecordAnswer = (status: number, started: number) => void;

/**
 * Counts an answered request of one operation (`unknown`: no route) in the HTTP metrics
 * (src/kernel/metrics.ts), with the label children of each status class made once.
 */
function answerMetrics(operation: string): RecordAnswer {
  const byClass: { count: { inc(): void }; duration: { observe(v: number): void } }[] = [];
  return (status, started) => {
    const c = status >= 100 && status < 600 ? Math.floor(status / 100) : 0;
    const children = (byClass[c] ??= {
      count: httpRequests.labels(operation, statusClass(status)),
      duration: httpDuration.labels(operation, statusClass(status)),
    });
    children.count.inc();
    children.duration.observe(secondsSince(started));
  };
}

type Route = (req: IncomingMessage, res: ServerResponse, match: RouteMatch, span?: Span) => Promise<void>;

/** A per-request child logger, made only when something logs (most requests never do). */
function lazyContext(
  services: PipelineServices,
  requestId: string,
  operationId: OperationId,
  auth: RequestContext['auth'],
): RequestContext {
  let log: Logger | undefined;
  return {
    services,
    requestId,
    auth,
    get log() {
      return (log ??= services.log.child({ reqId: requestId, op: operationId }));
    },
  } as RequestContext;
}

function operationRoute(operationId: OperationId, opts: PipelineOptions, answered: RecordAnswer): Route {
  const op: OperationMeta = operations[operationId];
  const handler = opts.handlers[operationId] as unknown as (req: HandlerRequest, ctx: RequestContext) => Promise<Reply>;
  const format = errorFormatOf(operationId);
  const validators = operationValidators[operationId];
  const needsBearer = op.security.includes('bearerAuth');
  const beforeBody = (handler as { beforeBody?: BeforeBody } | undefined)?.beforeBody;
  const { services } = opts;
  const handle: Route = async (req, res, { params, query, requestId, started }, span?: Span) => {
    let ctx: RequestContext | undefined;
    try {
      check(validators?.params, params, 'path parameters');
      check(validators?.query, query, 'query parameters');
      const auth = needsBearer ? await authenticate(services, req) : undefined;
      if (auth && span?.isRecording()) span.setAttribute('switchyard.org_id', auth.orgId);
      ctx = lazyContext(services, requestId, operationId, auth as RequestContext['auth']);
      if (beforeBody)
        ctx.preBody = await beforeBody(
          { operationId, params, headers: req.headers, contentType: mediaType(req), raw: req },
          ctx,
        );
      const { body, contentType } = await readBody(op, operationId, req);
      const hreq = {
        operationId,
        params,
        query,
        headers: req.headers,
        body,
        contentType,
        raw: req,
      } as unknown as HandlerRequest;
      const reply = await handler(hreq, ctx);
      if (!invalidResponse(opts, operationId, reply, res)) writeReply(res, reply);
    } catch (err) {
      const rendered = renderError(err, format, ctx?.log ?? services.log);
      if (!invalidResponse(opts, operationId, rendered, res)) sendError(res, rendered);
    }
    answered(res.statusCode, started);
  };
  // The server span, named by operationId, continues the caller's trace (inbound traceparent), or
  // is a child of the span an embedding application made for the request.
  return (req, res, match) => {
    if (!tracingOn()) return handle(req, res, match);
    const span = startSpan(operationId, { kind: SpanKind.SERVER, parent: requestParent(req.headers) });
    if (!span.isRecording()) return runInSpan(span, () => handle(req, res, match));
    span.setAttributes({ 'http.request.method': req.method ?? 'GET', 'http.route': op.path });
    res.once('close', () => {
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500 || !res.writableFinished) markSpanError(span);
      span.end();
    });
    return runInSpan(span, () => handle(req, res, match, span));
  };
}

/** In tests, a reply that breaks the OpenAPI document is recorded and answered with 500. */
function invalidResponse(opts: PipelineOptions, operationId: OperationId, reply: Reply, res: ServerResponse): boolean {
  const failure = opts.responseValidator?.check(reply.describedBy ?? operationId, reply);
  if (!failure) return false;
  sendError(res, { status: 500, headers: {}, body: { error: 'response_validation_failed', message: failure.message } });
  return true;
}

/**
 * The path the client asked for. Mounted in another server (src/embed.ts), the host framework
 * rewrites `req.url` relative to the mount point and keeps the full one in `originalUrl`
 * (express); the access log shows what the client sent.
 */
export function requestPath(req: IncomingMessage): string {
  const original = (req as IncomingMessage & { originalUrl?: unknown }).originalUrl;
  return typeof original === 'string' ? original : (req.url ?? '/');
}

/**
 * The prefix a host framework stripped from `req.url` when it mounted the service
 * (`/switchyard`; empty when the service runs on its own), or undefined when `req.url` is not
 * the end of the path the client asked for.
 */
export function mountPrefix(req: IncomingMessage): string | undefined {
  if (req.url === undefined) return undefined;
  const full = requestPath(req).split('?')[0]!;
  const rest = req.url.split('?')[0]!;
  if (!full.endsWith(rest)) return undefined;
  return full.slice(0, full.length - rest.length).replace(/\/+$/, '');
}

/**
 * A body-parsing middleware that ran before us (express.json(), body-parser sets `_body`)
 * has read the stream to its end. Reading it again finds nothing: the client would get a
 * 400 blaming its body, or a streaming handler would wait for data that never comes. The
 * request is answered at once with an error that names the fix (README "Embedding").
 */
function bodyAlreadyRead(req: IncomingMessage): boolean {
  return hasBody(req) && (req.readableEnded || (req as IncomingMessage & { _body?: unknown })._body === true);
}

/** Request id, timing and redacted access log for every request. */
function startRequest(services: PipelineServices, req: IncomingMessage, res: ServerResponse): string {
  const incoming = req.headers['x-request-id'];
  const requestId = typeof incoming === 'string' && /^[A-Za-z0-9._-]{1,128}$/.test(incoming) ? incoming : randomUUID();
  res.setHeader('X-Request-Id', requestId);
  if (services.log.isLevelEnabled('info')) {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      services.log.info(
        {
          reqId: requestId,
          method: req.method,
          url: redactUrl(requestPath(req)),
          status: res.statusCode,
          ms: Math.round(ms * 10) / 10,
        },
        'request',
      );
    });
  }
  return requestId;
}

const KNOWN_METHODS: HTTPMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

interface RouteStore {
  route: Route;
  answered: RecordAnswer;
  servesPath?: ServesPath | undefined;
}

/** The route that serves this method on this path, if any (see ServesPath). */
function servingRoute(router: FindMyWay.Instance<FindMyWay.HTTPVersion.V1>, method: HTTPMethod, pathname: string) {
  const found = router.find(method, pathname);
  if (!found) return undefined;
  const store = found.store as RouteStore;
  const params = found.params as Record<string, string>;
  if (store.servesPath && !store.servesPath(params)) return undefined;
  return { route: store.route, answered: store.answered, params };
}

export function createHttpApp<S extends PipelineServices>(options: PipelineOptions<S>): HttpApp {
  // Handlers are bound to the composition's services; the pipeline only passes them along.
  const opts = options as unknown as PipelineOptions;
  const router = FindMyWay({ caseSensitive: true, ignoreTrailingSlash: false });
  for (const id of Object.keys(operations) as OperationId[]) {
    const op = operations[id];
    const answered = answerMetrics(id);
    const store: RouteStore = {
      route: operationRoute(id, opts, answered),
      answered,
      servesPath: (opts.handlers[id] as { servesPath?: ServesPath } | undefined)?.servesPath,
    };
    router.on(op.method.toUpperCase() as HTTPMethod, op.path.replace(/\{([^}]+)\}/g, ':$1'), () => undefined, store);
  }
  const { services } = opts;
  const mounts = opts.mounts ?? [];
  const unknownAnswered = answerMetrics('unknown');
  const notRouted = (res: ServerResponse, method: HTTPMethod, pathname: string): void => {
    const allowed = KNOWN_METHODS.filter((m) => m !== method && servingRoute(router, m, pathname));
    if (allowed.length) {
      res.setHeader('Allow', allowed.join(', '));
      sendError(res, renderError(new AppError('ERR_METHOD_NOT_ALLOWED'), 'rest', services.log));
      return;
    }
    sendError(res, renderError(new AppError('ERR_ROUTE_NOT_FOUND'), 'rest', services.log));
  };
  // Paths are matched on req.url, which a host framework has already made relative to its
  // mount point (src/embed.ts): the same routes serve standalone and under a prefix.
  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    const started = performance.now();
    const requestId = startRequest(services, req, res);
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const pathname = q < 0 ? url : url.slice(0, q);
    const mount = mounts.length === 0 ? undefined : mountFor(mounts, pathname);
    if (mount) {
      mount.listener(req, res);
      return;
    }
    const method = (req.method === 'HEAD' ? 'GET' : req.method) as HTTPMethod;
    const found = servingRoute(router, method, pathname);
    if (!found) {
      notRouted(res, method, pathname);
      return unknownAnswered(res.statusCode, started);
    }
    // In the REST shape on every surface: the OAuth and JSON-RPC renderers hide 5xx messages,
    // and this one is meant for whoever mounted the app.
    if (bodyAlreadyRead(req)) {
      sendError(res, renderError(new AppError('ERR_BODY_ALREADY_READ'), 'rest', services.log));
      return found.answered(res.statusCode, started);
    }
    const query = q < 0 ? {} : { ...querystring.parse(url.slice(q + 1)) };
    void found.route(req, res, { params: found.params, query, requestId, started });
  };
  return Object.assign(listener, {
    listen(port: number, host: string, ready?: () => void): Server {
      const server = http.createServer(listener);
      server.listen(port, host, ready);
      return server;
    },
  });
}
