/**
 * Text analysis shared by indexing and querying (spec section 8: natural-language discovery).
 * One pipeline for both sides keeps index terms and query terms comparable:
 * split on anything that is not a letter or digit (so snake_case, kebab-case and tool-name
 * prefixes like `agent-management_agent_create` come apart), split camelCase while keeping the
 * whole word too (`HubSpot` → hubspot, hub, spot), lower-case, drop stop words, rewrite a few
 * abbreviations, then the Porter stemmer (stem.ts).
 */
import { stem } from './stem.js';
import { ALIASES, STOP_WORDS } from './vocabulary.js';

export { stem };

const WORD = /[\p{L}\p{N}]+/gu;
const CAMEL_PART = /\p{Lu}?\p{Ll}+|\p{Lu}+(?!\p{Ll})|\p{N}+/gu;
const ONLY_DIGITS = /^\p{N}+$/u;

/** Raw words of a text, each with its camelCase parts (lower-cased, before stemming). */
export function words(text: string): string[][] {
  const out: string[][] = [];
  for (const match of text.matchAll(WORD)) {
    const word = match[0];
    const lower = word.toLowerCase();
    const parts = word.match(CAMEL_PART) ?? [];
    const forms = parts.length > 1 ? [lower, ...parts.map((p) => p.toLowerCase())] : [lower];
    out.push(forms);
  }
  return out;
}

/** Tokenizer of the index (postings.ts): every form of every word; processTerm filters and stems them. */
export function tokenize(text: string): string[] {
  return words(text).flat();
}

/**
 * Term processing of the index and of requests: null for noise (stop words, one letter, pure numbers), aliases
 * expanded (`pr` → pull, request), everything stemmed. Applied to documents and queries alike.
 */
export function processTerm(term: string): string | string[] | null {
  const lower = term.toLowerCase();
  if (lower.length < 2 || ONLY_DIGITS.test(lower) || STOP_WORDS.has(lower)) return null;
  const alias = ALIASES.get(lower);
  if (alias) return alias.length === 1 ? alias[0]! : alias;
  return stem(lower);
}

/** Terms of a text after the whole pipeline (for document frequencies and tests). */
export function terms(text: string): string[] {
  const out: string[] = [];
  for (const token of tokenize(text)) {
    const t = processTerm(token);
    if (t === null) continue;
    if (Array.isArray(t)) out.push(...t);
    else out.push(t);
  }
  return out;
}
