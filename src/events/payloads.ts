/**
 * Event payloads (spec "Events"; schemas/events/*.schema.json): what a trigger URL receives.
 *
 * Decisions (written into the schemas):
 * - every payload carries `eventId`, the outbox row's id, so a receiver can de-duplicate the
 *   at-least-once deliveries;
 * - `content` is an object (spec): an unstructured datastore's text arrives as `{text}`;
 * - vault payloads carry `isSecret: true` and never the plain values: every value of `content`
 *   (and of `changed.content`) is replaced by "********", so a receiver learns which keys
 *   changed but not the secrets;
 * - files: `triggerLevel` is `file` for file-level entries, `signedUrl` is valid 7 days.
 */
import type { EventName, Level } from './trigger-urls.js';
import { payloadType, PROVIDER_ID, type CollectionType } from './types.js';

export const REDACTED = '********';

export interface ItemState {
  id: string;
  key: string;
  sortField: string | null;
  content: unknown;
  metadata: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

export interface FileState {
  id: string;
  filename: string;
  filepath: string;
  fileSize: number;
  mimeType: string;
  signedUrl: string;
  metadata: Record<string, unknown>;
  isPublic: boolean;
  createdAt: string;
  updatedAt: string;
}

export type EventPayload = Record<string, unknown> & { event: string; itemId: string };

function asObject(type: CollectionType, content: unknown): Record<string, unknown> {
  if (type === 'unstructured_datastore')
    return { text: typeof content === 'string' ? content : JSON.stringify(content) };
  const obj =
    content && typeof content === 'object' && !Array.isArray(content) ? (content as Record<string, unknown>) : {};
  if (type !== 'vault') return obj;
  return Object.fromEntries(Object.keys(obj).map((k) => [k, REDACTED]));
}

export function itemPayload(
  event: EventName | 'onTest',
  collection: { id: string; type: CollectionType },
  item: ItemState,
  { level, previous }: { level: Level; previous?: { content: unknown; metadata: Record<string, unknown> } | undefined },
): EventPayload {
  const payload: EventPayload = {
    event,
    itemId: item.id,
    providerId: PROVIDER_ID,
    collectionId: collection.id,
    collectionType: payloadType(collection.type),
    key: item.key,
    sortField: item.sortField,
    content: asObject(collection.type, item.content),
    metadata: item.metadata,
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
    triggerLevel: level,
  };
  if (event === 'onEdit' && previous)
    payload.changed = { content: asObject(collection.type, previous.content), metadata: previous.metadata };
  if (collection.type === 'vault') payload.isSecret = true;
  return payload;
}

export function filePayload(
  event: EventName | 'onTest',
  collection: { id: string },
  file: FileState,
  level: Level,
): EventPayload {
  return {
    event,
    itemId: file.id,
    providerId: PROVIDER_ID,
    collectionId: collection.id,
    collectionType: 'filestorage',
    filename: file.filename,
    filepath: file.filepath,
    fileSize: file.fileSize,
    mimeType: file.mimeType,
    signedUrl: file.signedUrl,
    metadata: file.metadata,
    isPublic: file.isPublic,
    createdAt: file.createdAt,
    updatedAt: file.updatedAt,
    triggerLevel: level === 'item' ? 'file' : 'collection',
  };
}
