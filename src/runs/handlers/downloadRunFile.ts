/**
 * GET {run_files_url}/files/{fileId}?expires=&signature= (openapi/run-files.yaml
 * downloadRunFile). The signed URL is the credential: signature first (403
 * invalid_signature), then expiry (403 url_expired), then the lookup (404 file_not_found), so
 * an invalid URL never reveals whether a file exists. The body is the whole file, streamed:
 * a stored file from the blob store, a step's result file from its step row.
 */
import { Readable } from 'node:stream';
import { AppError } from '../../errors/index.js';
import type { Handler } from '../../services.js';
import { BlobNotFoundError, type BlobReadable } from '../../kernel/blobs.js';
import { getFile, verifyFileSignature } from '../../files/index.js';
import { isResultFileId, loadResultFile } from '../result-files.js';

/** RFC 5987 attr-char: everything else in the UTF-8 bytes is percent-encoded. */
function encodeRfc5987(value: string): string {
  return encodeURIComponent(value).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * `attachment; filename="<ASCII fallback>"; filename*=UTF-8''<percent-encoded>` (RFC 6266
 * section 4.3): the quoted fallback has non-ASCII, quotes, backslashes and controls replaced.
 */
export function contentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encodeRfc5987(filename)}`;
}

/** Headers every download carries (openapi/run-files.yaml decisions). */
function downloadHeaders(filename: string, size: number, secondsLeft: number): Record<string, string | number> {
  return {
    'Content-Length': size,
    'Content-Disposition': contentDisposition(filename),
    // openapi/run-files.yaml: private caching until the URL expires.
    'Cache-Control': `private, max-age=${secondsLeft}`,
    // Stored types are client-declared: never let a browser sniff them into something else.
    'X-Content-Type-Options': 'nosniff',
  };
}

export const downloadRunFile: Handler<'downloadRunFile'> = async (req, ctx) => {
  const { fileId } = req.params;
  const now = Date.now();
  const secondsLeft = verifyFileSignature(ctx.services.config, fileId, {
    expires: req.query.expires,
    sig: req.query.signature,
    nowMs: now,
  });
  // A step's result file (getRunResults decision) is served from its step row, not the blob store.
  if (isResultFileId(fileId)) {
    const result = await loadResultFile(ctx.services.db, fileId);
    if (!result) throw new AppError('ERR_FILE_NOT_FOUND');
    const bytes = Buffer.from(result.text, 'utf8');
    // A stream, so the reply writer sends the bytes as they are (a json body would be re-serialised).
    return {
      status: 200,
      contentType: result.mimeType,
      stream: Readable.from([bytes]),
      headers: downloadHeaders(result.fileName, bytes.length, secondsLeft),
    };
  }
  const file = await getFile(ctx.services.db, fileId);
  if (!file || (file.expiresAt !== null && Date.parse(file.expiresAt) <= now)) throw new AppError('ERR_FILE_NOT_FOUND');
  let blob: BlobReadable;
  try {
    blob = await ctx.services.blobs.get(file.blobKey);
  } catch (err) {
    if (err instanceof BlobNotFoundError) throw new AppError('ERR_FILE_NOT_FOUND');
    throw err;
  }
  return {
    status: 200,
    contentType: file.mimeType,
    stream: blob.stream,
    headers: downloadHeaders(file.filename, blob.size, secondsLeft),
  };
};
