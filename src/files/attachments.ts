/**
 * Multipart API trigger bodies (spec endpoint 1, "Attachment", "Errors", "Limits"; decisions
 * in openapi/triggers.yaml "Attachments (multipart)"). Every part with a filename is an
 * attachment, streamed by busboy straight into the BlobStore — never buffered whole; the
 * other parts are form fields (a repeated name keeps its last value).
 *
 * Limits (MB = MiB, openapi decision): 20 files (400 too_many_attachments), 25 MiB per file
 * (413 file_too_large), 100 MiB per request (413 attachments_too_large), executables and
 * scripts (415 blocked_file_type: by extension, declared type and content, lists below); 1000 fields, 1 MiB per field
 * value, 1 KiB per field name (400). A malformed, truncated or aborted body → 400
 * invalid_multipart.
 *
 * On any rejection: reading stops, every blob already stored for the request is deleted, no
 * file row is inserted, and the AppError is thrown for the pipeline to render. File rows are
 * inserted only once the whole body parsed, with run_id null: the caller attaches them with
 * `attachToRun` in the transaction that inserts the run (or removes them with
 * `discardAttachments` when it does not start one).
 */
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import busboy from 'busboy';
import type { IncomingMessage } from 'node:http';
import { fileTypeFromBuffer } from 'file-type';
import type { Knex } from 'knex';
import type { Config } from '../config/index.js';
import type { Logger } from '../config/logger.js';
import { AppError, isAppError } from '../errors/index.js';
import { BlobTooLargeError, type BlobStore } from '../kernel/blobs.js';
import { attachFilesToRun, deleteFiles, recordFiles } from './files.js';
import { ATTACHMENT_URL_TTL_SECONDS, signFileUrl } from './signed-urls.js';
import { newId } from '../kernel/ids.js';
import { extensionOf, sanitizeFilename } from './filenames.js';

const MiB = 1024 * 1024;

export const ATTACHMENT_LIMITS = {
  maxFiles: 20,
  maxFileBytes: 25 * MiB,
  maxTotalBytes: 100 * MiB,
  maxFields: 1000,
  maxFieldBytes: 1 * MiB,
  maxFieldNameBytes: 1024,
};
export type AttachmentLimits = typeof ATTACHMENT_LIMITS;

/**
 * Blocked by extension (openapi/triggers.yaml decision): Windows executables, installers and
 * script hosts, Unix shells, interpreted scripts, Java/Android/macOS/Linux packages.
 */
export const BLOCKED_EXTENSIONS: ReadonlySet<string> = new Set([
  'exe',
  'dll',
  'com',
  'scr',
  'msi',
  'msp',
  'bat',
  'cmd',
  'ps1',
  'psm1',
  'vbs',
  'vbe',
  'js',
  'jse',
  'mjs',
  'cjs',
  'wsf',
  'wsh',
  'hta',
  'jar',
  'sh',
  'bash',
  'zsh',
  'ksh',
  'csh',
  'py',
  'pl',
  'rb',
  'php',
  'app',
  'apk',
  'deb',
  'rpm',
  'dmg',
  'pkg',
  'run',
  'bin',
]);

/**
 * Blocked by declared part Content-Type (openapi/triggers.yaml decision: extension, declared type or leading bytes).
 */
export const BLOCKED_MEDIA_TYPES: ReadonlySet<string> = new Set([
  'application/x-msdownload',
  'application/x-msdos-program',
  'application/x-dosexec',
  'application/vnd.microsoft.portable-executable',
  'application/x-ms-installer',
  'application/x-msi',
  'application/x-executable',
  'application/x-elf',
  'application/x-sharedlib',
  'application/x-mach-binary',
  'application/x-sh',
  'application/x-shellscript',
  'text/x-shellscript',
  'text/x-sh',
  'application/x-csh',
  'application/x-bat',
  'application/bat',
  'application/x-msbatch',
  'application/javascript',
  'application/x-javascript',
  'text/javascript',
  'application/ecmascript',
  'text/ecmascript',
  'application/x-python',
  'application/x-python-code',
  'text/x-python',
  'text/x-python-script',
  'application/x-perl',
  'text/x-perl',
  'application/x-ruby',
  'text/x-ruby',
  'application/x-php',
  'application/x-httpd-php',
  'text/x-php',
  'application/x-powershell',
  'text/vbscript',
  'application/hta',
  'application/java-archive',
  'application/x-java-archive',
  'application/vnd.android.package-archive',
  'application/x-debian-package',
  'application/vnd.debian.binary-package',
  'application/x-rpm',
  'application/x-redhat-package-manager',
  'application/x-apple-diskimage',
]);

/**
 * Blocked by content, whatever the name or declared type: file-type's verdict on the first
 * bytes (`MZ` PE/DOS, ELF, Mach-O incl. fat binaries, Java class/jar, Android apk, deb, rpm)
 * plus a `#!` interpreter line.
 */
const BLOCKED_CONTENT: ReadonlySet<string> = new Set(['exe', 'elf', 'macho', 'class', 'jar', 'apk', 'deb', 'rpm']);
/** file-type's recommended sample size. */
const SNIFF_BYTES = 4100;
const GENERIC_TYPES = new Set(['application/octet-stream', 'text/plain']);

/** The spec's Attachment object plus the file id (the run inputs omit nothing else). */
export interface Attachment {
  fileId: string;
  filename: string;
  contentType: string;
  size: number;
  /** Signed download URL on the run-files host, valid 24 hours (spec "Limits"). */
  url: string;
}

export interface MultipartTrigger {
  fields: Record<string, string>;
  attachments: Attachment[];
}

export interface AttachmentDeps {
  blobs: BlobStore;
  db: Knex;
  orgId: string;
  config: Pick<Config, 'secretKey' | 'baseUrls'>;
  log: Logger;
  /** Only tests override these; the defaults are the spec's limits. */
  limits?: Partial<AttachmentLimits> | undefined;
  /**
   * `collection`: files kept in a filestore or knowledge base (src/events): any file type
   * (openapi/resources.yaml decision), stored as file kind `collection`, never pruned as an
   * unattached attachment. Default `attachment`.
   */
  purpose?: 'attachment' | 'collection' | undefined;
}

const blocked = (): AppError => new AppError('ERR_ATTACHMENT_BLOCKED_TYPE');

export function isBlockedFilename(sanitized: string): boolean {
  return BLOCKED_EXTENSIONS.has(extensionOf(sanitized).toLowerCase());
}

export function isBlockedMediaType(mediaType: string | undefined): boolean {
  return mediaType !== undefined && BLOCKED_MEDIA_TYPES.has(mediaType.split(';')[0]!.trim().toLowerCase());
}

/** Verdict on a file's first bytes: blocked, and the detected MIME type when known. */
export async function inspectContent(head: Buffer): Promise<{ blocked: boolean; mime: string | undefined }> {
  const text = head.subarray(head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf ? 3 : 0);
  if (text[0] === 0x23 && text[1] === 0x21) return { blocked: true, mime: undefined };
  let found;
  try {
    found = await fileTypeFromBuffer(head);
  } catch {
    found = undefined; // a corrupt container is not an executable signature
  }
  return { blocked: found !== undefined && BLOCKED_CONTENT.has(found.ext), mime: found?.mime };
}

/** Counts one file's bytes and the request's total; holds back the head until inspected. */
class AttachmentGuard extends Transform {
  size = 0;
  detectedMime: string | undefined;
  private head: Buffer[] = [];
  private headBytes = 0;
  private inspected = false;

  private readonly blockTypes: boolean;

  constructor(
    private readonly totals: { bytes: number },
    private readonly limits: AttachmentLimits,
    opts: { blockTypes: boolean },
  ) {
    super();
    this.blockTypes = opts.blockTypes;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.size += chunk.length;
    this.totals.bytes += chunk.length;
    if (this.size > this.limits.maxFileBytes) return cb(new AppError('ERR_ATTACHMENT_FILE_TOO_LARGE'));
    if (this.totals.bytes > this.limits.maxTotalBytes) return cb(new AppError('ERR_ATTACHMENT_TOTAL_TOO_LARGE'));
    if (this.inspected) return cb(null, chunk);
    this.head.push(chunk);
    this.headBytes += chunk.length;
    if (this.headBytes < SNIFF_BYTES) return cb();
    this.release().then(() => cb(), cb);
  }

  override _flush(cb: TransformCallback): void {
    if (this.inspected) return cb();
    this.release().then(() => cb(), cb);
  }

  private async release(): Promise<void> {
    const head = Buffer.concat(this.head);
    this.head = [];
    this.inspected = true;
    const verdict = await inspectContent(head);
    if (verdict.blocked && this.blockTypes) throw blocked();
    this.detectedMime = verdict.mime;
    this.push(head);
  }
}

interface Pending {
  fileId: string;
  filename: string;
  declared: string;
  blobKey: string;
  guard: AttachmentGuard;
  size: number;
}

/** Declared type unless generic (octet-stream, busboy's text/plain default) and the content is recognised. */
function contentTypeOf(p: Pending): string {
  const declared =
    p.declared.length <= 255 && /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(p.declared)
      ? p.declared
      : 'application/octet-stream';
  return GENERIC_TYPES.has(declared) && p.guard.detectedMime ? p.guard.detectedMime : declared;
}

const malformed = (why: string): AppError =>
  new AppError('ERR_MULTIPART_INVALID', { message: `The multipart body is malformed: ${why}` });

/** Parses a multipart trigger body; see the module comment for limits and clean-up. */
export async function readMultipartTrigger(req: IncomingMessage, deps: AttachmentDeps): Promise<MultipartTrigger> {
  const limits: AttachmentLimits = { ...ATTACHMENT_LIMITS, ...deps.limits };
  const purpose = deps.purpose ?? 'attachment';
  const blockTypes = purpose === 'attachment';
  if (req.readableEnded) throw new Error('readMultipartTrigger: the request body was already consumed');
  let bb: busboy.Busboy;
  try {
    bb = busboy({
      headers: req.headers,
      preservePath: true, // sanitizeFilename removes path parts itself (one documented rule)
      defParamCharset: 'utf8', // FormData and browsers send UTF-8 names in filename="…"
      // busboy flags a value that reaches fieldSize as truncated: + 1 lets exactly 1 MiB in.
      // Its fieldNameSize applies to urlencoded bodies only: names are checked below.
      limits: { fields: limits.maxFields, fieldSize: limits.maxFieldBytes + 1 },
    });
  } catch (err) {
    throw malformed((err as Error).message);
  }

  const fields = new Map<string, string>();
  const files: Pending[] = [];
  const puts: Promise<unknown>[] = [];
  const totals = { bytes: 0 };
  let failure: Error | undefined;
  let stopParsing!: (err: Error) => void;
  const parsed = new Promise<void>((resolve, reject) => {
    stopParsing = reject;
    bb.once('close', resolve);
  });

  const fail = (err: Error): void => {
    if (failure) return;
    failure = err;
    // Stop reading: detach the parser and discard the rest of the body, so the client still
    // receives the error response on this connection.
    req.unpipe(bb);
    req.resume();
    bb.destroy();
    stopParsing(err);
  };

  bb.on('error', (err: Error) => fail(isAppError(err) ? err : malformed(err.message)));
  bb.on('fieldsLimit', () => fail(new AppError('ERR_MULTIPART_TOO_MANY_FIELDS')));
  bb.on('field', (name, value, info) => {
    if (failure) return;
    if (info.valueTruncated || Buffer.byteLength(name) > limits.maxFieldNameBytes)
      return fail(new AppError('ERR_MULTIPART_FIELD_TOO_LARGE'));
    fields.set(name, value);
  });
  bb.on('file', (_name: string, file: Readable, info: busboy.FileInfo) => {
    // busboy destroys the current part's stream when parsing stops; that is handled below.
    file.on('error', () => undefined);
    if (failure) return void file.resume();
    if (files.length >= limits.maxFiles) {
      file.resume();
      return fail(new AppError('ERR_ATTACHMENT_TOO_MANY'));
    }
    const filename = sanitizeFilename(info.filename);
    const declared = info.mimeType.toLowerCase();
    if (blockTypes && (isBlockedFilename(filename) || isBlockedMediaType(declared))) {
      file.resume();
      return fail(blocked());
    }
    const fileId = newId('file');
    const pending: Pending = {
      fileId,
      filename,
      declared,
      blobKey: `${purpose === 'collection' ? 'collections' : 'attachments'}/${deps.orgId}/${fileId}`,
      guard: new AttachmentGuard(totals, limits, { blockTypes }),
      size: 0,
    };
    files.push(pending);
    // The guard's own error (limit, blocked type, broken part) is the reason to report; the
    // blob write fails with it too, and a write failing alone is a storage error (500).
    pending.guard.on('error', (err: Error) => fail(err));
    file.on('error', (err: Error) => pending.guard.destroy(malformed(err.message)));
    file.pipe(pending.guard);
    puts.push(
      deps.blobs.put(pending.blobKey, pending.guard, { maxBytes: limits.maxFileBytes }).then(
        (r) => {
          pending.size = r.size;
        },
        (err: Error) => fail(err instanceof BlobTooLargeError ? new AppError('ERR_ATTACHMENT_FILE_TOO_LARGE') : err),
      ),
    );
  });
  // A client that goes away mid-body never ends the parser: treat it as a failure.
  req.once('close', () => {
    if (!req.complete) fail(malformed('the request was aborted before the body was complete'));
  });
  req.on('error', (err: Error) => fail(malformed(err.message)));

  req.pipe(bb);
  await parsed.catch(() => undefined);
  // Files still being flushed or inspected can fail after the parser closed: wait for them.
  await Promise.allSettled(puts);
  if (failure) {
    await removeBlobs(deps, files);
    throw failure;
  }
  try {
    await recordFiles(
      deps.db,
      files.map((f) => ({
        id: f.fileId,
        orgId: deps.orgId,
        kind: purpose,
        filename: f.filename,
        mimeType: contentTypeOf(f),
        size: f.size,
        blobKey: f.blobKey,
      })),
    );
  } catch (err) {
    await removeBlobs(deps, files);
    throw err;
  }
  deps.log.debug({ files: files.length, bytes: totals.bytes, fields: fields.size }, 'multipart trigger body stored');
  return {
    fields: Object.fromEntries(fields),
    attachments: files.map((f) => ({
      fileId: f.fileId,
      filename: f.filename,
      contentType: contentTypeOf(f),
      size: f.size,
      url: signFileUrl(deps.config, f.fileId, ATTACHMENT_URL_TTL_SECONDS),
    })),
  };
}

async function removeBlobs(deps: AttachmentDeps, files: Pending[]): Promise<void> {
  const results = await Promise.allSettled(files.map((f) => deps.blobs.delete(f.blobKey)));
  const failed = results.filter((r) => r.status === 'rejected').length;
  if (failed) deps.log.warn({ failed }, 'could not remove every blob of a rejected multipart body');
}

/**
 * Links a request's attachments to the run started with them. Call it in the transaction that
 * inserts the run: a mismatch (files of another organisation, already attached) throws, so
 * the run insert rolls back with it.
 */
export async function attachToRun(db: Knex, orgId: string, fileIds: readonly string[], runId: string): Promise<void> {
  const n = await attachFilesToRun(db, orgId, fileIds, runId);
  if (n !== fileIds.length)
    throw new Error(`attachToRun: ${n} of ${fileIds.length} attachments could be attached to run ${runId}`);
}

/** Removes the rows and blobs of attachments whose run was never started. */
export async function discardAttachments(
  deps: Pick<AttachmentDeps, 'blobs' | 'db' | 'orgId'>,
  attachments: readonly Attachment[],
): Promise<void> {
  await deleteFiles(
    deps.db,
    deps.blobs,
    deps.orgId,
    attachments.map((a) => a.fileId),
  );
}
