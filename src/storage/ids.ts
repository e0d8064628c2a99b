import { v7 as uuidv7 } from 'uuid';

/**
 * Server-generated ids: a short type prefix and a UUIDv7 without dashes, so ids sort by
 * creation time and cursor pagination can use them directly.
 */
export function newId(prefix: string): string {
  return `${prefix}_${uuidv7().replace(/-/g, '')}`;
}

export function nowIso(): string {
  return new Date().toISOString();
}
