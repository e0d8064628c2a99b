/**
 * Trace and span ids for the tracer provider: random bytes from the operating system's CSPRNG,
 * drawn in blocks and turned into hex once per block, so an id costs a substring rather than a
 * buffer write and a hex conversion each (the SDK's default draws from Math.random per id).
 * Ids are independent and uniformly random, as W3C trace context recommends; an all-zero id
 * (invalid) is drawn again.
 */
import { randomFillSync } from 'node:crypto';
import { INVALID_SPANID, INVALID_TRACEID } from '@opentelemetry/api';
import type { IdGenerator } from '@opentelemetry/sdk-trace';

/** Bytes drawn at a time: 64 trace ids. A live span keeps its block's hex (2 KiB) reachable. */
const BLOCK_BYTES = 1024;

export class BlockIdGenerator implements IdGenerator {
  private readonly bytes = Buffer.allocUnsafe(BLOCK_BYTES);
  /** `fill` fills a buffer with random bytes (the CSPRNG; tests give their own). */
  constructor(private readonly fill: (b: Buffer) => Buffer = randomFillSync) {}

  private hex = '';
  private at = 0;

  /** The next `chars` hex characters of the current block, drawing a new block when it is used up. */
  private take(chars: number): string {
    if (this.at + chars > this.hex.length) {
      this.hex = this.fill(this.bytes).toString('hex');
      this.at = 0;
    }
    const id = this.hex.substring(this.at, this.at + chars);
    this.at += chars;
    return id;
  }

  generateTraceId(): string {
    const id = this.take(32);
    return id === INVALID_TRACEID ? this.generateTraceId() : id;
  }

  generateSpanId(): string {
    const id = this.take(16);
    return id === INVALID_SPANID ? this.generateSpanId() : id;
  }
}
