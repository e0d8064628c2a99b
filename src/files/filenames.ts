/**
 * Attachment file names (spec "Attachment": "filename (string, sanitized: path parts
 * removed, special characters replaced)"). The sanitized name is what the run inputs carry,
 * what the files table stores and what downloads announce in Content-Disposition.
 */

/** Longest sanitized name, in UTF-8 bytes (common filesystem limit; fits files.filename). */
export const MAX_FILENAME_BYTES = 255;
/** Name used when nothing usable is left. */
export const FALLBACK_FILENAME = 'file';
/** An extension longer than this is not kept whole when a long name is shortened. */
const MAX_EXTENSION_BYTES = 32;

const CONTROL = /\p{Cc}/gu;
/** Safe set: letters, combining marks and digits of any script, `.`, `-`, `_` and space. */
const UNSAFE = /[^\p{L}\p{M}\p{N}._\- ]/gu;
/** Windows device names are not usable as file names, with or without an extension. */
const RESERVED = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\.|$)/i;

const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');
const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** Cuts `s` to at most `max` UTF-8 bytes without splitting a character or grapheme. */
function cutToBytes(s: string, max: number): string {
  let out = '';
  let used = 0;
  for (const { segment } of segmenter.segment(s)) {
    const n = bytes(segment);
    if (used + n > max) break;
    out += segment;
    used += n;
  }
  return out;
}

const trimEnds = (s: string): string => s.replace(/^[. ]+|[. ]+$/g, '');

/**
 * Sanitizes a client-supplied file name:
 * 1. everything up to the last `/` or `\` is removed (path parts, traversal);
 * 2. control characters are removed;
 * 3. characters outside the safe set are replaced by `_`, runs of `_` and of spaces collapse;
 * 4. dots and spaces are trimmed at both ends (no hidden files, no Windows trailing dots);
 * 5. Windows device names (CON, NUL, COM1…) get a `_` prefix;
 * 6. the result is cut to 255 UTF-8 bytes, keeping the extension;
 * 7. an empty result (empty input, `.`, `..`, only dots) becomes `file`.
 */
export function sanitizeFilename(name: string | undefined | null): string {
  let s = String(name ?? '').normalize('NFC');
  s = s.slice(Math.max(s.lastIndexOf('/'), s.lastIndexOf('\\')) + 1);
  s = s.replace(CONTROL, '').replace(UNSAFE, '_').replace(/_+/g, '_').replace(/ +/g, ' ');
  s = trimEnds(s);
  if (RESERVED.test(s)) s = `_${s}`;
  if (bytes(s) > MAX_FILENAME_BYTES) s = shorten(s);
  return s === '' ? FALLBACK_FILENAME : s;
}

function shorten(s: string): string {
  const ext = extensionOf(s);
  const keep = ext && bytes(ext) + 1 <= MAX_EXTENSION_BYTES ? `.${ext}` : '';
  const base = keep ? s.slice(0, -keep.length) : s;
  const cut = trimEnds(cutToBytes(base, MAX_FILENAME_BYTES - bytes(keep)));
  return cut === '' ? trimEnds(cutToBytes(s, MAX_FILENAME_BYTES)) : `${cut}${keep}`;
}

/** The text after the last dot of a name (without the dot), or '' when there is none. */
export function extensionOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot > 0 && dot < name.length - 1 ? name.slice(dot + 1) : '';
}
