/** Server-generated ids (src/kernel/ids.ts): prefixed UUIDv7, unique and increasing in creation order. */
import { expect } from 'chai';
import { newId } from '../../../src/kernel/ids.js';

describe('newId', () => {
  it('is <prefix>_<32 hex> with the UUIDv7 version and RFC 9562 variant', () => {
    const id = newId('run');
    expect(id).to.match(/^run_[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}$/);
  });

  it('100,000 ids made in a burst are unique and strictly increasing (same millisecond included)', () => {
    const ids = Array.from({ length: 100_000 }, () => newId('x'));
    expect(new Set(ids).size).to.equal(ids.length);
    for (let i = 1; i < ids.length; i++)
      if (ids[i]! <= ids[i - 1]!) expect.fail(`id ${i} does not increase: ${ids[i - 1]} then ${ids[i]}`);
  });

  it('carries the creation time in its first 48 bits', () => {
    const before = Date.now();
    const ms = parseInt(newId('t').slice(2, 14), 16);
    expect(ms).to.be.within(before, Date.now() + 1);
  });
});
