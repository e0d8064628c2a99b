/**
 * Helpers shared by the handlers of every context, typed against the shared handler contract
 * (src/http/types.ts): header reading, ETag / If-Match optimistic locking, list paging from
 * the query (openapi/management.yaml conventions) and the bearer guard of a handler map.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { operations, type OperationMeta } from '../../generated/openapi/operations.js';
import { AppError } from '../errors/index.js';
import type { PageRequest } from '../kernel/page.js';
import type { HandlerRequest, OperationId, Reply } from './types.js';

/** One request header as sent (a repeated header's values joined with ", "), or undefined. */
export function header(req: { headers: IncomingHttpHeaders }, name: string): string | undefined {
  const v = req.headers[name.toLowerCase()];
  return Array.isArray(v) ? v.join(', ') : v;
}

/**
 * `Idempotency-Key` (openapi/triggers.yaml, our extension): 1 to 255 characters, or absent.
 * Shared by workflow triggers and agent channels.
 */
export function idempotencyKey(req: { headers: IncomingHttpHeaders }): string | undefined {
  const v = header(req, 'idempotency-key');
  if (v === undefined) return undefined;
  if (v.length < 1 || v.length > 255)
    throw new AppError('ERR_REQUEST_INVALID', { message: 'Idempotency-Key must be 1 to 255 characters' });
  return v;
}

/** Strong entity tag of a versioned resource: the version number in quotes. */
export function etag(version: number): Record<string, string> {
  return { ETag: `"${version}"` };
}

const IF_MATCH = new Map<number, RegExp>();

/**
 * Reads `If-Match: "<n>"`, a strong ETag of a positive integer of at most `maxDigits` digits
 * (versions: 10; a channel's epoch-millisecond tag: 16). Absent or `*` → undefined (no usable
 * precondition). Any other value can never match the current ETag, so it is a failed
 * precondition (412), as RFC 9110 section 13.1.1 prescribes.
 */
export function parseIfMatch(req: { headers: IncomingHttpHeaders }, maxDigits = 10): number | undefined {
  const raw = header(req, 'if-match')?.trim();
  if (raw === undefined || raw === '' || raw === '*') return undefined;
  let pattern = IF_MATCH.get(maxDigits);
  if (!pattern) IF_MATCH.set(maxDigits, (pattern = new RegExp(`^"([1-9][0-9]{0,${maxDigits - 1}})"$`)));
  const m = pattern.exec(raw);
  if (!m) throw new AppError('ERR_VERSION_CONFLICT', { details: { ifMatch: 'not a current entity tag' } });
  return Number(m[1]);
}

/** Updates REQUIRE If-Match: missing → 428 precondition_required. */
export function requireIfMatch(req: { headers: IncomingHttpHeaders }, maxDigits = 10): number {
  const version = parseIfMatch(req, maxDigits);
  if (version === undefined) throw new AppError('ERR_PRECONDITION_REQUIRED');
  return version;
}

/**
 * `limit` and `cursor` of a list operation's query (ManagementLimit, ManagementCursor), already
 * coerced by the pipeline; range and cursor checks happen in src/kernel/page.ts.
 */
export function pageOf(req: { query: { limit?: number; cursor?: string } }): PageRequest {
  return { limit: req.query.limit, cursor: req.query.cursor };
}

/**
 * The pipeline authenticates every bearerAuth operation before calling its handler, which is
 * why RequestContext<K>['auth'] is not optional there and handlers read `ctx.auth.orgId`
 * directly. A caller that bypasses the pipeline (a test, a future in-process caller) and
 * passes no auth gets the 401 missing_token the pipeline would have answered, not a
 * TypeError: this wraps the bearer-secured handlers of a context's map with that check.
 */
/** Any context's handler, whatever services it is bound to (only `auth` is read here). */
type AnyHandler = (req: HandlerRequest<OperationId>, ctx: { auth?: unknown }) => Promise<Reply>;

export function guardBearerAuth<M extends { [K in OperationId]?: unknown }>(handlers: M): M {
  const guarded: Record<string, unknown> = { ...handlers };
  // Object.entries forgets which handler belongs to which operationId; the wrapper below
  // keeps each handler's own signature, so the map keeps type M.
  for (const [id, handler] of Object.entries(handlers) as [OperationId, AnyHandler][]) {
    const op: OperationMeta = operations[id];
    if (!op.security.includes('bearerAuth')) continue;
    const wrapped: AnyHandler = async (req, ctx) => {
      if (!ctx.auth) throw new AppError('ERR_AUTH_MISSING_TOKEN');
      return handler(req, ctx);
    };
    guarded[id] = wrapped;
  }
  return guarded as M;
}
