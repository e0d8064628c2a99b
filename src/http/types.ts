import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { operations as Ops } from '../../generated/openapi/types.js';
import type { OperationId, operations } from '../../generated/openapi/operations.js';
import type { Logger } from '../config/logger.js';

export type { OperationId };

/**
 * What the pipeline itself needs of the services: a logger and a bearer-token verifier. The
 * composition type (`Services`, src/services.ts) extends it; http/ knows no context.
 */
export interface PipelineServices {
  log: Logger;
  /** Verifies a runtime token; the organisation is checked against `X-Selected-Org`. */
  tokens: { verify(token: string): Promise<{ orgId: string }> };
}

/** The verified runtime token's context, as the services' verifier returns it. */
export type AuthOf<S extends PipelineServices> = Awaited<ReturnType<S['tokens']['verify']>>;

type ParamsOf<K extends OperationId, W extends 'path' | 'query'> = Ops[K] extends { parameters: infer P }
  ? P extends { [X in W]?: infer T }
    ? [T] extends [undefined]
      ? Record<string, never>
      : NonNullable<T>
    : Record<string, never>
  : Record<string, never>;

type BodyOf<K extends OperationId> = Ops[K] extends { requestBody?: infer RB }
  ? NonNullable<RB> extends { content: infer C }
    ? | (C extends { 'application/json': infer J } ? J : never)
      | (C extends { 'application/x-www-form-urlencoded': infer F } ? F : never)
    : undefined
  : undefined;

/** A parsed, validated request (types flow from openapi/ through generated/ into src/). */
export interface HandlerRequest<K extends OperationId = OperationId> {
  operationId: K;
  params: ParamsOf<K, 'path'>;
  query: ParamsOf<K, 'query'>;
  /** Lower-cased header names, as node gives them. */
  headers: IncomingHttpHeaders;
  /** Parsed JSON or form body; undefined for streamed bodies (multipart, uploads). */
  body: BodyOf<K>;
  /** Media type of the request body without parameters, lower-cased. */
  contentType: string | undefined;
  /** The raw request, for handlers that stream their body. */
  raw: IncomingMessage;
}

export interface Reply {
  status: number;
  /** JSON-serialised unless `contentType` says otherwise (string or Buffer bodies). */
  body?: unknown;
  headers?: Record<string, string | number | string[]>;
  contentType?: string;
  stream?: Readable;
  /**
   * Check this reply against another operation's responses (tests' response validator): a
   * path served by two operations (spec 5: a channel trigger id on `/ext/triggers/{id}`)
   * answers as the operation that describes what it did.
   */
  describedBy?: OperationId;
}

type Security<K extends OperationId> = (typeof operations)[K]['security'][number];

export interface RequestContext<K extends OperationId = OperationId, S extends PipelineServices = PipelineServices> {
  services: S;
  log: Logger;
  requestId: string;
  /** Set by the pipeline for operations secured by bearerAuth (verified runtime token). */
  auth: 'bearerAuth' extends Security<K> ? AuthOf<S> : AuthOf<S> | undefined;
  /** What the handler's `beforeBody` step returned (see BeforeBody). */
  preBody?: unknown;
}

/**
 * A step a handler may carry (`handler.beforeBody`), run after routing and before the body is
 * read: key checks that must answer 401/403/415 without reading a body (openapi/triggers.yaml
 * channelApiKey: "a missing or invalid key answers 401 before the body is read").
 */
export type BeforeBody<S extends PipelineServices = PipelineServices> = (
  req: {
    operationId: OperationId;
    params: Record<string, string>;
    headers: IncomingHttpHeaders;
    contentType: string | undefined;
    raw: IncomingMessage;
  },
  ctx: RequestContext<OperationId, S>,
) => Promise<unknown>;

/**
 * A check a handler may carry (`handler.servesPath`), run right after routing: whether the
 * operation serves a path with these parameters. When it does not, the path does not take this
 * method: 405 with `Allow` listing the methods whose operations serve it, before any key, query
 * or body is looked at (a channel trigger id on `/ext/triggers/{id}` takes POST only).
 */
export type ServesPath = (params: Record<string, string>) => boolean;

export type Handler<K extends OperationId, S extends PipelineServices = PipelineServices> = (
  req: HandlerRequest<K>,
  ctx: RequestContext<K, S>,
) => Promise<Reply>;

/** Every operation in openapi/ must have a handler: a missing one fails to compile. */
export type HandlerMap<S extends PipelineServices = PipelineServices> = { [K in OperationId]: Handler<K, S> };
export type PartialHandlerMap<S extends PipelineServices = PipelineServices> = { [K in OperationId]?: Handler<K, S> };
