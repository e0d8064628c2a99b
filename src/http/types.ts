import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { Knex } from 'knex';
import type { operations as Ops } from '../../generated/openapi/types.js';
import type { OperationId, operations } from '../../generated/openapi/operations.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../config/logger.js';
import type { ApiKeyVerifier, AuthContext, TokenService } from '../auth/index.js';
import type { RedisClient } from '../storage/redis.js';
import type { BlobStore } from '../runs/blobs.js';
import type { Signals } from '../runs/signals.js';
import type { GroupCommitter } from '../runs/group-commit.js';
import type { RunQueue } from '../queues/run-queue.js';
import type { CallTargets } from '../triggers/target.js';
import type { Gateway } from '../gateway/gateway.js';

export type { OperationId };

/** Everything a handler may use; built once by the composition root (src/app.ts). */
export interface Services {
  config: Config;
  db: Knex;
  log: Logger;
  tokens: TokenService;
  /** Present when REDIS_URL is set (scale-out queue, signals and rate windows use it). */
  redis?: RedisClient | undefined;
  /** Trigger API keys, verified with a short per-process memo (src/auth/api-keys.ts). */
  apiKeys: ApiKeyVerifier;
  blobs: BlobStore;
  signals: Signals;
  queue: RunQueue;
  /** Group commit of new runs (src/runs/group-commit.ts). */
  runWriter: GroupCommitter;
  /** Trigger call targets, memoised per process (src/triggers/target.ts). */
  callTargets: CallTargets;
  /** The tool gateway: catalogue, router, upstream pool (src/gateway). */
  gateway: Gateway;
}

type ParamsOf<K extends OperationId, W extends 'path' | 'query'> = Ops[K] extends { parameters: infer P }
  ? P extends { [X in W]?: infer T }
    ? [T] extends [undefined] ? Record<string, never> : NonNullable<T>
    : Record<string, never>
  : Record<string, never>;

type BodyOf<K extends OperationId> = Ops[K] extends { requestBody?: infer RB }
  ? NonNullable<RB> extends { content: infer C }
    ? (C extends { 'application/json': infer J } ? J : never) | (C extends { 'application/x-www-form-urlencoded': infer F } ? F : never)
    : undefined
  : undefined;

/** A parsed, validated request (DESIGN.md section 2: types flow spec → generated → src). */
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
}

type Security<K extends OperationId> = (typeof operations)[K]['security'][number];

export interface RequestContext<K extends OperationId = OperationId> {
  services: Services;
  log: Logger;
  requestId: string;
  /** Set by the pipeline for operations secured by bearerAuth (verified runtime token). */
  auth: 'bearerAuth' extends Security<K> ? AuthContext : AuthContext | undefined;
}

export type Handler<K extends OperationId> = (req: HandlerRequest<K>, ctx: RequestContext<K>) => Promise<Reply>;

/** Every operation in openapi/ must have a handler: a missing one fails to compile. */
export type HandlerMap = { [K in OperationId]: Handler<K> };
export type PartialHandlerMap = { [K in OperationId]?: Handler<K> };
