/**
 * The discovery index's inverted index and BM25+ scorer. It scores exactly as MiniSearch 7's
 * search does (same BM25+ parameters, field lengths, field boosts, prefix and typo weights, the
 * same "score × query terms matched" candidate order), but without an object per matching
 * document: at 10,000 tools a request's words can touch thousands of documents, of which the
 * caller keeps the best few dozen, and an object for each would dominate a discover call
 * (bench/discovery/README.md). Scores accumulate in typed arrays indexed by a document's slot;
 * only the best `max` documents get their match details, from a second pass over the same
 * postings. MiniSearch's SearchableMap (its radix tree) holds the terms and answers prefix and
 * typo (Levenshtein) lookups.
 */
import SearchableMap from 'minisearch/SearchableMap';
import { processTerm, tokenize } from './text.js';

/** MiniSearch's BM25+ defaults, so rankings are those of MiniSearch's own search. */
const K = 1.2;
const B = 0.7;
const D = 0.5;
/** Weights of a prefix and of a typo match (then scaled by how far the indexed term is). */
const PREFIX_WEIGHT = 0.4;
const FUZZY_WEIGHT = 0.3;

/** One field's postings of a term: document slots and their term frequencies, in step. */
interface FieldPostings {
  slots: number[];
  tfs: number[];
}

/** A term's postings, by field index. */
type TermPostings = (FieldPostings | undefined)[];

/** How one query term is searched: its fields, its weight, and whether prefix and typo matches count. */
export interface TermSpec {
  term: string;
  fields: readonly number[];
  boost: number;
  prefix: boolean;
  /** Largest edit distance of a typo match; 0 for none. */
  fuzzy: number;
}

/** One of the best documents: its score and what matched (MiniSearch's result shape, for coverage). */
export interface Scored {
  id: number;
  /** Σ weighted BM25+ over every matched (term, field). */
  score: number;
  /** Query terms that matched, each once. */
  queryTerms: string[];
  /** Indexed term → names of the fields it matched in. */
  match: Record<string, string[]>;
}

/** A run of postings to score: one indexed term in one field, for one query term. */
interface Run {
  source: number;
  derived: string;
  field: number;
  weight: number;
  postings: FieldPostings;
}

export class Postings {
  private readonly terms = new SearchableMap<TermPostings>();
  private readonly slotOf = new Map<number, number>();
  private readonly ids: (number | undefined)[] = [];
  private readonly free: number[] = [];
  /** Field lengths (distinct raw tokens, as MiniSearch counted them), by field then slot. */
  private readonly lengths: number[][];
  private readonly totals: number[];
  private count = 0;
  // Per-search scratch, indexed by slot; grown with the slots.
  private acc = new Float64Array(0);
  private matched = new Int32Array(0);
  private lastSource = new Int32Array(0);
  private order = new Int32Array(0);
  private top = new Int32Array(0);

  constructor(
    private readonly fieldNames: readonly string[],
    private readonly boosts: readonly number[],
  ) {
    this.lengths = fieldNames.map(() => []);
    this.totals = fieldNames.map(() => 0);
  }

  get size(): number {
    return this.count;
  }

  /** Indexes a document's field texts (in `fieldNames` order). */
  add(id: number, texts: readonly string[]): void {
    if (this.slotOf.has(id)) throw new Error(`discovery index: duplicate document id ${id}`);
    const slot = this.free.pop() ?? this.ids.length;
    this.ids[slot] = id;
    this.slotOf.set(id, slot);
    texts.forEach((text, field) => {
      const tokens = tokenize(text);
      const length = new Set(tokens).size;
      this.lengths[field]![slot] = length;
      this.totals[field]! += length;
      const tf = new Map<string, number>();
      for (const token of tokens) {
        const t = processTerm(token);
        if (t === null) continue;
        for (const x of Array.isArray(t) ? t : [t]) tf.set(x, (tf.get(x) ?? 0) + 1);
      }
      for (const [term, n] of tf) {
        const postings = this.terms.fetch(term, () => []);
        const fp = (postings[field] ??= { slots: [], tfs: [] });
        fp.slots.push(slot);
        fp.tfs.push(n);
      }
    });
    this.count += 1;
  }

  /** Removes a document; `terms` are its indexed terms (any superset works). */
  remove(id: number, terms: Iterable<string>): void {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return;
    for (const term of terms) {
      const postings = this.terms.get(term);
      if (!postings) continue;
      for (const fp of postings) {
        const i = fp ? fp.slots.indexOf(slot) : -1;
        if (i < 0) continue;
        fp!.slots.splice(i, 1);
        fp!.tfs.splice(i, 1);
      }
      if (postings.every((fp) => !fp || fp.slots.length === 0)) this.terms.delete(term);
    }
    this.lengths.forEach((l, field) => {
      this.totals[field]! -= l[slot] ?? 0;
      l[slot] = 0;
    });
    this.slotOf.delete(id);
    this.ids[slot] = undefined;
    this.free.push(slot);
    this.count -= 1;
  }

  /**
   * The best `max` documents for the query terms, best first: the sum of their weighted BM25+
   * scores times the number of query terms they matched, ties in the order first matched.
   */
  search(specs: readonly TermSpec[], max: number): Scored[] {
    if (this.count === 0 || max <= 0) return [];
    const runs = this.runs(specs);
    this.grow();
    const { acc, matched, lastSource, order } = this;
    const touched: number[] = [];
    const n = this.count;
    for (const run of runs) {
      const { slots, tfs } = run.postings;
      const idf = Math.log(1 + (n - slots.length + 0.5) / (slots.length + 0.5));
      const lengths = this.lengths[run.field]!;
      const norm = K / (this.totals[run.field]! / n);
      const w = run.weight * idf;
      for (let i = 0; i < slots.length; i++) {
        const slot = slots[i]!;
        const tf = tfs[i]!;
        if (order[slot] === 0) {
          touched.push(slot);
          order[slot] = touched.length;
          acc[slot] = 0;
          matched[slot] = 0;
          lastSource[slot] = -1;
        }
        acc[slot] = acc[slot]! + w * (D + (tf * (K + 1)) / (tf + K * (1 - B) + B * lengths[slot]! * norm));
        if (lastSource[slot] !== run.source) {
          lastSource[slot] = run.source;
          matched[slot] = matched[slot]! + 1;
        }
      }
    }
    const best = this.best(touched, max);
    const out = this.details(runs, specs, best);
    for (const slot of touched) order[slot] = 0;
    return out;
  }

  /** Every (query term, indexed term, field) to score, in the order MiniSearch visited them. */
  private runs(specs: readonly TermSpec[]): Run[] {
    const runs: Run[] = [];
    specs.forEach((spec, source) => {
      const add = (derived: string, postings: TermPostings, weight: number): void => {
        for (const field of spec.fields) {
          const fp = postings[field];
          if (fp && fp.slots.length)
            runs.push({ source, derived, field, weight: weight * spec.boost * this.boosts[field]!, postings: fp });
        }
      };
      const exact = this.terms.get(spec.term);
      if (exact) add(spec.term, exact, 1);
      const fuzzy = spec.fuzzy > 0 ? this.terms.fuzzyGet(spec.term, spec.fuzzy) : undefined;
      if (spec.prefix) {
        for (const [term, postings] of this.terms.atPrefix(spec.term)) {
          const distance = term.length - spec.term.length;
          if (!distance) continue;
          fuzzy?.delete(term);
          add(term, postings, (PREFIX_WEIGHT * term.length) / (term.length + 0.3 * distance));
        }
      }
      for (const [term, [postings, distance]] of fuzzy ?? []) {
        if (distance) add(term, postings, (FUZZY_WEIGHT * term.length) / (term.length + distance));
      }
    });
    return runs;
  }

  /** The `max` best touched slots by score × terms matched, best first (a min-heap of the best). */
  private best(touched: readonly number[], max: number): number[] {
    const { acc, matched, order } = this;
    const value = (slot: number) => acc[slot]! * matched[slot]!;
    // Worse: lower value, or the same value first matched later.
    const worse = (a: number, b: number) => value(a) < value(b) || (value(a) === value(b) && order[a]! > order[b]!);
    const heap: number[] = [];
    const down = (i: number): void => {
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && worse(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && worse(heap[r]!, heap[m]!)) m = r;
        if (m === i) return;
        [heap[i], heap[m]] = [heap[m]!, heap[i]!];
        i = m;
      }
    };
    for (const slot of touched) {
      if (heap.length < max) {
        heap.push(slot);
        for (let i = heap.length - 1; i > 0;) {
          const p = (i - 1) >> 1;
          if (!worse(heap[i]!, heap[p]!)) break;
          [heap[i], heap[p]] = [heap[p]!, heap[i]!];
          i = p;
        }
      } else if (worse(heap[0]!, slot)) {
        heap[0] = slot;
        down(0);
      }
    }
    return heap.sort((a, b) => (worse(a, b) ? 1 : worse(b, a) ? -1 : 0));
  }

  /** What matched in each of the best documents: a second pass over the same postings. */
  private details(runs: readonly Run[], specs: readonly TermSpec[], best: readonly number[]): Scored[] {
    const { top } = this;
    const out: Scored[] = best.map((slot, i) => {
      top[slot] = i + 1;
      return {
        id: this.ids[slot]!,
        score: this.acc[slot]!,
        queryTerms: [],
        match: Object.create(null) as Record<string, string[]>,
      };
    });
    for (const run of runs) {
      const field = this.fieldNames[run.field]!;
      const term = specs[run.source]!.term;
      for (const slot of run.postings.slots) {
        const k = top[slot]!;
        if (k === 0) continue;
        const r = out[k - 1]!;
        if (!r.queryTerms.includes(term)) r.queryTerms.push(term);
        const fields = Object.hasOwn(r.match, run.derived) ? r.match[run.derived]! : (r.match[run.derived] = []);
        fields.push(field);
      }
    }
    for (const slot of best) top[slot] = 0;
    return out;
  }

  private grow(): void {
    const need = this.ids.length;
    if (this.acc.length >= need) return;
    const size = Math.max(need, this.acc.length * 2, 64);
    this.acc = new Float64Array(size);
    this.matched = new Int32Array(size);
    this.lastSource = new Int32Array(size);
    this.order = new Int32Array(size);
    this.top = new Int32Array(size);
  }
}
