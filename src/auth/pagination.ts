import { AppError } from '../errors/index.js';
import { defaults } from '../config/defaults.js';

/**
 * Keyset pagination for management lists. Ids are UUIDv7-based (src/storage/ids.ts), so
 * "id > last id" walks rows in creation order without offsets; the cursor is the last id of
 * a page, base64url-encoded so clients treat it as opaque.
 */
export interface PageRequest {
  limit?: number | undefined;
  cursor?: string | undefined;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export function encodeCursor(lastId: string): string {
  return Buffer.from(lastId, 'utf8').toString('base64url');
}

/** Decodes a cursor and checks it names an id of the expected kind (`<prefix>_<32 hex>`). */
export function decodeCursor(cursor: string, prefix: string): string {
  const id = /^[A-Za-z0-9_-]{1,200}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  if (!new RegExp(`^${prefix}_[0-9a-f]{32}$`).test(id)) throw new AppError('ERR_INVALID_CURSOR');
  return id;
}

/** Clamps a service-level limit; handlers reject out-of-range values before this. */
export function clampLimit(limit: number | undefined): number {
  if (limit === undefined || !Number.isFinite(limit)) return defaults.pageDefault;
  return Math.min(Math.max(Math.trunc(limit), 1), defaults.pageMax);
}

/** Turns `limit + 1` fetched rows into a page and its next cursor. */
export function toPage<R extends { id: string }, T>(rows: R[], limit: number, map: (row: R) => T): Page<T> {
  const more = rows.length > limit;
  const pageRows = more ? rows.slice(0, limit) : rows;
  const last = pageRows[pageRows.length - 1];
  return { items: pageRows.map(map), nextCursor: more && last ? encodeCursor(last.id) : null };
}
