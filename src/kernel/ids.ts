import { randomFillSync } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

/**
 * Random bytes for ids, drawn from a pool refilled 4 KiB at a time: uuid draws 16 fresh bytes
 * from the OS per id, a measurable share of the trigger hot path (bench/triggers.ts).
 */
const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let offset = POOL_BYTES;

function random16(): Uint8Array {
  if (offset + 16 > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  const bytes = pool.subarray(offset, offset + 16);
  offset += 16;
  return bytes;
}

/** UUIDv7 ordering state (as uuid keeps it without options): ids made in one millisecond still increase. */
const state = { msecs: -Infinity, seq: 0 };

/**
 * Server-generated ids: a short type prefix and a UUIDv7 without dashes, so ids sort by
 * creation time and cursor pagination can use them directly.
 */
export function newId(prefix: string): string {
  const random = random16();
  const now = Date.now();
  if (now > state.msecs) {
    // A fresh random 31-bit sequence per millisecond, as RFC 9562 method 1 suggests.
    state.seq = ((random[6]! << 23) | (random[7]! << 16) | (random[8]! << 8) | random[9]!) >>> 1;
    state.msecs = now;
  } else {
    state.seq = (state.seq + 1) | 0;
    if (state.seq === 0) state.msecs++;
  }
  return `${prefix}_${uuidv7({ random, msecs: state.msecs, seq: state.seq }).replace(/-/g, '')}`;
}

export function nowIso(): string {
  return new Date().toISOString();
}
