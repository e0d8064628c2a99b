/**
 * OrgMemo (src/kernel/org-memo.ts): values made from an organisation's own input are memoised
 * per organisation, so another organisation's identical input is a miss (README "Caches").
 */
import { expect } from 'chai';
import { OrgMemo } from '../../../src/kernel/org-memo.js';

describe('kernel/OrgMemo', () => {
  it("another organisation's identical key is a miss; the organisation's own repeat is a hit", () => {
    const memo = new OrgMemo<{ made: number }>(10);
    let made = 0;
    const make = () => ({ made: ++made });
    const a = memo.get('org_a', 'same input', make);
    expect(memo.get('org_a', 'same input', make)).to.equal(a);
    expect(made).to.equal(1);
    const b = memo.get('org_b', 'same input', make);
    expect(b).to.not.equal(a);
    expect(made).to.equal(2);
    // An organisation id that ends where another's key begins reaches nothing of it.
    const c = memo.get('org_c', 'x\u0000y', make);
    expect(memo.get('org_c\u0000x', 'y', make)).to.not.equal(c);
    expect(made).to.equal(4);
  });

  it('is bounded: the least recently used entries go first; a failed make keeps nothing', () => {
    const memo = new OrgMemo<string>(2);
    memo.get('org_a', 'one', () => '1');
    memo.get('org_a', 'two', () => '2');
    memo.get('org_a', 'one', () => 'again');
    memo.get('org_b', 'three', () => '3');
    expect(memo.size).to.equal(2);
    expect(memo.get('org_a', 'one', () => 'again')).to.equal('1');
    expect(memo.get('org_a', 'two', () => 'made again')).to.equal('made again');
    expect(() =>
      memo.get('org_a', 'bad', () => {
        throw new Error('no');
      }),
    ).to.throw('no');
    expect(memo.get('org_a', 'bad', () => 'fine')).to.equal('fine');
  });
});
