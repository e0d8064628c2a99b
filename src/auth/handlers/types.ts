import type { IncomingHttpHeaders } from 'node:http';
import type { Knex } from 'knex';
import type { Config } from '../../config/index.js';
import type { Logger } from '../../config/logger.js';
import type { AuthContext, TokenService } from '../tokens.js';

/**
 * Minimal handler contract of the HTTP pipeline, kept local so this context does not depend on
 * generated code. Each type is a structural supertype of its counterpart in src/http/types.ts
 * (HandlerRequest<K>, RequestContext<K>, Reply), so these handlers are assignable to the
 * pipeline's typed HandlerMap; the lead may switch to the shared types.
 */
export interface AuthServices {
  config: Config;
  db: Knex;
  log: Logger;
  tokens: TokenService;
}

export interface HandlerRequest {
  params: Record<string, string | undefined>;
  query: Record<string, unknown>;
  /** Lower-cased header names. */
  headers: IncomingHttpHeaders;
  /** Parsed JSON object, or the form fields of application/x-www-form-urlencoded. */
  body?: unknown;
  rawBody?: Buffer;
}

export interface HandlerContext {
  services: AuthServices;
  log: Logger;
  requestId: string;
  /** Set by the pipeline on Bearer-secured operations. */
  auth?: AuthContext | undefined;
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  contentType?: string;
}

export type Handler = (req: HandlerRequest, ctx: HandlerContext) => Promise<Reply>;
