/**
 * The web console at `/console` (console/README.md): the files Vite built into the build's
 * `console/` folder (scripts/build.mjs), served on the service's own port. The console is a
 * client of the public API like any other; this module only hands out its files.
 *
 * - `/console/assets/*` are content-hashed: cached for a year, immutable.
 * - Every other path under `/console` is a client-side route of the app and answers
 *   `index.html` (never cached, so a new build is picked up at once). Vite writes its asset
 *   references relative (`./assets/…`); they are rooted here at the console's path as the
 *   client asked for it, so a host application that mounts the service under a prefix
 *   (src/embed.ts) serves a working console at `<prefix>/console`. The app finds the service
 *   from the URL of its own scripts (console/src/base.ts).
 * - Every answer carries a strict Content-Security-Policy (no inline script or style, nothing
 *   from another origin, no framing) and `X-Frame-Options: DENY`.
 * - Files are read once and kept in memory with their gzip form; nothing here runs for a
 *   request outside `/console`.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { IncomingMessage, ServerResponse } from 'node:http';
import mime from 'mime-types';
import { AppError } from '../errors/index.js';
import { renderError, sendError } from '../http/render.js';
import type { Logger } from '../config/logger.js';
import { BUNDLE_DIR, PACKAGE_ROOT } from '../kernel/package-files.js';
import { mountPrefix } from '../http/pipeline.js';

export const CONSOLE_PREFIX = '/console';

/**
 * `connect-src 'self'`: the console talks to this service only. `img-src` admits `data:` and
 * `blob:` for screenshot previews and charts drawn to a canvas. Styles come from the built
 * stylesheet; the app sets element styles through the CSSOM, which `style-src 'self'` allows.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy': CONSOLE_CSP,
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

interface ConsoleFile {
  body: Buffer;
  gzip: Buffer | undefined;
  type: string;
  cacheControl: string;
}

/**
 * The folder of the built console: the running build's own when this runs compiled, else (from
 * source: tests, `tsx`) the one of the build `dist/BUILD` names, which `npm test` makes first.
 */
export function consoleDir(root: string = PACKAGE_ROOT, bundleDir: string | undefined = BUNDLE_DIR): string {
  if (bundleDir !== undefined) return path.join(root, bundleDir, 'console');
  try {
    const stamp = JSON.parse(readFileSync(path.join(root, 'dist', 'BUILD'), 'utf8')) as { sources?: unknown };
    if (typeof stamp.sources === 'string') return path.join(root, 'dist', `b-${stamp.sources}`, 'console');
  } catch {
    // No build yet: the console answers that it is not built.
  }
  return path.join(root, 'dist', 'console');
}

function loadFiles(dir: string): Map<string, ConsoleFile> {
  const files = new Map<string, ConsoleFile>();
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile() || e.name === 'BUILD') continue;
    const rel = path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/');
    const body = readFileSync(path.join(dir, rel));
    const type = mime.contentType(path.extname(rel)) || 'application/octet-stream';
    const compressible = /^(text\/|application\/(javascript|json)|image\/svg)/.test(type) && body.length > 512;
    files.set(rel, {
      body,
      gzip: compressible ? gzipSync(body, { level: 9 }) : undefined,
      type,
      cacheControl: rel.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
    });
  }
  return files;
}

/** How many mount prefixes keep their rendered index.html (a host has few mounts). */
const PREFIXES_KEPT = 16;

/** What a URL path may hold as it is (RFC 3986 `pchar` and `/`, with `%` of an existing escape); anything else is escaped. */
const PATH_CHAR = /[^A-Za-z0-9\-._~!$'()*+,;=:@%/]/gu;

/** A character percent-escaped as its UTF-8 bytes. */
function escapePathChar(c: string): string {
  return [...Buffer.from(c, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
}

/**
 * index.html with its `./assets/` references rooted at `<prefix>/console/assets/`. The root is
 * made of path characters only (so it can neither leave the attribute nor become a URL of
 * another kind once a browser reads `\` as `/`), and repeated slashes are collapsed, so no
 * reference can point at another host.
 */
function renderIndex(index: ConsoleFile, prefix: string): ConsoleFile {
  const root = `${prefix}${CONSOLE_PREFIX}/`.replace(PATH_CHAR, escapePathChar).replace(/\/{2,}/g, '/');
  const body = Buffer.from(index.body.toString('utf8').replace(/(=\s*["'])\.\/assets\//g, `$1${root}assets/`));
  return { ...index, body, gzip: index.gzip ? gzipSync(body, { level: 9 }) : undefined };
}

function send(req: IncomingMessage, res: ServerResponse, file: ConsoleFile): void {
  const accepts = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  const body = accepts && file.gzip ? file.gzip : file.body;
  const headers: Record<string, string | number> = {
    ...SECURITY_HEADERS,
    'Content-Type': file.type,
    'Content-Length': body.length,
    'Cache-Control': file.cacheControl,
    Vary: 'Accept-Encoding',
  };
  if (body === file.gzip) headers['Content-Encoding'] = 'gzip';
  res.writeHead(200, headers);
  res.end(req.method === 'HEAD' ? undefined : body);
}

function fail(res: ServerResponse, err: AppError, log: Logger): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
  sendError(res, renderError(err, 'rest', log));
}

/** The request listener for every path under CONSOLE_PREFIX. */
export function consoleListener(
  log: Logger,
  dir: string = consoleDir(),
): (req: IncomingMessage, res: ServerResponse) => void {
  let files: Map<string, ConsoleFile> | undefined;
  const indexes = new Map<string, ConsoleFile>();
  const indexFor = (prefix: string): ConsoleFile => {
    let page = indexes.get(prefix);
    if (page) return page;
    page = renderIndex(files!.get('index.html')!, prefix);
    if (indexes.size < PREFIXES_KEPT) indexes.set(prefix, page);
    return page;
  };
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      return fail(res, new AppError('ERR_METHOD_NOT_ALLOWED'), log);
    }
    if (files === undefined) {
      if (!existsSync(path.join(dir, 'index.html'))) return fail(res, new AppError('ERR_CONSOLE_NOT_BUILT'), log);
      files = loadFiles(dir);
    }
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const rel = (q < 0 ? url : url.slice(0, q)).slice(CONSOLE_PREFIX.length).replace(/^\/+/, '');
    const file = files.get(rel);
    if (file && rel !== 'index.html') return send(req, res, file);
    // A missing asset is an error; any other path is one of the app's own routes.
    if (rel.startsWith('assets/') || /\.[a-z0-9]+$/i.test(rel))
      return fail(res, new AppError('ERR_ROUTE_NOT_FOUND'), log);
    return send(req, res, indexFor(mountPrefix(req) ?? ''));
  };
}
