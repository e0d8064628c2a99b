import { defaults } from '../../config/defaults.js';
import { AppError } from '../../errors/index.js';
import type { AuthContext } from '../tokens.js';
import type { HandlerContext, HandlerRequest } from './types.js';

/**
 * Shared request handling of the management operations: every one is Bearer-secured and
 * scoped to the token's organisation (DESIGN.md section 5: every lookup is org-scoped).
 */
export function requireAuth(ctx: HandlerContext): AuthContext {
  if (!ctx.auth) throw new AppError('ERR_AUTH_MISSING_TOKEN');
  return ctx.auth;
}

const first = (v: unknown): unknown => (Array.isArray(v) ? v[0] : v);

/** `limit` 1..200 (default 50) and an opaque `cursor`, as strings or already-coerced numbers. */
export function parseListQuery(query: HandlerRequest['query']): { limit: number; cursor: string | undefined } {
  const rawLimit = first(query.limit);
  let limit: number = defaults.pageDefault;
  if (rawLimit !== undefined && rawLimit !== '') {
    const n = typeof rawLimit === 'number' ? rawLimit : typeof rawLimit === 'string' && /^\d{1,4}$/.test(rawLimit) ? Number(rawLimit) : NaN;
    if (!Number.isInteger(n) || n < 1 || n > defaults.pageMax) {
      throw new AppError('ERR_REQUEST_INVALID', { message: `limit must be an integer between 1 and ${defaults.pageMax}` });
    }
    limit = n;
  }
  const rawCursor = first(query.cursor);
  if (rawCursor !== undefined && typeof rawCursor !== 'string') throw new AppError('ERR_INVALID_CURSOR');
  return { limit, cursor: rawCursor === '' ? undefined : rawCursor };
}

export function pathParam(req: HandlerRequest, name: string): string {
  const value = req.params[name];
  if (!value) throw new AppError('ERR_NOT_FOUND');
  return value;
}

/**
 * Decision: `label` is optional (a default names the item) and at most 200 characters, the
 * column width; surrounding whitespace is dropped.
 */
export function parseLabel(body: unknown, fallback: string): string {
  if (body === undefined || body === null) return fallback;
  if (typeof body !== 'object' || Array.isArray(body)) throw new AppError('ERR_REQUEST_INVALID', { message: 'The body must be a JSON object' });
  const label = (body as Record<string, unknown>).label;
  if (label === undefined) return fallback;
  if (typeof label !== 'string' || label.trim() === '' || label.trim().length > 200) {
    throw new AppError('ERR_REQUEST_INVALID', { message: 'label must be a non-empty string of at most 200 characters' });
  }
  return label.trim();
}

export function notFound(): AppError {
  return new AppError('ERR_NOT_FOUND');
}
