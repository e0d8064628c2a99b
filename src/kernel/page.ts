/**
 * Cursor pagination shared by every management list (openapi/management.yaml conventions):
 * `limit` 1..200 (default 50), an opaque `cursor`, and `{items, nextCursor}` pages. A cursor
 * is base64url JSON naming the list it belongs to and the last key returned, so a cursor from
 * another list, or a forged one, is rejected with 400 invalid_cursor. Keys are ids (UUIDv7
 * based, src/kernel/ids.ts) or numbers, so "key > last key" walks rows in creation order
 * without offsets.
 */
import type { Knex } from 'knex';
import { defaults } from '../config/defaults.js';
import { AppError } from '../errors/index.js';

export interface PageRequest {
  limit?: number | undefined;
  cursor?: string | undefined;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export function pageLimit(limit: number | undefined): number {
  if (limit === undefined) return defaults.pageDefault;
  if (!Number.isInteger(limit) || limit < 1 || limit > defaults.pageMax) {
    throw new AppError('ERR_REQUEST_INVALID', {
      message: `limit must be an integer between 1 and ${defaults.pageMax}`,
    });
  }
  return limit;
}

export function encodeCursor(list: string, after: string | number): string {
  return Buffer.from(JSON.stringify({ l: list, a: after }), 'utf8').toString('base64url');
}

/**
 * The last key of a cursor of `list`. `keyPattern`, when given, is what a string key of that
 * list looks like (e.g. `cred_<32 hex>`): anything else is a forged cursor.
 */
export function decodeCursor(
  list: string,
  cursor: string,
  keyType: 'string' | 'number',
  keyPattern?: RegExp,
): string | number {
  let parsed: unknown;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new Error('not base64url');
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new AppError('ERR_INVALID_CURSOR');
  }
  const p = parsed as { l?: unknown; a?: unknown } | null;
  if (!p || typeof p !== 'object' || p.l !== list || typeof p.a !== keyType) throw new AppError('ERR_INVALID_CURSOR');
  if (keyType === 'number' && !Number.isSafeInteger(p.a)) throw new AppError('ERR_INVALID_CURSOR');
  if (keyPattern && !(typeof p.a === 'string' && keyPattern.test(p.a))) throw new AppError('ERR_INVALID_CURSOR');
  return p.a as string | number;
}

export interface PageSpec {
  /** Name of the list, bound into its cursors. */
  list: string;
  /** Ordering column (unique, ascending), e.g. `w.id`. */
  column: string;
  /** Key of that column in the returned rows; defaults to the column name after its dot. */
  rowKey?: string;
  keyType?: 'string' | 'number';
  /** Shape of a string key (anchored); a cursor carrying another value is invalid_cursor. */
  keyPattern?: RegExp;
  /** `desc` walks newest first (e.g. runs); ascending otherwise. */
  order?: 'asc' | 'desc';
}

/**
 * Runs `query` (already scoped and filtered) ordered by the spec's column (ascending unless
 * `order: 'desc'`), one page at a time: fetches limit + 1 rows to know whether another page
 * exists.
 */
export async function pageRows<Row extends Record<string, unknown>>(
  query: Knex.QueryBuilder,
  spec: PageSpec,
  req: PageRequest,
): Promise<{ rows: Row[]; nextCursor: string | null }> {
  const limit = pageLimit(req.limit);
  const keyType = spec.keyType ?? 'string';
  const order = spec.order ?? 'asc';
  if (req.cursor !== undefined) {
    query.where(
      spec.column,
      order === 'asc' ? '>' : '<',
      decodeCursor(spec.list, req.cursor, keyType, spec.keyPattern),
    );
  }
  const rows = (await query.orderBy(spec.column, order).limit(limit + 1)) as Row[];
  if (rows.length <= limit) return { rows, nextCursor: null };
  const page = rows.slice(0, limit);
  const key = spec.rowKey ?? spec.column.split('.').pop()!;
  return { rows: page, nextCursor: encodeCursor(spec.list, page[page.length - 1]![key] as string | number) };
}
