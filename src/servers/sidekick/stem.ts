/**
 * Light English stemmer (suffix stripping, written for the discovery index): plural and verb
 * endings are removed and a final `e` dropped, so create/creates/created/creating all become
 * `creat` and message/messages `messag`. Index and query go through the same function, so the
 * stems only need to be consistent, not pretty. Terms of three letters or fewer (sms, pdf) and
 * terms with digits are left alone.
 */
export function stem(term: string): string {
  let w = term;
  if (w.length <= 3 || /\d/.test(w)) return w;
  if (w.endsWith('ies') && w.length > 4) w = `${w.slice(0, -3)}y`;
  else if (w.endsWith('ied') && w.length > 4) w = `${w.slice(0, -3)}y`;
  else if (/(?:ches|shes|xes|sses|zzes)$/.test(w)) w = w.slice(0, -2);
  else if (w.endsWith('s') && !/(?:ss|us|is)$/.test(w)) w = w.slice(0, -1);
  else if (w.endsWith('ing') && w.length > 5) w = undouble(w.slice(0, -3));
  else if (w.endsWith('ed') && !w.endsWith('eed') && w.length > 4) w = undouble(w.slice(0, -2));
  if (w.endsWith('e') && w.length > 4) w = w.slice(0, -1);
  return w;
}

/** running → runn → run; keeps ll, ss, zz (call, miss, buzz). */
function undouble(w: string): string {
  const last = w.at(-1);
  return last && last === w.at(-2) && !'lsz'.includes(last) && !'aeiou'.includes(last) ? w.slice(0, -1) : w;
}
