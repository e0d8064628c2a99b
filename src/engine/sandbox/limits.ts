/**
 * Limits on what a code step may hand back (src/engine/README.md) and the file-name rule for the files
 * it writes. The runner enforces the limits as the step runs (so `files.write` throws inside
 * the step, where the author can see it); the parent checks them again on arrival, because
 * the child process is not trusted.
 */

export interface SandboxLimits {
  /** Files one step may write (mirrors the spec's attachment count limit of 20). */
  maxFiles: number;
  /** Bytes per file (spec "Limits": 25 MB per attachment; we use 25 MiB). */
  maxFileBytes: number;
  /** Bytes of all files of one step (spec "Limits": 100 MB per request; we use 100 MiB). */
  maxTotalFileBytes: number;
  /** Bytes of the result text (JSON text for json results). */
  maxResultBytes: number;
  /** Lines of ctx.log per step; one truncation marker follows the last kept line. */
  maxLogLines: number;
  /** Bytes of ctx.log per step. */
  maxLogBytes: number;
  /** Bytes of one log line. */
  maxLogLineBytes: number;
}

const MiB = 1024 * 1024;

export const DEFAULT_LIMITS: Readonly<SandboxLimits> = Object.freeze({
  maxFiles: 20,
  maxFileBytes: 25 * MiB,
  maxTotalFileBytes: 100 * MiB,
  maxResultBytes: 1 * MiB,
  maxLogLines: 1000,
  maxLogBytes: 64 * 1024,
  maxLogLineBytes: 8 * 1024,
});

/** Longest produced file name in UTF-8 bytes (a common file-system limit). */
const MAX_NAME_BYTES = 255;

/**
 * A produced file's name: path parts removed (everything up to the last `/` or `\`), control
 * characters removed, characters other than letters, digits, `.`, `-`, `_` and space replaced
 * by `_`, dots and spaces trimmed at both ends, at most 255 bytes (the extension kept); an
 * empty result becomes `file`. The same spirit as the spec's attachment rule ("path parts
 * removed, special characters replaced").
 */
export function sanitizeFileName(name: string): string {
  let s = name.normalize('NFC');
  s = s.slice(Math.max(s.lastIndexOf('/'), s.lastIndexOf('\\')) + 1);
  s = s
    .replace(/\p{Cc}/gu, '')
    .replace(/[^\p{L}\p{M}\p{N}._\- ]/gu, '_')
    .replace(/_+/g, '_');
  s = s.replace(/^[. ]+|[. ]+$/g, '');
  if (Buffer.byteLength(s) > MAX_NAME_BYTES) {
    const dot = s.lastIndexOf('.');
    const ext = dot > 0 && s.length - dot <= 16 ? s.slice(dot) : '';
    let base = s.slice(0, s.length - ext.length);
    while (Buffer.byteLength(base + ext) > MAX_NAME_BYTES) base = Array.from(base).slice(0, -1).join('');
    s = base + ext;
  }
  return s === '' ? 'file' : s;
}

const BY_EXTENSION: Record<string, string> = {
  txt: 'text/plain',
  md: 'text/markdown',
  csv: 'text/csv',
  html: 'text/html',
  htm: 'text/html',
  xml: 'application/xml',
  json: 'application/json',
  js: 'text/javascript',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  pdf: 'application/pdf',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  svg: 'image/svg+xml',
  zip: 'application/zip',
  gz: 'application/gzip',
};

/** Extension for a MIME type (the reverse of BY_EXTENSION), e.g. for `response.<ext>`. */
export function extensionFor(mimeType: string): string {
  const type = mimeType.split(';')[0]!.trim().toLowerCase();
  if (type === 'text/plain') return 'txt';
  if (type === 'image/jpeg') return 'jpg';
  if (type === 'text/html') return 'html';
  if (type === 'application/yaml') return 'yaml';
  const hit = Object.entries(BY_EXTENSION).find(([, t]) => t === type);
  return hit ? hit[0] : 'bin';
}

/**
 * MIME type of a produced file when the step gave none: by extension, else by what was
 * written (text → text/plain, bytes → application/octet-stream).
 */
export function defaultMimeType(fileName: string, { wasText }: { wasText: boolean }): string {
  const dot = fileName.lastIndexOf('.');
  const known = dot > 0 ? BY_EXTENSION[fileName.slice(dot + 1).toLowerCase()] : undefined;
  if (known) return known;
  return wasText ? 'text/plain' : 'application/octet-stream';
}

/** A MIME type as given by a step, if it is a plausible `type/subtype[; params]` string. */
export function cleanMimeType(value: string): string | undefined {
  const v = value.trim();
  return v.length <= 200 && /^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/.test(v) && !/\p{Cc}/u.test(v) ? v : undefined;
}
