/**
 * Query analysis and scoring on top of the postings (postings.ts: BM25+, field boosts, prefix
 * and typo matching).
 *
 * Confidence (spec section 8 `confidence`, 0..1) of a hit:
 *   specificity × coverage × (REL_FLOOR + (1 − REL_FLOOR) × bm25 / bestBm25)
 * - coverage: how much of the request the hit explains. Every query word is a group; a group
 *   counts 1 when the word itself matched, 0.8 by prefix, 0.6 by typo (fuzzy) match and 0.75
 *   through a related word (WordNet synonyms and hypernyms, lexicon.ts), times the quality of
 *   the field it matched in (the caller's field specs; for tools, catalog.ts: name/title 1,
 *   first sentence of the description/server 0.9, rest of the description 0.5, server
 *   description 0.4, parameters 0.3). On indexes of 50+
 *   documents groups are weighted by IDF clamped to [1, 2.5], so specific words ("refund")
 *   count more than common ones ("get"); words no document contains weigh 0.6, because they are
 *   usually arguments (a person's name), not capabilities.
 * - bm25 / bestBm25: BM25 relative to the best candidate, so the top of a good match sits near 1.
 * - specificity, the saturating absolute component: 1 − exp(−Σ IDF / 2) over the request's
 *   words, so a vague one-word request ("create") cannot reach 1 however well it matches.
 * The caller gives an exact tool-name request confidence 1 and applies the context policy.
 *
 * Values in the request (file names, URLs, e-mail and IP addresses, versions, #channels, issue
 * keys) are not words of it: each counts as the word for its kind (literals.ts). Only the first
 * MAX_REQUEST_WORDS words are read.
 */
import { processTerm, terms, words } from './text.js';
import { Postings, type Scored, type TermSpec } from './postings.js';
import { related } from './lexicon.js';
import { literals } from './literals.js';

/** Weight of a related word relative to the word the user wrote. */
const RELATED_WEIGHT = 0.45;
const REL_FLOOR = 0.55;
/** Σ IDF of the request at which specificity reaches 1 − 1/e. */
const SPECIFICITY_SCALE = 2;
/** Range of a group's IDF weight: wide enough to favour specific words, narrow enough that one
 * rare word matched in a parameter text cannot outweigh the rest of the request. */
const MIN_WEIGHT = 1;
const MAX_WEIGHT = 2.5;
/** Group weight of a word that no document contains. */
const UNKNOWN_WEIGHT = 0.6;
/** Below this many documents IDF is too noisy to weigh words against each other: all weigh 1. */
const MIN_DOCS_FOR_IDF = 50;
const MIN_DOCS_FOR_SPECIFICITY = 10;
/** Specificity added by a word that no document contains (usually an argument, e.g. a name). */
const UNKNOWN_SPECIFICITY = 0.3;
/** Words found in more than this share of the documents (and MIN_COMMON_DOCS) are "common". */
const COMMON_SHARE = 0.03;
const MAIN_QUALITY = 0.9;
const MIN_COMMON_DOCS = 200;

export interface QueryGroup {
  /** Terms the user wrote (one word may give several: camelCase parts, aliases). */
  terms: readonly string[];
  related: ReadonlySet<string>;
}

export interface AnalyzedQuery {
  groups: QueryGroup[];
  original: ReadonlySet<string>;
}

/**
 * Words of a request that are read (the input schema says so). Every word adds ranking work
 * over all the organisation's tools; without a bound, one request of a megabyte would hold the
 * process for seconds.
 */
export const MAX_REQUEST_WORDS = 128;

/** Splits a request into word groups and their related words. */
export function analyze(request: string): AnalyzedQuery {
  const groups: QueryGroup[] = [];
  const original = new Set<string>();
  // Values (file names, URLs, channels …) count as the word for their kind (literals.ts).
  const { rest, kinds } = literals(firstWords(request, MAX_REQUEST_WORDS));
  for (const forms of [...words(rest), ...kinds.flatMap((k) => words(k))]) {
    const ts = new Set<string>();
    for (const form of forms) {
      const t = processTerm(form);
      if (t === null) continue;
      for (const x of Array.isArray(t) ? t : [t]) ts.add(x);
    }
    if (ts.size === 0) continue;
    ts.forEach((t) => original.add(t));
    groups.push({ terms: [...ts], related: new Set() });
  }
  for (const g of groups) {
    for (const t of g.terms) {
      for (const r of related(t)) if (!original.has(r)) (g.related as Set<string>).add(r);
    }
  }
  return { groups, original };
}

/** The text up to the end of its `n`th whitespace-separated word. */
function firstWords(text: string, n: number): string {
  const word = /\S+/gu;
  let end = 0;
  for (let i = 0; i < n; i++) {
    const m = word.exec(text);
    if (!m) return text;
    end = m.index + m[0].length;
  }
  return text.slice(0, end);
}

/** How a field scores (BM25 boost) and how much a match in it explains the request. */
export interface FieldSpec {
  boost: number;
  quality: number;
}

export interface Hit {
  id: number;
  score: number;
  coverage: number;
  confidence: number;
}

/**
 * An inverted index over documents with numeric ids (postings.ts: BM25+ per field), plus the
 * document frequencies that weigh query groups. Documents can be added and removed
 * (incremental updates).
 */
export class TermIndex<D extends { id: number }> {
  private readonly postings: Postings;
  private readonly names: string[];
  private readonly df = new Map<string, number>();
  private readonly docTerms = new Map<number, string[]>();
  /** All fields, by index. */
  private readonly allFields: number[];
  /** Fields that describe the document itself (quality ≥ MAIN_QUALITY). */
  private readonly mainFields: number[];
  /** Fields that name the document (quality 1). */
  private readonly nameFields: number[];

  constructor(
    private readonly fields: Record<string, FieldSpec>,
    private readonly text: (doc: D, field: string) => string,
  ) {
    this.names = Object.keys(fields);
    this.postings = new Postings(
      this.names,
      this.names.map((f) => fields[f]!.boost),
    );
    this.allFields = this.names.map((_, i) => i);
    this.mainFields = this.allFields.filter((i) => fields[this.names[i]!]!.quality >= MAIN_QUALITY);
    this.nameFields = this.allFields.filter((i) => fields[this.names[i]!]!.quality >= 1);
  }

  get size(): number {
    return this.postings.size;
  }

  add(doc: D): void {
    const texts = this.names.map((f) => this.text(doc, f));
    this.postings.add(doc.id, texts);
    const distinct = [...new Set(texts.flatMap((t) => terms(t)))];
    this.docTerms.set(doc.id, distinct);
    for (const t of distinct) this.df.set(t, (this.df.get(t) ?? 0) + 1);
  }

  remove(id: number): void {
    const distinct = this.docTerms.get(id);
    if (!distinct) return;
    this.postings.remove(id, distinct);
    this.docTerms.delete(id);
    for (const t of distinct) {
      const n = (this.df.get(t) ?? 1) - 1;
      if (n > 0) this.df.set(t, n);
      else this.df.delete(t);
    }
  }

  /** The best `max` candidates with their confidence, unsorted (callers rank by confidence). */
  search(q: AnalyzedQuery, max: number): Hit[] {
    if (q.groups.length === 0 || this.size === 0) return [];
    const results = this.postings.search(this.query(q), max);
    if (results.length === 0) return [];
    const weights = q.groups.map((g) => this.groupWeight(g));
    const specificity = this.specificity(q);
    // Candidates come ordered by score × the number of query terms matched, related words and
    // parameter-text matches included; coverage measures that properly, so rank on plain BM25.
    const candidates = results.map((r) => ({ r, bm25: r.score }));
    const best = Math.max(...candidates.map((c) => c.bm25));
    return candidates.map(({ r, bm25 }) => {
      const coverage = this.coverage(r, q, weights);
      const confidence = specificity * coverage * (REL_FLOOR + (1 - REL_FLOOR) * (bm25 / best));
      return { id: r.id as number, score: bm25, coverage, confidence };
    });
  }

  /**
   * The query terms and where each is searched. In a large index a word found in more than COMMON_SHARE of the
   * documents discriminates only where it describes the tool itself, so it is searched in the
   * main fields only (quality ≥ MAIN_QUALITY: name, title, description, server) — in parameter
   * texts it would touch thousands of postings for little signal — and a common related word
   * only in the name fields (quality 1), where it bridges "make a folder" to folder_create.
   */
  private query(q: AnalyzedQuery): TermSpec[] {
    const cap = Math.max(MIN_COMMON_DOCS, this.size * COMMON_SHARE);
    const isCommon = (t: string): boolean => (this.df.get(t) ?? 0) > cap;
    const rest = new Set<string>();
    const commonOriginal = new Set<string>();
    const commonRelated = new Set<string>();
    for (const t of q.original) (isCommon(t) ? commonOriginal : rest).add(t);
    for (const g of q.groups) {
      for (const r of g.related) if (this.df.has(r)) (isCommon(r) ? commonRelated : rest).add(r);
    }
    const isOriginal = (t: string): boolean => q.original.has(t);
    const spec =
      (fields: readonly number[]) =>
      (t: string): TermSpec => ({
        term: t,
        fields,
        boost: isOriginal(t) ? 1 : RELATED_WEIGHT,
        prefix: isOriginal(t) && t.length >= 4,
        // Typo matching is for words the index does not contain as such.
        fuzzy: isOriginal(t) && t.length >= 5 && !this.df.has(t) ? (t.length >= 9 ? 2 : 1) : 0,
      });
    return [
      ...[...rest].map(spec(this.allFields)),
      ...[...commonOriginal].map(spec(this.mainFields)),
      ...[...commonRelated].map(spec(this.nameFields)),
    ];
  }

  /**
   * How much the request says, saturating: 1 − exp(−Σ IDF / SPECIFICITY_SCALE) over its
   * words (IDF up to 4; words no document contains add little). One common word ("create")
   * stays well below 1 even when it matches perfectly; a few specific words approach 1.
   * Skipped for tiny indexes (connections, resources), where IDF means nothing.
   */
  private specificity(q: AnalyzedQuery): number {
    if (this.size < MIN_DOCS_FOR_SPECIFICITY) return 1;
    const info = q.groups.reduce((sum, g) => {
      const df = this.groupDf(g);
      return sum + (df === 0 ? UNKNOWN_SPECIFICITY : Math.min(4, this.idf(df)));
    }, 0);
    return 1 - Math.exp(-info / SPECIFICITY_SCALE);
  }

  /** Weight of a group in coverage: its IDF in [MIN_WEIGHT, MAX_WEIGHT] on large enough indexes. */
  private groupWeight(g: QueryGroup): number {
    if (this.size < MIN_DOCS_FOR_IDF) return 1;
    const df = this.groupDf(g);
    if (df === 0) return UNKNOWN_WEIGHT;
    return Math.min(MAX_WEIGHT, Math.max(MIN_WEIGHT, this.idf(df)));
  }

  private groupDf(g: QueryGroup): number {
    return Math.max(0, ...g.terms.map((t) => this.df.get(t) ?? 0));
  }

  /** BM25 inverse document frequency. */
  private idf(df: number): number {
    return Math.log(1 + (this.size - df + 0.5) / (df + 0.5));
  }

  private coverage(r: Scored, q: AnalyzedQuery, weights: number[]): number {
    let got = 0;
    let total = 0;
    q.groups.forEach((g, i) => {
      const w = weights[i]!;
      total += w;
      got += w * this.groupMatch(g, r);
    });
    return total > 0 ? got / total : 0;
  }

  /** 0..1: how well one query group is matched by a result (kind of match × field quality). */
  private groupMatch(g: QueryGroup, r: Scored): number {
    let best = 0;
    for (const docTerm in r.match) {
      let kind = 0;
      if (g.terms.includes(docTerm)) kind = 1;
      else if (g.terms.some((t) => t.length >= 4 && docTerm.startsWith(t))) kind = 0.8;
      else if (g.related.has(docTerm)) kind = 0.75;
      if (kind === 0) continue;
      const quality = Math.max(...r.match[docTerm]!.map((f) => this.fields[f]?.quality ?? 0.5));
      best = Math.max(best, kind * quality);
    }
    // Matched only through fuzzy search: the query term is listed, the document term differs.
    if (best === 0 && g.terms.some((t) => r.queryTerms.includes(t))) best = 0.6 * 0.9;
    return best;
  }
}
