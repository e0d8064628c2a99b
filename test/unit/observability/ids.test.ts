/**
 * BlockIdGenerator (src/observability/ids.ts): trace and span ids in the W3C form, distinct across
 * the blocks of random bytes they are cut from, never the invalid all-zero id.
 */
import { expect } from 'chai';
import { randomFillSync } from 'node:crypto';
import { BlockIdGenerator } from '../../../src/observability/ids.js';

describe('trace and span ids (BlockIdGenerator)', () => {
  it('gives 32 and 16 lowercase hex characters, all distinct over many blocks', () => {
    const ids = new BlockIdGenerator();
    const traces = new Set<string>();
    const spans = new Set<string>();
    for (let i = 0; i < 5_000; i++) {
      traces.add(ids.generateTraceId());
      spans.add(ids.generateSpanId());
    }
    expect(traces.size).to.equal(5_000);
    expect(spans.size).to.equal(5_000);
    for (const t of traces) expect(t).to.match(/^[0-9a-f]{32}$/);
    for (const s of spans) expect(s).to.match(/^[0-9a-f]{16}$/);
  });

  it('draws again instead of giving the invalid all-zero id', () => {
    let blocks = 0;
    // The first block of each generator is all zeros; the next ones are random.
    const zerosFirst = (b: Buffer) => (blocks++ % 2 === 0 ? b.fill(0) : randomFillSync(b));
    const trace = new BlockIdGenerator(zerosFirst).generateTraceId();
    const span = new BlockIdGenerator(zerosFirst).generateSpanId();
    expect(trace)
      .to.match(/^[0-9a-f]{32}$/)
      .and.not.equal('0'.repeat(32));
    expect(span)
      .to.match(/^[0-9a-f]{16}$/)
      .and.not.equal('0'.repeat(16));
    expect(blocks).to.equal(4);
  });
});
