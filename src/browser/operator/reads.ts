/**
 * A replay's result (run.ts): the reads of the recording paired with what the same extracts read
 * on the replay, and the recorded result brought up to date with them where it quotes them whole.
 */
import type { RecordedStep } from './actions.js';

/**
 * A read of the recording and what the same extract read on the replay: the same element (or
 * the whole page) and file name, matched in order, so an element read before and after a click
 * pairs each read with its own. `now` is undefined when that extract did not run again.
 */
export interface ReadPair {
  recorded: string;
  now: string | undefined;
}

export function readPairs(before: RecordedStep[], after: RecordedStep[]): ReadPair[] {
  const key = (s: RecordedStep) => `${s.selector ?? ''}\u0000${String(s.args.fileName ?? '')}`;
  const fresh = new Map<string, string[]>();
  for (const s of after) {
    if (s.action !== 'extract' || s.read === undefined) continue;
    const list = fresh.get(key(s)) ?? [];
    list.push(s.read);
    fresh.set(key(s), list);
  }
  return before
    .filter((s) => s.action === 'extract' && s.read !== undefined)
    .map((s) => ({ recorded: s.read!, now: fresh.get(key(s))?.shift() }));
}

const WORD = /[\p{L}\p{N}]/u;

/**
 * Where `result` quotes `read` whole: occurrences that do not run on into a letter or digit on
 * either side, so a read "5" is not found inside "15".
 */
function quotedAt(result: string, read: string): number[] {
  const at: number[] = [];
  if (read.length === 0) return at;
  for (let i = result.indexOf(read); i !== -1; i = result.indexOf(read, i + read.length)) {
    const before = i > 0 && WORD.test(result[i - 1]!) && WORD.test(read[0]!);
    const after =
      i + read.length < result.length && WORD.test(result[i + read.length]!) && WORD.test(read[read.length - 1]!);
    if (!before && !after) at.push(i);
  }
  return at;
}

/**
 * The recorded result brought up to date with the replay's reads, or undefined when it cannot
 * be: a read that changed (or did not run again) and that the result does not quote whole was
 * turned into the answer in some other way ("The total is 99.50 EUR" from the page's text), so
 * only the model can answer again. A read the result quotes whole is replaced by the fresh text:
 * "report the confirmation" returns today's confirmation with no model call.
 */
export function refreshResult(result: string, pairs: ReadPair[]): string | undefined {
  const changed = pairs.filter((p) => p.now !== p.recorded);
  if (changed.some((p) => p.now === undefined || quotedAt(result, p.recorded).length === 0)) return undefined;
  // Replace the quoted places of every changed read at once, longest read first where they overlap.
  const spans: Array<{ at: number; length: number; text: string }> = [];
  for (const p of [...changed].sort((a, b) => b.recorded.length - a.recorded.length)) {
    for (const at of quotedAt(result, p.recorded)) {
      const end = at + p.recorded.length;
      if (spans.some((s) => at < s.at + s.length && s.at < end)) continue;
      spans.push({ at, length: p.recorded.length, text: p.now! });
    }
  }
  let out = '';
  let from = 0;
  for (const s of spans.sort((a, b) => a.at - b.at)) {
    out += result.slice(from, s.at) + s.text;
    from = s.at + s.length;
  }
  return out + result.slice(from);
}
