import { randomUUID } from 'node:crypto';
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { operations, type OperationId, type OperationMeta } from '../../generated/openapi/operations.js';
import { operationValidators } from '../../generated/validators/operations.js';
import { AppError } from '../errors/index.js';
import { redactUrl } from '../config/logger.js';
import { defaults } from '../config/defaults.js';
import { OAUTH_OPERATIONS, renderError, sendError, type ErrorFormat } from './render.js';
import type { HandlerMap, HandlerRequest, Reply, RequestContext, Services } from './types.js';
import type { ResponseValidator } from './response-validator.js';

const PARSED_TYPES = new Set(['application/json', 'application/x-www-form-urlencoded']);

export interface PipelineOptions {
  services: Services;
  handlers: HandlerMap;
  /** Tests pass one: every response is checked against the OpenAPI bundle. */
  responseValidator?: ResponseValidator | undefined;
}

/** Media type of a request without parameters, lower-cased. */
export function mediaType(req: Request): string | undefined {
  const ct = req.headers['content-type'];
  return ct ? ct.split(';')[0]!.trim().toLowerCase() : undefined;
}

function hasBody(req: Request): boolean {
  const len = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (len !== undefined && len !== '0');
}

function ajvDetails(errors: ErrorObject[] | null | undefined, where: string): { where: string; path: string; message: string }[] {
  return (errors ?? []).map((e) => ({
    where,
    path: e.instancePath || (e.params && 'missingProperty' in e.params ? `/${String(e.params.missingProperty)}` : '/'),
    message: e.keyword === 'additionalProperties' ? `unknown field "${String((e.params as { additionalProperty?: string }).additionalProperty)}"` : e.message ?? 'invalid',
  }));
}

function check(validate: ValidateFunction | undefined, data: unknown, where: string): void {
  if (validate && !validate(data)) {
    throw new AppError('ERR_REQUEST_INVALID', { message: `Invalid ${where}: ${ajvDetails(validate.errors, where).map((d) => `${d.path} ${d.message}`).join('; ')}`, details: ajvDetails(validate.errors, where) });
  }
}

const jsonParser = express.json({ limit: defaults.jsonBodyLimitBytes, strict: false, type: () => true });
const formParser = express.urlencoded({ extended: false, limit: defaults.jsonBodyLimitBytes, parameterLimit: 1000, type: () => true });

function runParser(parser: RequestHandler, req: Request, res: Response): Promise<void> {
  return new Promise((resolve, reject) => parser(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
}

function bodyParseError(err: unknown): AppError {
  const type = (err as { type?: string }).type;
  if (type === 'entity.too.large') return new AppError('ERR_REQUEST_TOO_LARGE');
  if (type === 'entity.parse.failed') return new AppError('ERR_REQUEST_MALFORMED_JSON');
  return new AppError('ERR_REQUEST_INVALID', { message: 'The request body could not be read' });
}

/** Parses and validates the body for JSON and form requests; other media types are streamed by the handler. */
async function readBody(op: OperationMeta, operationId: OperationId, req: Request, res: Response): Promise<{ body: unknown; contentType: string | undefined }> {
  const contentType = mediaType(req);
  if (op.requestContentTypes.length === 0 || !hasBody(req)) {
    if (op.requestBodyRequired) throw new AppError('ERR_REQUEST_INVALID', { message: 'A request body is required' });
    return { body: undefined, contentType };
  }
  const accepted = contentType !== undefined && (op.requestContentTypes.includes(contentType) || op.requestContentTypes.some((t) => t.endsWith('/*') && contentType.startsWith(t.slice(0, -1))));
  if (!accepted) {
    throw new AppError('ERR_REQUEST_UNSUPPORTED_MEDIA', { message: `Content-Type must be one of: ${op.requestContentTypes.join(', ')}` });
  }
  if (!PARSED_TYPES.has(contentType)) return { body: undefined, contentType };
  try {
    await runParser(contentType === 'application/json' ? jsonParser : formParser, req, res);
  } catch (err) {
    throw bodyParseError(err);
  }
  const v = operationValidators[operationId];
  const body: unknown = req.body;
  check(contentType === 'application/json' ? v?.json : v?.form, body, 'body');
  return { body, contentType };
}

function writeReply(res: Response, reply: Reply): void {
  res.status(reply.status);
  for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, typeof v === 'number' ? String(v) : v);
  if (reply.stream) {
    if (reply.contentType) res.type(reply.contentType);
    reply.stream.on('error', () => res.destroy());
    reply.stream.pipe(res);
    return;
  }
  if (reply.status === 204 || reply.status === 304 || (reply.body === undefined && reply.contentType === undefined)) {
    res.end();
    return;
  }
  if (reply.contentType && !reply.contentType.includes('json')) {
    res.type(reply.contentType).send(reply.body as string | Buffer);
    return;
  }
  res.type(reply.contentType ?? 'application/json').send(JSON.stringify(reply.body ?? null));
}

/** Bearer verification for operations secured by bearerAuth (spec "Authentication" 3). */
async function authenticate(services: Services, req: Request): Promise<RequestContext['auth']> {
  const header = req.headers.authorization;
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  if (!match) throw new AppError('ERR_AUTH_MISSING_TOKEN', { headers: { 'WWW-Authenticate': 'Bearer realm="switchyard"' } });
  const auth = await services.tokens.verify(match[1]!);
  const selected = req.headers['x-selected-org'];
  if (typeof selected === 'string' && selected !== '' && selected !== auth.orgId) throw new AppError('ERR_AUTH_ORG_MISMATCH');
  return auth;
}

function operationHandler(operationId: OperationId, opts: PipelineOptions): RequestHandler {
  const op: OperationMeta = operations[operationId];
  const handler = opts.handlers[operationId] as unknown as (req: HandlerRequest, ctx: RequestContext) => Promise<Reply>;
  const format: ErrorFormat = OAUTH_OPERATIONS.has(operationId) ? 'oauth' : 'rest';
  const validators = operationValidators[operationId];
  const needsBearer = op.security.includes('bearerAuth');
  const { services } = opts;
  return async (req: Request, res: Response) => {
    const requestId = res.getHeader('X-Request-Id') as string;
    const log = services.log.child({ reqId: requestId, op: operationId });
    try {
      const params = { ...req.params };
      const query = { ...(req.query as Record<string, unknown>) };
      check(validators?.params, params, 'path parameters');
      check(validators?.query, query, 'query parameters');
      const auth = needsBearer ? await authenticate(services, req) : undefined;
      const { body, contentType } = await readBody(op, operationId, req, res);
      const hreq: HandlerRequest = { operationId, params, query, headers: req.headers, body, contentType, raw: req } as unknown as HandlerRequest;
      const reply = await handler(hreq, { services, log, requestId, auth } as RequestContext);
      if (!invalidResponse(opts, operationId, reply, res)) writeReply(res, reply);
    } catch (err) {
      const rendered = renderError(err, format, log);
      if (!invalidResponse(opts, operationId, rendered, res)) sendError(res, rendered);
    }
  };
}

/** In tests, a reply that breaks the OpenAPI document is recorded and answered with 500. */
function invalidResponse(opts: PipelineOptions, operationId: OperationId, reply: Reply, res: Response): boolean {
  const failure = opts.responseValidator?.check(operationId, reply);
  if (!failure) return false;
  sendError(res, { status: 500, headers: {}, body: { error: 'response_validation_failed', message: failure.message } });
  return true;
}

/** Request id, timing and redacted access log for every request. */
function accessLog(services: Services): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const incoming = req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && /^[A-Za-z0-9._-]{1,128}$/.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      services.log.info({ reqId: requestId, method: req.method, url: redactUrl(req.originalUrl), status: res.statusCode, ms: Math.round(ms * 10) / 10 }, 'request');
    });
    next();
  };
}

const KNOWN_METHODS: HTTPMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * The one named pipeline: access log → route → params/query → auth → body → handler → reply.
 * Routing uses find-my-way (a radix tree) instead of express's linear route list, so adding
 * operations does not slow every request down.
 */
export function createHttpApp(opts: PipelineOptions, mount?: (app: Express) => void): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.use(accessLog(opts.services));
  mount?.(app);
  const router = FindMyWay({ caseSensitive: true, ignoreTrailingSlash: false });
  for (const id of Object.keys(operations) as OperationId[]) {
    const op = operations[id];
    const handle = operationHandler(id, opts);
    router.on(op.method.toUpperCase() as HTTPMethod, op.path.replace(/\{([^}]+)\}/g, ':$1'), () => undefined, { handle });
  }
  app.use((req: Request, res: Response, next: NextFunction) => {
    const q = req.url.indexOf('?');
    const pathname = q < 0 ? req.url : req.url.slice(0, q);
    const method = (req.method === 'HEAD' ? 'GET' : req.method) as HTTPMethod;
    const found = router.find(method, pathname);
    if (found) {
      req.params = found.params as Record<string, string>;
      void (found.store as { handle: RequestHandler }).handle(req, res, next);
      return;
    }
    const allowed = KNOWN_METHODS.filter((m) => m !== method && router.find(m, pathname));
    if (allowed.length) {
      res.setHeader('Allow', allowed.join(', '));
      sendError(res, renderError(new AppError('ERR_METHOD_NOT_ALLOWED'), 'rest', opts.services.log));
      return;
    }
    sendError(res, renderError(new AppError('ERR_ROUTE_NOT_FOUND'), 'rest', opts.services.log));
  });
  return app;
}
