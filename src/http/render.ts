import type { ServerResponse } from 'node:http';
import { AppError, OAuthError, isAppError } from '../errors/index.js';
import type { Logger } from '../config/logger.js';
import { sendJson } from './reply.js';

export type ErrorFormat = 'rest' | 'oauth';

/** Operations whose errors use the OAuth shape `{error, error_description}` (spec section 6). */
export const OAUTH_OPERATIONS = new Set(['issueOauthToken', 'exchangeLegacyToken']);

export function errorFormatOf(operationId: string): ErrorFormat {
  return OAUTH_OPERATIONS.has(operationId) ? 'oauth' : 'rest';
}

export interface RenderedError {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

/** The one renderer for REST and OAuth surfaces (JSON-RPC has its own in the gateway). */
export function renderError(err: unknown, format: ErrorFormat, log: Logger): RenderedError {
  if (format === 'oauth') {
    const headers: Record<string, string> = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };
    if (err instanceof OAuthError) {
      Object.assign(headers, err.headers ?? {});
      return { status: err.status, body: { error: err.error, error_description: err.message }, headers };
    }
    if (isAppError(err) && err.status < 500) {
      return { status: 400, body: { error: 'invalid_request', error_description: err.message }, headers };
    }
    log.error({ err }, 'token endpoint failure');
    return { status: 500, body: { error: 'server_error', error_description: 'Internal error' }, headers };
  }
  if (isAppError(err)) {
    if (err.status >= 500 && err.key !== 'ERR_NOT_IMPLEMENTED') log.error({ err }, 'request failed');
    const body: Record<string, unknown> = { error: err.code, message: err.message };
    if (err.details !== undefined) body.details = err.details;
    return { status: err.status, body, headers: err.headers ?? {} };
  }
  if (err instanceof OAuthError) {
    return { status: err.status, body: { error: err.error, message: err.message }, headers: {} };
  }
  log.error({ err }, 'unhandled error');
  const internal = new AppError('ERR_INTERNAL');
  return { status: 500, body: { error: internal.code, message: internal.message }, headers: {} };
}

export function sendError(res: ServerResponse, rendered: RenderedError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, rendered.status, rendered.body, rendered.headers);
}
