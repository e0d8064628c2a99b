/**
 * The memory budget of tenant processes (src/containment/budget.ts): admission within the
 * budget, eviction of idle members least recently used first (code runners and browser boxes
 * alike) and only as far as needed, no eviction of busy members, measured sizes replacing the
 * expected ones.
 */
import { expect } from 'chai';
import { MemoryBudget, type BudgetKind } from '../../../src/containment/index.js';

const MiB = 1024 * 1024;

function member(budget: MemoryBudget, kind: BudgetKind, name: string, mb: number, evicted: string[]) {
  return budget.admit(kind, { orgId: name, expectedBytes: mb * MiB, evict: () => evicted.push(name) });
}

describe('containment: the memory budget of tenant processes', () => {
  it('admits while the budget holds, and refuses without evicting anything when only busy members are left', () => {
    const budget = new MemoryBudget(100 * MiB);
    const evicted: string[] = [];
    const a = member(budget, 'runner', 'a', 40, evicted);
    const b = member(budget, 'browser', 'b', 50, evicted);
    expect(a).to.not.equal(undefined);
    expect(b).to.not.equal(undefined);
    expect(member(budget, 'runner', 'c', 20, evicted)).to.equal(undefined);
    expect(evicted).to.deep.equal([]);
    expect(budget.stats()).to.include({ members: 2, usedBytes: 90 * MiB, refusals: 1, evictions: 0 });
  });

  it('evicts idle members least recently used first, of any kind, only as many as needed; busy ones never', () => {
    const budget = new MemoryBudget(100 * MiB);
    const evicted: string[] = [];
    const a = member(budget, 'runner', 'a', 30, evicted)!;
    const b = member(budget, 'browser', 'b', 30, evicted)!;
    const c = member(budget, 'runner', 'c', 30, evicted)!;
    b.idle();
    a.idle();
    c.idle();
    a.busy(); // in use again: not evictable
    expect(member(budget, 'runner', 'd', 40, evicted)).to.not.equal(undefined);
    // 90 used + 40 > 100: the least recently idle (b) goes, and that is enough.
    expect(evicted).to.deep.equal(['b']);
    expect(member(budget, 'runner', 'e', 60, evicted)).to.equal(undefined); // only c (30) is idle: not enough
    expect(evicted).to.deep.equal(['b']);
    c.release();
    expect(member(budget, 'runner', 'e', 30, evicted)).to.not.equal(undefined);
    expect(budget.stats()).to.include({ members: 3, evictions: 1 });
  });

  it('counts what the owner measured instead of the expected size, and frees a released member at once', () => {
    const budget = new MemoryBudget(100 * MiB);
    const evicted: string[] = [];
    const a = member(budget, 'browser', 'a', 10, evicted)!;
    a.setBytes(80 * MiB);
    expect(budget.usedBytes()).to.equal(80 * MiB);
    expect(member(budget, 'runner', 'b', 30, evicted)).to.equal(undefined);
    a.release();
    a.release();
    a.setBytes(90 * MiB); // gone: nothing counted
    expect(budget.usedBytes()).to.equal(0);
    expect(member(budget, 'runner', 'b', 30, evicted)).to.not.equal(undefined);
  });

  it('a measurement past the total evicts idle members, least recently used first, until it fits; never busy ones', () => {
    const budget = new MemoryBudget(100 * MiB);
    const evicted: string[] = [];
    const a = member(budget, 'runner', 'a', 20, evicted)!;
    const b = member(budget, 'runner', 'b', 20, evicted)!;
    const c = member(budget, 'browser', 'c', 20, evicted)!;
    const d = member(budget, 'runner', 'd', 20, evicted)!;
    b.idle();
    a.idle();
    c.idle();
    expect(d.bytes).to.equal(20 * MiB);
    d.setBytes(70 * MiB); // 130 MiB counted: b (20) and a (20) go, c stays
    expect(evicted).to.deep.equal(['b', 'a']);
    expect(budget.usedBytes()).to.equal(90 * MiB);
    expect(a.bytes).to.equal(0);
    d.setBytes(150 * MiB); // past the total with only c idle: c goes, d (busy) stays counted
    expect(evicted).to.deep.equal(['b', 'a', 'c']);
    expect(budget.stats()).to.include({ members: 1, usedBytes: 150 * MiB, evictions: 3 });
  });
});
