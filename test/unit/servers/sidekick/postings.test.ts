/**
 * The discovery index's scorer (src/servers/sidekick/postings.ts): BM25+ per field as written
 * out by hand, prefix and typo weights, the best-`max` selection against a full sort, match
 * details, and removals that leave the index as a fresh build of what is left.
 */
import { expect } from 'chai';
import { Postings, type TermSpec } from '../../../../src/servers/sidekick/postings.js';
import { terms, tokenize } from '../../../../src/servers/sidekick/text.js';

const FIELDS = ['name', 'description'];
const BOOSTS = [3, 1];
const spec = (term: string, over: Partial<TermSpec> = {}): TermSpec => ({
  term,
  fields: [0, 1],
  boost: 1,
  prefix: false,
  fuzzy: 0,
  ...over,
});

/** BM25+ as MiniSearch defines it (k 1.2, b 0.7, d 0.5). */
function bm25(tf: number, matching: number, docs: number, length: number, avg: number): number {
  const idf = Math.log(1 + (docs - matching + 0.5) / (matching + 0.5));
  return idf * (0.5 + (tf * 2.2) / (tf + 1.2 * (1 - 0.7 + (0.7 * length) / avg)));
}

/** A seeded generator, so the random index is the same on every run. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const WORDS = [
  'invoice',
  'invoices',
  'customer',
  'refund',
  'payment',
  'ticket',
  'issue',
  'message',
  'channel',
  'create',
  'list',
  'delete',
  'update',
  'search',
  'file',
  'folder',
];

function randomDocs(n: number, seed: number): string[][] {
  const r = random(seed);
  const pick = (k: number) => Array.from({ length: k }, () => WORDS[Math.floor(r() * WORDS.length)]!).join(' ');
  return Array.from({ length: n }, () => [pick(1 + Math.floor(r() * 3)), pick(Math.floor(r() * 12))]);
}

/** Every document's score by brute force, then a stable sort: what `search` must return. */
function reference(docs: (string[] | undefined)[], specs: TermSpec[], max: number): { id: number; score: number }[] {
  const live = docs.map((d, id) => ({ d, id })).filter((x): x is { d: string[]; id: number } => x.d !== undefined);
  const tokens = live.map(({ d }) => d.map((t) => terms(t)));
  const lengths = live.map(({ d }) => d.map((t) => new Set(tokenize(t)).size));
  const avg = FIELDS.map((_, f) => lengths.reduce((s, l) => s + l[f]!, 0) / live.length);
  const scored = live.map(({ id }, i) => {
    let score = 0;
    const terms = new Set<string>();
    for (const s of specs) {
      for (const f of s.fields) {
        const tf = tokens[i]![f]!.filter((t) => t === s.term).length;
        if (!tf) continue;
        const matching = tokens.filter((doc) => doc[f]!.includes(s.term)).length;
        score += s.boost * BOOSTS[f]! * bm25(tf, matching, live.length, lengths[i]![f]!, avg[f]!);
        terms.add(s.term);
      }
    }
    return { id, score, rank: score * terms.size };
  });
  return scored
    .filter((x) => x.rank > 0)
    .sort((a, b) => b.rank - a.rank)
    .slice(0, max)
    .map(({ id, score }) => ({ id, score }));
}

describe('discovery postings (BM25+ scorer)', () => {
  it('scores one term in one field exactly as BM25+ with the field boost', () => {
    const p = new Postings(FIELDS, BOOSTS);
    p.add(1, ['refund payment', 'refund a payment to the customer']);
    p.add(2, ['list payments', 'every payment of an account']);
    p.add(3, ['create customer', '']);
    const [hit, ...rest] = p.search([spec(terms('refund')[0]!, { fields: [0] })], 10);
    expect(rest).to.deep.equal([]);
    expect(hit!.id).to.equal(1);
    // Name lengths 2, 2, 2 (distinct raw tokens): average 2.
    expect(hit!.score).to.be.closeTo(3 * bm25(1, 1, 3, 2, 2), 1e-12);
    expect(hit!.queryTerms).to.deep.equal(['refund']);
    expect({ ...hit!.match }).to.deep.equal({ refund: ['name'] });
  });

  it('weighs prefix and typo matches by how far the indexed term is, and never counts the exact term twice', () => {
    const p = new Postings(FIELDS, BOOSTS);
    p.add(1, ['subscription', '']);
    p.add(2, ['subscriber', '']);
    p.add(3, ['payments', '']);
    const prefix = p.search([spec('subscri', { prefix: true, fields: [0] })], 10);
    expect(prefix.map((h) => h.id).sort()).to.deep.equal([1, 2]);
    const sub = prefix.find((h) => h.id === 1)!;
    expect(terms('subscription')).to.deep.equal(['subscript']);
    // "subscript" is 2 letters past the prefix: 0.4 × 9 / (9 + 0.3 × 2) of the exact score.
    expect(sub.score).to.be.closeTo(((0.4 * 9) / (9 + 0.3 * 2)) * 3 * bm25(1, 1, 3, 1, 1), 1e-12);
    expect(terms('payments')).to.deep.equal(['payment']);
    const typo = p.search([spec('paymnt', { fuzzy: 1, fields: [0] })], 10);
    expect(typo.map((h) => h.id)).to.deep.equal([3]);
    expect(Object.keys(typo[0]!.match)).to.deep.equal(['payment']);
    expect(typo[0]!.score).to.be.closeTo(((0.3 * 7) / (7 + 1)) * 3 * bm25(1, 1, 3, 1, 1), 1e-12);
    // Reached both by prefix and by typo: scored once, as a prefix match.
    const both = p.search([spec('paymen', { prefix: true, fuzzy: 1, fields: [0] })], 10);
    expect(both.map((h) => h.id)).to.deep.equal([3]);
    expect(both[0]!.score).to.be.closeTo(((0.4 * 7) / (7 + 0.3)) * 3 * bm25(1, 1, 3, 1, 1), 1e-12);
    expect(both[0]!.match).to.deep.include({ payment: ['name'] });
  });

  it('the best `max` of a random index are the brute-force best, score × terms matched, ties in first-matched order', () => {
    const docs = randomDocs(400, 7);
    const p = new Postings(FIELDS, BOOSTS);
    docs.forEach((d, id) => p.add(id, d));
    const [invoice, refund, ticket, list] = ['invoices', 'refund', 'ticket', 'list'].map((w) => terms(w)[0]!);
    expect(invoice).to.equal(terms('invoice')[0]);
    const specs = [spec(invoice!), spec(refund!, { boost: 0.45 }), spec(ticket!, { fields: [0] }), spec(list!)];
    for (const max of [1, 5, 40, 1000]) {
      const got = p.search(specs, max).map(({ id, score }) => ({ id, score }));
      const want = reference(docs, specs, max);
      expect(
        got.map((h) => h.id),
        `max ${max}`,
      ).to.deep.equal(want.map((h) => h.id));
      got.forEach((h, i) => expect(h.score).to.be.closeTo(want[i]!.score, 1e-9));
    }
  });

  it('after removals and re-adds the index answers exactly as a fresh build of what is left', () => {
    const docs: (string[] | undefined)[] = randomDocs(300, 11);
    const p = new Postings(FIELDS, BOOSTS);
    docs.forEach((d, id) => p.add(id, d!));
    for (let id = 0; id < docs.length; id += 3) {
      p.remove(
        id,
        docs[id]!.flatMap((t) => terms(t)),
      );
      docs[id] = undefined;
    }
    // A removed id can come back, in a freed slot.
    docs[3] = ['refund ticket', 'refund this ticket'];
    p.add(3, docs[3]);
    const fresh = new Postings(FIELDS, BOOSTS);
    docs.forEach((d, id) => d && fresh.add(id, d));
    expect(p.size).to.equal(fresh.size);
    const specs = [spec(terms('refund')[0]!), spec(terms('ticket')[0]!), spec('paym', { prefix: true })];
    const a = p.search(specs, 50);
    const b = fresh.search(specs, 50);
    expect(a.length).to.be.greaterThan(10);
    expect(new Set(a.map((h) => h.id))).to.deep.equal(new Set(b.map((h) => h.id)));
    const scores = new Map(b.map((h) => [h.id, h.score]));
    for (const h of a) expect(h.score).to.be.closeTo(scores.get(h.id)!, 1e-12);
    // Exact terms only: the brute force agrees with what is left.
    const exact = specs.slice(0, 2);
    expect(new Set(p.search(exact, 1000).map((h) => h.id))).to.deep.equal(
      new Set(reference(docs, exact, 1000).map((h) => h.id)),
    );
  });

  it('refuses a duplicate id, ignores an unknown removal, and answers nothing on an empty index', () => {
    const p = new Postings(FIELDS, BOOSTS);
    expect(p.search([spec('refund')], 10)).to.deep.equal([]);
    p.add(1, ['refund', '']);
    expect(() => p.add(1, ['again', ''])).to.throw(/duplicate/);
    p.remove(99, ['refund']);
    expect(p.size).to.equal(1);
    p.remove(1, ['refund']);
    expect(p.size).to.equal(0);
    expect(p.search([spec('refund')], 10)).to.deep.equal([]);
  });
});
