/**
 * Files of filestores and knowledge bases (spec section 14 `/filestorage/items/upload`,
 * "Events"; rules in openapi/resources.yaml): a multipart upload streamed to the blob store by
 * the trigger-attachment parser (one `file` part, at most 100 MiB, any type), then one
 * transaction that adds the file to the collection and its onCreate calls to the outbox.
 * Deleting a file emits onDelete and removes the blob; its signed URLs stop working.
 */
import type { IncomingMessage } from 'node:http';
import type { Config } from '../config/index.js';
import type { Logger } from '../config/logger.js';
import { AppError, isAppError } from '../errors/index.js';
import type { BlobStore } from '../kernel/blobs.js';
import { newId, nowIso } from '../kernel/ids.js';
import {
  deleteFiles,
  recordFile,
  FILESTORAGE_URL_TTL_SECONDS,
  signFileUrl,
  sanitizeFilename,
  discardAttachments,
  readMultipartTrigger,
  type Attachment,
} from '../files/index.js';
import type { CollectionRecord } from './collections.js';
import { isForeignKeyViolation, type ItemDeps } from './items.js';
import { enqueueEvents, type OutboxEvent } from './outbox.js';
import { filePayload, type FileState } from './payloads.js';
import {
  configuredView,
  normalizeTriggerUrls,
  parseStored,
  type EventName,
  type StoredTriggerUrl,
  type TriggerUrlInput,
} from './trigger-urls.js';
import { FILE_ITEM_ID_PATTERN, holdsFiles } from './types.js';

const MiB = 1024 * 1024;
export const MAX_FILE_BYTES = 100 * MiB;

export interface FileDeps extends ItemDeps {
  blobs: BlobStore;
  config: Pick<Config, 'secretKey' | 'baseUrls'>;
  log: Logger;
}

interface FileRow {
  id: string;
  file_id: string;
  filename: string;
  file_size: number | string;
  mime_type: string;
  metadata: string;
  is_public: boolean | number;
  trigger_urls: string;
  created_at: string;
  updated_at: string;
}

interface StoredFile extends FileState {
  triggerUrls: StoredTriggerUrl[];
}

function toFile(deps: FileDeps, c: CollectionRecord, r: FileRow): StoredFile {
  return {
    id: r.id,
    filename: r.filename,
    filepath: `${c.id}/${r.id}/${r.filename}`,
    fileSize: Number(r.file_size),
    mimeType: r.mime_type,
    signedUrl: signFileUrl(deps.config, r.file_id, FILESTORAGE_URL_TTL_SECONDS),
    metadata: JSON.parse(r.metadata) as Record<string, unknown>,
    isPublic: Boolean(r.is_public),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    triggerUrls: parseStored(r.trigger_urls),
  };
}

export function fileView(c: CollectionRecord, f: StoredFile) {
  const { triggerUrls, ...rest } = f;
  return { ...rest, collectionId: c.id, triggerUrls: configuredView(triggerUrls) };
}

function checkCollection(c: CollectionRecord): void {
  if (!holdsFiles(c.type)) {
    throw new AppError('ERR_COLLECTION_TYPE_MISMATCH', {
      message: `This collection is a ${c.type.replace('_', ' ')}; use /memory/items.`,
    });
  }
}

function jsonField<T>(fields: Record<string, string>, name: string, check: (v: unknown) => v is T): T | undefined {
  const raw = fields[name];
  if (raw === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new AppError('ERR_REQUEST_INVALID', {
      message: `The ${name} part is not valid JSON`,
      details: [{ path: name, message: 'is not valid JSON' }],
    });
  }
  if (!check(value))
    throw new AppError('ERR_REQUEST_INVALID', {
      message: `The ${name} part has the wrong shape`,
      details: [
        {
          path: name,
          message: name === 'metadata' ? 'must be a JSON object' : 'must be a JSON array of trigger URL entries',
        },
      ],
    });
  return value;
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const EVENTS = new Set(['onCreate', 'onEdit', 'onDelete']);
const LEVELS = new Set(['collection', 'item']);
/** The TriggerUrl schema of openapi/resources.yaml, for the multipart text part. */
function isTriggerUrlList(v: unknown): v is TriggerUrlInput[] {
  return (
    Array.isArray(v) &&
    v.every(
      (e) =>
        isObject(e) &&
        Object.keys(e).every((k) => ['event', 'url', 'apiKey', 'triggerLevel'].includes(k)) &&
        typeof e.event === 'string' &&
        EVENTS.has(e.event) &&
        typeof e.url === 'string' &&
        e.url.length <= 2048 &&
        typeof e.apiKey === 'string' &&
        e.apiKey.length >= 1 &&
        e.apiKey.length <= 256 &&
        (e.triggerLevel === undefined || (typeof e.triggerLevel === 'string' && LEVELS.has(e.triggerLevel))),
    )
  );
}

function events(c: CollectionRecord, f: StoredFile, event: EventName, targets: StoredTriggerUrl[]): OutboxEvent[] {
  return targets.map((target) => ({
    orgId: c.orgId,
    collectionId: c.id,
    itemId: f.id,
    event,
    target,
    payload: filePayload(event, c, f, target.triggerLevel),
  }));
}

/** Adds a stored file to the collection and its onCreate calls to the outbox, in one transaction. */
async function insertFile(deps: FileDeps, c: CollectionRecord, row: FileRow): Promise<ReturnType<typeof fileView>> {
  const file = toFile(deps, c, row);
  let pending = 0;
  await deps.writes.run(async (trx, batch) => {
    await trx('collection_items').insert({ ...row, collection_id: c.id, org_id: c.orgId });
    pending = enqueueEvents(
      batch,
      events(
        c,
        file,
        'onCreate',
        c.triggerUrls.filter((t) => t.event === 'onCreate'),
      ),
    );
  });
  if (pending > 0) deps.wake();
  return fileView(c, file);
}

export async function uploadFile(
  deps: FileDeps,
  c: CollectionRecord,
  req: IncomingMessage,
): Promise<ReturnType<typeof fileView>> {
  checkCollection(c);
  let parsed: { fields: Record<string, string>; attachments: Attachment[] };
  try {
    parsed = await readMultipartTrigger(req, {
      blobs: deps.blobs,
      db: deps.db,
      orgId: c.orgId,
      config: deps.config,
      log: deps.log,
      purpose: 'collection',
      limits: { maxFiles: 1, maxFileBytes: MAX_FILE_BYTES, maxTotalBytes: MAX_FILE_BYTES },
    });
  } catch (err) {
    if (isAppError(err) && err.key === 'ERR_ATTACHMENT_TOO_MANY')
      throw new AppError('ERR_REQUEST_INVALID', {
        message: 'Send exactly one file part (`file`)',
        details: [{ path: 'file', message: 'only one file per upload' }],
      });
    if (
      isAppError(err) &&
      (err.key === 'ERR_ATTACHMENT_FILE_TOO_LARGE' || err.key === 'ERR_ATTACHMENT_TOTAL_TOO_LARGE')
    )
      throw new AppError('ERR_ATTACHMENT_FILE_TOO_LARGE', { message: 'Files are limited to 100 MiB.' });
    throw err;
  }
  const discard = () => discardAttachments({ blobs: deps.blobs, db: deps.db, orgId: c.orgId }, parsed.attachments);
  try {
    const upload = parsed.attachments[0];
    if (!upload)
      throw new AppError('ERR_REQUEST_INVALID', {
        message: 'A `file` part with a filename is required',
        details: [{ path: 'file', message: 'is required' }],
      });
    const metadata = jsonField(parsed.fields, 'metadata', isObject) ?? {};
    const entries = jsonField(parsed.fields, 'triggerUrls', isTriggerUrlList) ?? [];
    const triggerUrls = normalizeTriggerUrls(entries, {
      level: 'item',
      collectionType: c.type,
      secretKey: deps.secretKey,
      addresses: deps.addresses,
    });
    const now = nowIso();
    const row: FileRow = {
      id: upload.fileId,
      file_id: upload.fileId,
      filename: upload.filename,
      file_size: upload.size,
      mime_type: upload.contentType,
      metadata: JSON.stringify(metadata),
      is_public: false,
      trigger_urls: JSON.stringify(triggerUrls),
      created_at: now,
      updated_at: now,
    };
    return await insertFile(deps, c, row);
  } catch (err) {
    await discard();
    // The collection was deleted by another process while this one still knew it.
    if (isForeignKeyViolation(err)) throw new AppError('ERR_COLLECTION_NOT_FOUND');
    throw err;
  }
}

export async function deleteFile(deps: FileDeps, c: CollectionRecord, id: string): Promise<void> {
  checkCollection(c);
  if (!FILE_ITEM_ID_PATTERN.test(id))
    throw new AppError('ERR_ITEM_NOT_FOUND', { message: 'No file with this id exists in the collection.' });
  let pending = 0;
  let fileId: string | undefined;
  const found = await deps.writes.run(async (trx, batch) => {
    const n = await trx('collection_items').where({ id, collection_id: c.id }).update({ updated_at: nowIso() });
    if (n === 0) return false;
    const row = (await trx('collection_items').where({ id }).first()) as FileRow;
    const file = toFile(deps, c, row);
    fileId = row.file_id;
    await trx('collection_items').where({ id }).delete();
    const targets = [...c.triggerUrls, ...file.triggerUrls].filter((t) => t.event === 'onDelete');
    pending = enqueueEvents(batch, events(c, file, 'onDelete', targets));
    return true;
  });
  if (!found) throw new AppError('ERR_ITEM_NOT_FOUND', { message: 'No file with this id exists in the collection.' });
  // The blob and its row go after the commit: the payload's signed URL then answers 404 file_not_found.
  if (fileId) await deleteFiles(deps.db, deps.blobs, c.orgId, [fileId]);
  if (pending > 0) deps.wake();
}

/**
 * A file the service makes itself (browser task files, src/browser): stored in the blob store,
 * recorded, added to the collection and announced to its onCreate trigger URLs like an upload.
 * The name is sanitised as upload names are; the blob is removed again if the row cannot be written.
 */
export async function addFile(
  deps: FileDeps,
  c: CollectionRecord,
  input: { filename: string; mimeType: string; data: Buffer },
): Promise<ReturnType<typeof fileView>> {
  checkCollection(c);
  if (input.data.length > MAX_FILE_BYTES)
    throw new AppError('ERR_ATTACHMENT_FILE_TOO_LARGE', { message: 'Files are limited to 100 MiB.' });
  const fileId = newId('file');
  const blobKey = `collections/${c.orgId}/${fileId}`;
  const filename = sanitizeFilename(input.filename);
  await deps.blobs.put(blobKey, input.data);
  try {
    await recordFile(deps.db, {
      id: fileId,
      orgId: c.orgId,
      kind: 'collection',
      filename,
      mimeType: input.mimeType,
      size: input.data.length,
      blobKey,
    });
    const now = nowIso();
    const row: FileRow = {
      id: fileId,
      file_id: fileId,
      filename,
      file_size: input.data.length,
      mime_type: input.mimeType,
      metadata: '{}',
      is_public: false,
      trigger_urls: '[]',
      created_at: now,
      updated_at: now,
    };
    return await insertFile(deps, c, row);
  } catch (err) {
    await deleteFiles(deps.db, deps.blobs, c.orgId, [fileId]).catch(() => undefined);
    await deps.blobs.delete(blobKey).catch(() => undefined);
    if (isForeignKeyViolation(err)) throw new AppError('ERR_COLLECTION_NOT_FOUND');
    throw err;
  }
}

/** A sample file for the trigger tests. */
export function sampleFile(testData: Record<string, unknown>): FileState {
  const now = nowIso();
  return {
    id: 'test',
    filename: 'test.txt',
    filepath: 'test/test.txt',
    fileSize: 0,
    mimeType: 'text/plain',
    signedUrl: 'https://example.com/test.txt',
    metadata: {},
    isPublic: false,
    createdAt: now,
    updatedAt: now,
    ...testData,
  } as FileState;
}
