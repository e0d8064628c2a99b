/**
 * Vocabulary of the discovery index: stop words (English function words and request filler)
 * and common abbreviations of software work. Related words come from WordNet (lexicon.ts), not
 * from a list kept here. Keep both lists general: a word listed here must help every product
 * that uses it, never one request.
 */
import { stem } from './stem.js';

/** Words that carry no capability meaning in a request. */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  `a an the and or but if then so than too very of to in on at by for from with without into onto
  about over under up down out off as is are was were be been being am do does did doing
  have has had having i me my mine we us our ours you your yours he him his she her it its they
  them their this that these those there here what which who whom whose where when why how
  can could would should will shall may might must please want wanted need needs like let lets
  just also only some any each every all other another such own same again still yet right now
  via using use through across some something anything everything thing things way help
  new current currently soon today tomorrow yesterday`
    .split(/\s+/)
    .filter(Boolean),
);

/** Abbreviations and clipped forms rewritten to the full words (index and query alike). */
const RAW_ALIASES: Record<string, string[]> = {
  pr: ['pull', 'request'],
  prs: ['pull', 'request'],
  repo: ['repository'],
  repos: ['repository'],
  db: ['database'],
  msg: ['message'],
  msgs: ['message'],
  mail: ['email'],
  mails: ['email'],
  dm: ['direct', 'message'],
  dms: ['direct', 'message'],
  doc: ['document'],
  docs: ['document'],
  org: ['organization'],
  orgs: ['organization'],
  info: ['information'],
  config: ['configuration'],
};

/** Abbreviation → stemmed replacement terms. */
export const ALIASES: ReadonlyMap<string, string[]> = new Map(
  Object.entries(RAW_ALIASES).map(([k, v]) => [k, v.map(stem)]),
);
