/**
 * Trigger URL entries (spec "Trigger URL entry", "Events"; rules in openapi/resources.yaml):
 * `{event, url, apiKey, triggerLevel?}` validated and stored with the key encrypted
 * (AES-256-GCM); responses show only its last four characters.
 *
 * Levels: onCreate exists at collection level only; onEdit and onDelete at both. Item- and
 * file-level entries are accepted on structured datastores, filestores and knowledge bases;
 * unstructured datastores and vaults take collection-level entries only (spec "Events").
 * An omitted triggerLevel is the level of the endpoint that received it.
 *
 * Addresses: a URL whose host is an IP literal (or `localhost`) that the outbound policy
 * refuses is rejected when saved, so a bad entry is never stored; host names are checked again
 * after DNS at every call (src/kernel/outbound.ts), which is what actually stops SSRF.
 */
import { encrypt, decrypt } from '../kernel/crypto.js';
import { AppError } from '../errors/index.js';
import type { CollectionType } from './types.js';

export type EventName = 'onCreate' | 'onEdit' | 'onDelete';
export type Level = 'collection' | 'item';

export interface TriggerUrlInput {
  event: EventName;
  url: string;
  apiKey: string;
  triggerLevel?: Level | undefined;
}

/** As stored (JSON in `trigger_urls`). */
export interface StoredTriggerUrl {
  event: EventName;
  url: string;
  triggerLevel: Level;
  apiKeyEnc: string;
  apiKeyLast4: string;
}

export interface ConfiguredTriggerUrl {
  event: EventName;
  url: string;
  triggerLevel: Level;
  apiKeyLast4: string;
}

/** Decides whether a literal address may be called (src/kernel/outbound.ts OutboundPolicy). */
export interface AddressCheck {
  /** Throws (or returns a reason) when `url` may not be called; host names pass until DNS. */
  refusal(url: URL): string | undefined;
}

/** Item-level entries are accepted on these types only (spec "Events" support table). */
const ITEM_LEVEL_TYPES: ReadonlySet<CollectionType> = new Set(['structured_datastore', 'filestore', 'knowledge_base']);
export const MAX_TRIGGER_URLS = 50;

function invalid(message: string, index: number, field: string): AppError {
  return new AppError('ERR_INVALID_TRIGGER_URL', {
    message,
    details: [{ path: `/triggerUrls/${index}/${field}`, message }],
  });
}

export function normalizeTriggerUrls(
  entries: readonly TriggerUrlInput[],
  opts: { level: Level; collectionType: CollectionType; secretKey: Buffer; addresses: AddressCheck },
): StoredTriggerUrl[] {
  if (entries.length > MAX_TRIGGER_URLS) {
    throw new AppError('ERR_REQUEST_INVALID', {
      message: `At most ${MAX_TRIGGER_URLS} trigger URLs`,
      details: [{ path: '/triggerUrls', message: `must have at most ${MAX_TRIGGER_URLS} items` }],
    });
  }
  return entries.map((entry, i) => {
    const level = entry.triggerLevel ?? opts.level;
    if (level !== opts.level) {
      throw invalid(
        opts.level === 'collection'
          ? 'Item-level trigger URLs are set on the item or file (its triggerUrls), not on the collection.'
          : 'Collection-level trigger URLs are set with PATCH /datacollection/{collectionId}.',
        i,
        'triggerLevel',
      );
    }
    if (level === 'item' && entry.event === 'onCreate')
      throw invalid('onCreate trigger URLs exist at collection level only.', i, 'event');
    if (level === 'item' && !ITEM_LEVEL_TYPES.has(opts.collectionType)) {
      throw invalid(
        `A ${opts.collectionType.replace('_', ' ')} takes collection-level trigger URLs only (PATCH /datacollection/{collectionId}).`,
        i,
        'triggerLevel',
      );
    }
    let url: URL;
    try {
      url = new URL(entry.url);
    } catch {
      throw invalid('url is not an absolute URL.', i, 'url');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid('url must use http or https.', i, 'url');
    if (url.username || url.password)
      throw invalid('url must not carry credentials; the apiKey is sent as X-API-KEY.', i, 'url');
    const refusal = opts.addresses.refusal(url);
    if (refusal) throw invalid(refusal, i, 'url');
    if (entry.apiKey.length === 0) throw invalid('apiKey is required.', i, 'apiKey');
    return {
      event: entry.event,
      url: url.href,
      triggerLevel: level,
      apiKeyEnc: encrypt(opts.secretKey, entry.apiKey),
      apiKeyLast4: entry.apiKey.slice(-4),
    };
  });
}

export function configuredView(entries: readonly StoredTriggerUrl[]): ConfiguredTriggerUrl[] {
  return entries.map((e) => ({ event: e.event, url: e.url, triggerLevel: e.triggerLevel, apiKeyLast4: e.apiKeyLast4 }));
}

export function parseStored(json: string | null | undefined): StoredTriggerUrl[] {
  if (!json) return [];
  return JSON.parse(json) as StoredTriggerUrl[];
}

export function revealKey(secretKey: Buffer, sealed: string): string {
  return decrypt(secretKey, sealed);
}
