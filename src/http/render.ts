import type { ServerResponse } from 'node:http';
import { AppError, OAuthError, isAppError } from '../errors/index.js';
import type { Logger } from '../config/logger.js';
import { sendJson } from './reply.js';

/**
 * 5xx answers that are not faults of this service: a described-but-unbuilt capability, and an
 * agent whose model is not configured (the message tells the operator what to set; logging it
 * at error level on every call would bury real failures).
 */
const QUIET_5XX = new Set<string | undefined>(['ERR_NOT_IMPLEMENTED', 'ERR_AGENT_MODEL_NOT_CONFIGURED']);

export type ErrorFormat = 'rest' | 'oauth' | 'jsonrpc';

/** Operations whose errors use the OAuth shape `{error, error_description}` (spec section 6). */
export const OAUTH_OPERATIONS = new Set(['issueOauthToken', 'exchangeLegacyToken']);

/** Operations answered in JSON-RPC 2.0, transport failures included (openapi/gateway.yaml). */
export const JSONRPC_OPERATIONS = new Set(['postMcpMessage']);

export function errorFormatOf(operationId: string): ErrorFormat {
  if (OAUTH_OPERATIONS.has(operationId)) return 'oauth';
  return JSONRPC_OPERATIONS.has(operationId) ? 'jsonrpc' : 'rest';
}

export interface RenderedError {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

/** The one renderer for REST and OAuth surfaces (JSON-RPC has its own in the gateway). */
export function renderError(err: unknown, format: ErrorFormat, log: Logger): RenderedError {
  if (format === 'jsonrpc') return renderRpcError(err, log);
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
    if (err.status >= 500 && !QUIET_5XX.has(err.key)) log.error({ err }, 'request failed');
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

/**
 * A failure before any JSON-RPC message was read (auth, media type, body): a JSON-RPC error
 * response with `id: null`, under the HTTP status of the catalogue entry.
 */
function renderRpcError(err: unknown, log: Logger): RenderedError {
  const known = isAppError(err) ? err : undefined;
  if (!known || known.status >= 500) log.error({ err }, 'gateway request failed');
  const e = known && known.status < 500 ? known : new AppError('ERR_INTERNAL');
  // A body that is JSON but not a JSON-RPC payload is an invalid request (-32600).
  const code = e.key === 'ERR_REQUEST_INVALID' ? -32600 : e.rpc;
  return {
    status: e.status,
    headers: e.headers ?? {},
    body: { jsonrpc: '2.0', id: null, error: { code, message: e.message, data: { error: e.code } } },
  };
}

export function sendError(res: ServerResponse, rendered: RenderedError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, rendered.status, rendered.body, { headers: rendered.headers });
}
