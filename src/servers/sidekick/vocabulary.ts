/**
 * Vocabulary of the discovery index: stop words, abbreviations and groups of related words.
 * The groups are a general thesaurus of what SaaS APIs do (verbs) and handle (nouns); users
 * rarely use the tool author's word ("post a note" vs "send a message"), so each query word is
 * also searched under its related words, with a lower weight (see search.ts). Keep the groups
 * general: a word listed here helps every product that uses it, never one query.
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
  new current currently soon today tomorrow yesterday`.split(/\s+/).filter(Boolean),
);

/** Abbreviations rewritten to the words tool authors write (index and query alike). */
const RAW_ALIASES: Record<string, string[]> = {
  pr: ['pull', 'request'],
  prs: ['pull', 'request'],
  repo: ['repository'],
  repos: ['repository'],
  db: ['database'],
  msg: ['message'],
  msgs: ['message'],
  dm: ['direct', 'message'],
  dms: ['direct', 'message'],
  doc: ['document'],
  docs: ['document'],
  mail: ['email'],
  mails: ['email'],
  emails: ['email'],
  todo: ['task'],
  todos: ['task'],
  org: ['organization'],
  orgs: ['organization'],
  info: ['information'],
  config: ['configuration'],
  otp: ['verification', 'code'],
  csat: ['satisfaction', 'rating'],
  kb: ['knowledge', 'base'],
};

/** Groups of related words (not strict synonyms). A word may sit in several groups. */
const RELATED: readonly string[] = [
  // actions
  'create add make insert register',
  'open create start',
  'get read fetch retrieve view show display',
  'list show browse enumerate',
  'search find lookup query filter locate',
  'update edit modify change set rename patch adjust',
  'delete remove erase destroy trash discard clear',
  'archive close hide',
  'send post deliver notify dispatch',
  'message text chat sms notification',
  'reply respond answer comment',
  'upload attach put store save',
  'save store keep persist',
  'download export fetch',
  'schedule book plan arrange',
  'cancel stop terminate abort void',
  'complete done finish resolve close',
  'assign delegate assignee owner',
  'invite attendee guest participant',
  'charge pay payment bill collect',
  'refund reimburse chargeback',
  'run execute launch trigger invoke call',
  'phone call dial voice',
  'move transfer relocate',
  'merge combine',
  'link associate connect relate',
  'publish release',
  'copy duplicate clone',
  'track log record',
  'verify verification confirm validate',
  'scrape extract crawl',
  'notify alert ping remind',
  // things
  'email inbox',
  'ticket issue case bug incident defect',
  'issue bug task story',
  'task card item assignment',
  'contact person people lead prospect',
  'customer client buyer shopper',
  'company organization account business',
  'deal opportunity sale pipeline',
  'invoice bill billing receipt',
  'payment charge transaction',
  'subscription plan membership recurring',
  'event meeting appointment invitation',
  'meeting call conference video',
  'calendar agenda availability',
  'free available availability busy',
  'file document attachment pdf',
  'folder directory',
  'spreadsheet sheet excel worksheet workbook csv',
  'row record entry line',
  'record entry item row',
  'column field property attribute',
  'table database base',
  'channel room conversation group',
  'user member teammate employee colleague person staff',
  'repository project codebase',
  'comment note remark feedback',
  'note memo comment',
  'order purchase',
  'product item sku merchandise',
  'inventory stock quantity',
  'ship shipment fulfill fulfillment shipping delivery',
  'discount coupon promo promotion',
  'page document wiki article',
  'unpaid outstanding overdue due owed',
  'status state stage progress',
  'label tag category',
  'sprint cycle iteration',
  'link url',
  'report analytics statistics metrics performance',
  'newsletter campaign audience mailing',
  'subscriber member audience',
  'agent assistant bot',
  'conversation chat thread history',
  'website site web browser',
  'login signin credential session',
  'vendor supplier',
  'expense spend cost',
  'time hour duration',
  'satisfaction rating feedback',
  'server service integration application',
  'secret password credential vault',
  'datastore database collection store',
  'knowledge documentation faq',
  'code script program',
  'topic subject headline',
];

const stemAll = (words: string): string[] => words.split(/\s+/).filter(Boolean).map(stem);

/** Abbreviation → stemmed replacement terms. */
export const ALIASES: ReadonlyMap<string, string[]> = new Map(
  Object.entries(RAW_ALIASES).map(([k, v]) => [k, v.map(stem)]),
);

/** Stemmed term → stemmed related terms (union over every group it belongs to). */
const RELATED_INDEX: ReadonlyMap<string, readonly string[]> = (() => {
  const groups = new Map<string, Set<string>>();
  for (const line of RELATED) {
    const members = stemAll(line);
    for (const m of members) {
      const set = groups.get(m) ?? new Set<string>();
      for (const other of members) if (other !== m) set.add(other);
      groups.set(m, set);
    }
  }
  return new Map([...groups].map(([k, v]) => [k, [...v]]));
})();

/** Related words of a stemmed term (empty when none). */
export function related(term: string): readonly string[] {
  return RELATED_INDEX.get(term) ?? [];
}
