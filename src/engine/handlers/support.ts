/**
 * Small helpers shared by the management handlers: organisation scope, ETag / If-Match
 * optimistic locking and list paging parameters (openapi/management.yaml conventions).
 */
import { AppError } from '../../errors/index.js';
import type { PageRequest } from '../../storage/page.js';
import type { HandlerContext, HandlerRequest } from './types.js';

/** The token's organisation; bearerAuth operations always carry it. */
export function orgOf(ctx: HandlerContext): string {
  const orgId = ctx.auth?.orgId;
  if (!orgId) throw new AppError('ERR_AUTH_MISSING_TOKEN');
  return orgId;
}

export function header(req: HandlerRequest, name: string): string | undefined {
  const v = req.headers[name.toLowerCase()];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** Strong entity tag of a versioned resource: the version number in quotes. */
export function etag(version: number): Record<string, string> {
  return { ETag: `"${version}"` };
}

/**
 * Reads `If-Match: "<version>"`. Absent or `*` → undefined (no usable precondition). A value
 * that is not one strong ETag of a positive integer can never match the current ETag, so it
 * is a failed precondition (412), as RFC 9110 section 13.1.1 prescribes.
 */
export function parseIfMatch(req: HandlerRequest): number | undefined {
  const raw = header(req, 'if-match')?.trim();
  if (raw === undefined || raw === '' || raw === '*') return undefined;
  const m = /^"([1-9][0-9]{0,9})"$/.exec(raw);
  if (!m) throw new AppError('ERR_VERSION_CONFLICT', { details: { ifMatch: 'not a current entity tag' } });
  return Number(m[1]);
}

/** Updates REQUIRE If-Match: missing → 428 precondition_required. */
export function requireIfMatch(req: HandlerRequest): number {
  const version = parseIfMatch(req);
  if (version === undefined) throw new AppError('ERR_PRECONDITION_REQUIRED');
  return version;
}

export function pageOf(req: HandlerRequest): PageRequest {
  const { limit, cursor } = req.query;
  return {
    limit: typeof limit === 'number' ? limit : limit === undefined ? undefined : Number(limit),
    cursor: typeof cursor === 'string' ? cursor : undefined,
  };
}

export function stringParam(req: HandlerRequest, name: string): string {
  const v = req.params[name];
  if (typeof v !== 'string' || v === '') throw new AppError('ERR_NOT_FOUND');
  return v;
}

/** An integer path parameter (already a number after coercion, or its decimal text). */
export function intParam(req: HandlerRequest, name: string): number {
  const v = req.params[name];
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^[0-9]{1,15}$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n)) throw new AppError('ERR_NOT_FOUND');
  return n;
}
