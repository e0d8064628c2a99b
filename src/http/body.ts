/**
 * Request bodies of the pipeline: JSON and form-encoded bodies are read whole (bounded by
 * `defaults.jsonBodyLimitBytes`) and parsed; every other media type is left on the request
 * stream for its handler (multipart attachments, uploads).
 */
import type { IncomingMessage } from 'node:http';
import querystring from 'node:querystring';
import getRawBody from 'raw-body';
import { AppError } from '../errors/index.js';
import { defaults } from '../config/defaults.js';

/** Form bodies with more fields than this are refused (413), not silently truncated. */
const MAX_FORM_FIELDS = 1000;

/** Media type of a request without parameters, lower-cased. */
export function mediaType(req: IncomingMessage): string | undefined {
  const ct = req.headers['content-type'];
  return ct ? ct.split(';')[0]!.trim().toLowerCase() : undefined;
}

export function hasBody(req: IncomingMessage): boolean {
  const len = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (len !== undefined && len !== '0');
}

/** Only UTF-8 text is accepted (RFC 8259 §8.1); another declared charset is 415. */
function checkCharset(req: IncomingMessage): void {
  const m = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(req.headers['content-type'] ?? '');
  if (m && !/^utf-?8$/i.test(m[1]!)) {
    throw new AppError('ERR_REQUEST_UNSUPPORTED_MEDIA', { message: `Unsupported charset "${m[1]}": send UTF-8` });
  }
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding !== 'identity') {
    throw new AppError('ERR_REQUEST_UNSUPPORTED_MEDIA', { message: `Unsupported Content-Encoding "${encoding}"` });
  }
}

async function readText(req: IncomingMessage, limit: number): Promise<string> {
  checkCharset(req);
  try {
    return await getRawBody(req, { limit, length: req.headers['content-length'], encoding: 'utf-8' });
  } catch (err) {
    const type = (err as { type?: string }).type;
    if (type === 'entity.too.large') throw new AppError('ERR_REQUEST_TOO_LARGE');
    throw new AppError('ERR_REQUEST_INVALID', { message: 'The request body could not be read' });
  }
}

export async function readJson(req: IncomingMessage, limit = defaults.jsonBodyLimitBytes): Promise<unknown> {
  const text = await readText(req, limit);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new AppError('ERR_REQUEST_MALFORMED_JSON');
  }
}

/** Form fields as querystring parses them (a repeated name becomes an array). */
export async function readForm(
  req: IncomingMessage,
  limit = defaults.jsonBodyLimitBytes,
): Promise<Record<string, unknown>> {
  const text = await readText(req, limit);
  let fields = 1;
  for (let i = text.indexOf('&'); i >= 0 && fields <= MAX_FORM_FIELDS; i = text.indexOf('&', i + 1)) fields++;
  if (fields > MAX_FORM_FIELDS)
    throw new AppError('ERR_REQUEST_TOO_LARGE', { message: `Too many form fields (at most ${MAX_FORM_FIELDS})` });
  return { ...querystring.parse(text, '&', '=', { maxKeys: 0 }) };
}
