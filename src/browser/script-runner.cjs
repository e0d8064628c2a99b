'use strict';
/**
 * The child process of one `playwright_run` task (src/browser/README.md, "Script isolation").
 * Plain JavaScript, started by src/browser/scripts.ts with Node's permission model: no file
 * writes, no child processes, no worker threads, no addons, an empty environment, read access to
 * this file and playwright-core only, and a heap limit. It connects to the organisation's
 * browser by its unguessable endpoint, makes a fresh context, and runs the caller's code as the
 * body of an async function in a vm context whose only globals of this realm are `page` and a
 * `console` that writes to the task log. Downloads of every page of the context are read
 * through the browser connection (no file is written here) and handed to the parent with the
 * script's own file, if it returned one.
 *
 * Messages: parent → child `{type: 'run', v: 1, ...}` once; child → parent `{type: 'log', line}`
 * and finally `{type: 'done', ok, result, files, error}`. The parent trusts none of it blindly
 * (src/browser/scripts.ts checks sizes again).
 */
const vm = require('node:vm');

// playwright-core probes a few system files when it loads (for example isWsl reads
// /proc/sys/fs/binfmt_misc/WSLInterop). Under the permission model existsSync throws for a path
// outside the granted reads (Node 20); for such a probe "not there" is the truthful answer here.
const fs = require('node:fs');
const existsSync = fs.existsSync;
fs.existsSync = (p) => {
  try {
    return existsSync(p);
  } catch {
    return false;
  }
};

const playwrightPath = process.argv[2];
const { chromium } = require(playwrightPath);

const MiB = 1024 * 1024;
const LIMITS = { files: 20, fileBytes: 25 * MiB, totalBytes: 100 * MiB, resultChars: 1024 * 1024, lineChars: 8 * 1024 };
/** After the script returns: downloads started this recently may still announce themselves. */
const DOWNLOAD_SETTLE_MS = 500;

let totalBytes = 0;
const files = [];
const started = Date.now();

function stamp() {
  const s = (Date.now() - started) / 1000;
  const mm = String(Math.floor(s / 60)).padStart(2, '0');
  const ss = (s % 60).toFixed(3).padStart(6, '0');
  return `[${mm}:${ss}]`;
}

function log(text) {
  const line = `${stamp()} ${String(text).replace(/[\r\n]+/g, ' ').slice(0, LIMITS.lineChars)}`;
  if (process.connected) process.send({ type: 'log', line });
}

function addFile(file) {
  if (files.length >= LIMITS.files) throw new Error(`at most ${LIMITS.files} files per task`);
  if (file.data.length > LIMITS.fileBytes) throw new Error(`${file.fileName} is larger than ${LIMITS.fileBytes / MiB} MiB`);
  if (totalBytes + file.data.length > LIMITS.totalBytes) throw new Error(`the task's files exceed ${LIMITS.totalBytes / MiB} MiB in total`);
  totalBytes += file.data.length;
  files.push(file);
}

/** A typed array of any realm (page.screenshot() answers a Buffer of this one; the script's own Uint8Array is of its context). */
function isBytes(v) {
  return v !== null && typeof v === 'object' && /^\[object (Uint8Array|Uint8ClampedArray|Buffer)\]$/.test(Object.prototype.toString.call(v));
}

function text(v) {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  try {
    const s = JSON.stringify(v);
    return s === undefined ? String(v) : s;
  } catch {
    return String(v);
  }
}

/** The script's return value → the task's result text, and its file when it asked for one. */
function settleReturn(value) {
  if (value !== null && typeof value === 'object' && value.writeToCollection === true) {
    const { fileName, fileContent } = value;
    if (typeof fileName !== 'string' || fileName.trim() === '') throw new Error('writeToCollection needs a fileName (a non-empty string)');
    let data;
    if (typeof fileContent === 'string') data = Buffer.from(fileContent, 'utf8');
    else if (isBytes(fileContent)) data = Buffer.from(fileContent.buffer, fileContent.byteOffset, fileContent.byteLength);
    else throw new Error('writeToCollection needs a fileContent (a string or bytes such as page.screenshot()\'s)');
    addFile({ fileName, data: Buffer.from(data), source: 'script', mimeType: typeof value.mimeType === 'string' ? value.mimeType : undefined });
    log(`saved ${fileName} (${data.length} bytes, script)`);
    return `Saved ${fileName} (${data.length} bytes) to the collection.`;
  }
  return text(value).slice(0, LIMITS.resultChars);
}

async function readDownload(download) {
  const name = download.suggestedFilename() || 'download';
  log(`download started: ${name}`);
  const stream = await download.createReadStream();
  const chunks = [];
  let size = 0;
  for await (const chunk of stream) {
    size += chunk.length;
    if (size > LIMITS.fileBytes) {
      stream.destroy();
      throw new Error(`download ${name} is larger than ${LIMITS.fileBytes / MiB} MiB`);
    }
    chunks.push(chunk);
  }
  const failure = await download.failure();
  if (failure) throw new Error(`download ${name} failed: ${failure}`);
  addFile({ fileName: name, data: Buffer.concat(chunks), source: 'download' });
  log(`download saved: ${name} (${size} bytes)`);
}

/** The script's realm: a fresh context, `page` and a console bridged through strings. */
function scriptContext(page) {
  const sandbox = Object.create(null);
  const context = vm.createContext(sandbox, { name: 'playwright_run', codeGeneration: { strings: true, wasm: false } });
  const bridge = (level, line) => log(level === 'log' ? line : `${level}: ${line}`);
  vm.runInContext(`(function (bridge) {
    const show = (v) => { if (typeof v === 'string') return v; try { const s = JSON.stringify(v); return s === undefined ? String(v) : s; } catch { return String(v); } };
    const make = (level) => (...args) => { bridge(level, args.map(show).join(' ')); };
    globalThis.console = Object.freeze({ log: make('log'), info: make('info'), warn: make('warn'), error: make('error'), debug: make('debug') });
  })`, context)(bridge);
  sandbox.page = page;
  return context;
}

async function run(msg) {
  let browser;
  try {
    browser = await chromium.connect(msg.wsEndpoint, { timeout: 30_000 });
    const context = await browser.newContext({
      viewport: { width: msg.viewport.width, height: msg.viewport.height },
      acceptDownloads: true,
      ...(msg.storageState ? { storageState: msg.storageState } : {}),
    });
    const downloads = [];
    let lastDownload = 0;
    const watch = (p) => p.on('download', (d) => {
      lastDownload = Date.now();
      downloads.push(readDownload(d).catch((err) => log(`download not saved: ${err.message}`)));
    });
    context.on('page', watch);
    const page = await context.newPage();
    log(`browser context ready (viewport ${msg.viewport.width}x${msg.viewport.height})`);
    const script = new vm.Script(`(async () => {\n${msg.code}\n})()`, { filename: 'script.js', lineOffset: -1 });
    const value = await script.runInContext(scriptContext(page));
    const result = settleReturn(value);
    log('script returned');
    // Downloads the script started just before returning may not have announced themselves yet.
    for (;;) {
      const quiet = DOWNLOAD_SETTLE_MS - (Date.now() - lastDownload);
      const pending = downloads.length;
      await new Promise((r) => setTimeout(r, Math.max(50, quiet)));
      await Promise.all(downloads);
      if (downloads.length === pending && Date.now() - lastDownload >= DOWNLOAD_SETTLE_MS) break;
    }
    await context.close().catch(() => undefined);
    process.send({ type: 'done', ok: true, result, files });
  } catch (err) {
    const message = err && typeof err === 'object' && 'message' in err ? String(err.message) : text(err);
    log(`failed: ${message.split('\n')[0]}`);
    process.send({ type: 'done', ok: false, error: message.slice(0, 4000), files });
  } finally {
    await browser?.close().catch(() => undefined);
  }
}

process.on('unhandledRejection', () => undefined);
process.once('message', (msg) => {
  if (!msg || msg.type !== 'run' || msg.v !== 1) process.exit(70);
  run(msg).then(() => process.disconnect(), () => process.exit(70));
});
