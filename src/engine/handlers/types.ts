/**
 * Minimal handler contract shared by the management handlers until src/http/types.ts exists
 * (the lead repoints these to the shared pipeline types). A handler is
 * `async (req, ctx) => Reply`; req.query is already coerced and req.body already validated
 * against the OpenAPI request schema.
 */
import type { Knex } from 'knex';
import type { Config } from '../../config/index.js';
import type { Logger } from '../../config/logger.js';

export interface HandlerRequest {
  /** Path parameters, coerced per the OpenAPI schema (e.g. a workflow version is a number). */
  params: Record<string, unknown>;
  query: Record<string, unknown>;
  /** Lower-cased header names. */
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

export interface AuthContext {
  orgId: string;
  credentialId: string;
  clientId: string;
}

export interface Services {
  config: Config;
  db: Knex;
  log: Logger;
}

export interface HandlerContext {
  services: Services;
  log: Logger;
  requestId: string;
  /** Present for every bearerAuth operation. */
  auth?: AuthContext | null | undefined;
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export type Handler = (req: HandlerRequest, ctx: HandlerContext) => Promise<Reply>;
