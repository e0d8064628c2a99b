/**
 * Presigned CSV uploads (spec section 15: "returns a presigned upload URL; the file is then sent
 * to it with PUT"; openapi/queues.yaml createCsvUploadUrl, uploadCsvFile). The URL is served by
 * Switchyard itself and signed with HMAC-SHA256 over the key, its queue, the declared size and
 * the expiry, so it cannot be moved to another queue or used for a bigger file. Each PUT streams
 * to a fresh blob key and only then becomes the upload's file: a second PUT never changes bytes
 * a batch is reading, and a failed PUT keeps nothing.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Knex } from 'knex';
import type { Config } from '../config/index.js';
import { AppError } from '../errors/index.js';
import { derivedKey, hmac, safeEqual } from '../kernel/crypto.js';
import { BlobTooLargeError, type BlobStore } from '../kernel/blobs.js';
import { nowIso } from '../kernel/ids.js';
import type { QueueRecord } from './queues.js';

/** Spec "Limits": CSV batches up to 1 GiB. */
export const CSV_MAX_BYTES = 1024 * 1024 * 1024;
/** openapi/queues.yaml decision: upload URLs are valid 1 hour. */
export const UPLOAD_URL_TTL_SECONDS = 3600;

const FILENAME = /^[^/\\]*\.csv$/i;

export interface UploadRow {
  csv_key: string;
  org_id: string;
  queue_id: string;
  filename: string;
  declared_size: number | string;
  size_bytes: number | string | null;
  sha256: string | null;
  blob_key: string | null;
  expires_at: string;
  uploaded_at: string | null;
  batch_id: string | null;
  created_at: string;
}

/** HMAC key for upload URLs, derived from the service's secret key (domain-separated). */
function urlKey(config: Pick<Config, 'secretKey'>): Buffer {
  return derivedKey(config.secretKey, 'switchyard/queue-uploads/url-signing/v1');
}

function signature(
  config: Pick<Config, 'secretKey'>,
  u: Pick<UploadRow, 'csv_key' | 'queue_id' | 'declared_size'>,
  expires: number,
): string {
  return hmac(urlKey(config), `csv-upload\n${u.csv_key}\n${u.queue_id}\n${Number(u.declared_size)}\n${expires}`);
}

/** createCsvUploadUrl: checks the name and size, records the upload and signs its URL. */
export async function createUploadUrl(
  db: Knex,
  config: Pick<Config, 'secretKey' | 'publicUrl'>,
  queue: QueueRecord,
  { input, nowMs = Date.now() }: { input: { filename: string; sizeBytes: number }; nowMs?: number },
) {
  if (input.filename.length > 255 || !FILENAME.test(input.filename)) throw new AppError('ERR_CSV_INVALID_FILENAME');
  if (input.sizeBytes > CSV_MAX_BYTES) throw new AppError('ERR_CSV_TOO_LARGE', { status: 400 });
  const expires = Math.floor(nowMs / 1000) + UPLOAD_URL_TTL_SECONDS;
  const row: UploadRow = {
    csv_key: `csv_${randomBytes(16).toString('hex')}`,
    org_id: queue.orgId,
    queue_id: queue.id,
    filename: input.filename,
    declared_size: input.sizeBytes,
    size_bytes: null,
    sha256: null,
    blob_key: null,
    expires_at: new Date(expires * 1000).toISOString(),
    uploaded_at: null,
    batch_id: null,
    created_at: new Date(nowMs).toISOString(),
  };
  await db('csv_uploads').insert(row);
  const base = config.publicUrl.replace(/\/+$/, '');
  return {
    uploadUrl: `${base}/api/queues/uploads/${row.csv_key}?expires=${expires}&signature=${signature(config, row, expires)}`,
    csvKey: row.csv_key,
    expiresAt: row.expires_at.replace(/\.\d{3}Z$/, 'Z'),
    method: 'PUT' as const,
    headers: { 'Content-Type': 'application/octet-stream' },
  };
}

/**
 * uploadCsvFile's checks before the body is read, in the documented order: signature (403
 * invalid_signature; an unknown key cannot be verified and is answered the same), expiry (403
 * url_expired), a key already used by a batch (409), a declared Content-Length over the bound
 * (413) or of zero bytes (400 empty_file).
 */
export async function checkUploadTarget(
  db: Knex,
  config: Pick<Config, 'secretKey'>,
  csvKey: string,
  {
    query,
    contentLength,
    nowMs = Date.now(),
  }: { query: URLSearchParams; contentLength: string | undefined; nowMs?: number },
): Promise<UploadRow> {
  const row = (await db('csv_uploads').where({ csv_key: csvKey }).first()) as UploadRow | undefined;
  const expiresText = query.get('expires') ?? '';
  const expires = /^[0-9]{1,15}$/.test(expiresText) ? Number(expiresText) : -1;
  const given = query.get('signature') ?? '';
  const expected = row ? signature(config, row, expires) : hmac(urlKey(config), 'unknown');
  if (!row || expires < 0 || !safeEqual(expected, given)) throw new AppError('ERR_CSV_INVALID_SIGNATURE');
  if (expires <= Math.floor(nowMs / 1000)) throw new AppError('ERR_CSV_URL_EXPIRED');
  if (row.batch_id) throw new AppError('ERR_CSV_ALREADY_USED');
  if (contentLength !== undefined && /^[0-9]+$/.test(contentLength)) {
    const declared = Number(contentLength);
    if (declared === 0) throw new AppError('ERR_CSV_EMPTY');
    if (declared > Number(row.declared_size)) throw tooLarge(row);
  }
  return row;
}

function tooLarge(row: UploadRow): AppError {
  return new AppError('ERR_CSV_TOO_LARGE', {
    message: `The upload exceeds the declared size of ${Number(row.declared_size)} bytes.`,
  });
}

/**
 * Streams the body to a fresh blob, then makes it the upload's file unless a batch took the key
 * meanwhile (409; the new blob is removed). The previous file of the key, if any, is removed.
 */
export async function storeUpload(
  db: Knex,
  blobs: BlobStore,
  row: UploadRow,
  body: IncomingMessage,
): Promise<{ csvKey: string; sizeBytes: number }> {
  const blobKey = `queue-uploads/${row.queue_id}/${row.csv_key}-${randomBytes(6).toString('hex')}.csv`;
  let stored;
  try {
    stored = await blobs.put(blobKey, body, { maxBytes: Math.min(Number(row.declared_size), CSV_MAX_BYTES) });
  } catch (err) {
    if (err instanceof BlobTooLargeError) {
      // The rest of the body is not read: the connection closes after the answer.
      body.resume();
      throw tooLarge(row);
    }
    throw err;
  }
  if (stored.size === 0) {
    await blobs.delete(blobKey);
    throw new AppError('ERR_CSV_EMPTY');
  }
  // The row is locked by a write first, so the file it names before this PUT is the one replaced.
  const previous = await db.transaction(async (trx) => {
    const n = await trx('csv_uploads')
      .where({ csv_key: row.csv_key })
      .whereNull('batch_id')
      .update({ uploaded_at: nowIso() });
    if (n === 0) return undefined;
    const before = (await trx('csv_uploads').where({ csv_key: row.csv_key }).first('blob_key')) as {
      blob_key: string | null;
    };
    await trx('csv_uploads')
      .where({ csv_key: row.csv_key })
      .update({ size_bytes: stored.size, sha256: stored.sha256, blob_key: blobKey });
    return { blobKey: before.blob_key };
  });
  if (!previous) {
    await blobs.delete(blobKey);
    throw new AppError('ERR_CSV_ALREADY_USED');
  }
  if (previous.blobKey) await blobs.delete(previous.blobKey);
  return { csvKey: row.csv_key, sizeBytes: stored.size };
}
