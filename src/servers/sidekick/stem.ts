/**
 * English stemming for the discovery index: the Porter algorithm (npm `stemmer`), so
 * create/creates/created/creating all become `creat` and message/messages `messag`. Index and
 * query go through the same function, so the stems only need to be consistent, not pretty.
 * Terms of three letters or fewer (sms, pdf) and terms with digits are left alone.
 */
import { stemmer } from 'stemmer';

export function stem(term: string): string {
  return term.length <= 3 || /\d/.test(term) ? term : stemmer(term);
}
