/**
 * TtlMemo (src/kernel/ttl-memo.ts): the per-process memo behind API keys, trigger targets,
 * connections and the gateway catalogue. A change forgets its key in the changing process at
 * once, including a load that was already in flight when the change was made.
 */
import { expect } from 'chai';
import { TtlMemo } from '../../../src/kernel/ttl-memo.js';

/** A load that resolves when the test says so, counting how often it was started. */
function gatedLoads<V>() {
  const gates: { resolve(v: V): void; reject(e: Error): void }[] = [];
  return {
    started: () => gates.length,
    load: () =>
      new Promise<V>((resolve, reject) => {
        gates.push({ resolve, reject });
      }),
    resolve: (i: number, v: V) => gates[i]!.resolve(v),
    reject: (i: number, e: Error) => gates[i]!.reject(e),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('storage/TtlMemo', () => {
  it('concurrent misses share one load; the value is kept for the TTL, then loaded again', async () => {
    const memo = new TtlMemo<string>(300);
    const loads = gatedLoads<string>();
    const a = memo.get('k', loads.load);
    const b = memo.get('k', loads.load);
    expect(loads.started()).to.equal(1);
    loads.resolve(0, 'v1');
    expect(await Promise.all([a, b])).to.deep.equal(['v1', 'v1']);
    expect(await memo.get('k', () => Promise.resolve('other'))).to.equal('v1');
    await sleep(350);
    expect(await memo.get('k', () => Promise.resolve('v2'))).to.equal('v2');
  });

  for (const oldFinishes of ['first', 'last'] as const) {
    it(`a key forgotten while its load is in flight: that load is not kept, the next get reads afresh (old load finishes ${oldFinishes})`, async () => {
      const memo = new TtlMemo<string>(60_000);
      const loads = gatedLoads<string>();
      const before = memo.get('org', loads.load); // started before the change: reads the old record
      memo.delete('org'); // the change, in this process
      const after = memo.get('org', loads.load);
      expect(loads.started(), 'a get after the forget starts its own load').to.equal(2);
      const order = oldFinishes === 'first' ? [0, 1] : [1, 0];
      for (const i of order) {
        loads.resolve(i, i === 0 ? 'old' : 'new');
        expect(await (i === 0 ? before : after)).to.equal(i === 0 ? 'old' : 'new');
      }
      expect(await memo.get('org', () => Promise.resolve('unexpected load'))).to.equal('new');
    });
  }

  it('deletePrefix and clear drop in-flight loads too', async () => {
    const memo = new TtlMemo<string>(60_000);
    const loads = gatedLoads<string>();
    const a = memo.get('org1:x', loads.load);
    const b = memo.get('org2:x', loads.load);
    memo.deletePrefix('org1:');
    loads.resolve(0, 'old1');
    loads.resolve(1, 'kept2');
    await Promise.all([a, b]);
    expect(await memo.get('org1:x', () => Promise.resolve('fresh1'))).to.equal('fresh1');
    expect(await memo.get('org2:x', () => Promise.resolve('unexpected load'))).to.equal('kept2');
    const c = memo.get('org3:x', loads.load);
    memo.clear();
    loads.resolve(2, 'old3');
    await c;
    expect(await memo.get('org3:x', () => Promise.resolve('fresh3'))).to.equal('fresh3');
    expect(await memo.get('org2:x', () => Promise.resolve('fresh2'))).to.equal('fresh2');
  });

  it('a failed load is not kept and fails only its own callers; a forgotten one does not disturb the next', async () => {
    const memo = new TtlMemo<string>(60_000);
    const loads = gatedLoads<string>();
    const a = memo.get('k', loads.load);
    loads.reject(0, new Error('db down'));
    let err: unknown;
    try {
      await a;
    } catch (e) {
      err = e;
    }
    expect((err as Error).message).to.equal('db down');
    const b = memo.get('k', loads.load);
    memo.delete('k');
    const c = memo.get('k', loads.load);
    loads.reject(1, new Error('old failure'));
    await b.catch(() => undefined);
    loads.resolve(2, 'ok');
    expect(await c).to.equal('ok');
    expect(await memo.get('k', () => Promise.resolve('unexpected load'))).to.equal('ok');
  });

  it('TTL 0 loads on every get; at most maxEntries are kept, oldest first out', async () => {
    let n = 0;
    const none = new TtlMemo<number>(0);
    await none.get('k', () => Promise.resolve(++n));
    await none.get('k', () => Promise.resolve(++n));
    expect(n).to.equal(2);
    const small = new TtlMemo<string>(60_000, 2);
    for (const k of ['a', 'b', 'c']) await small.get(k, () => Promise.resolve(k));
    expect(await small.get('a', () => Promise.resolve('a again'))).to.equal('a again');
    expect(await small.get('c', () => Promise.resolve('unexpected load'))).to.equal('c');
  });
});
