// @ts-check
'use strict';
/**
 * A script runner process of one organisation (src/browser/README.md, "Script isolation"): it
 * runs that organisation's `playwright_run` tasks one at a time, each in a context of its own.
 * Plain JavaScript, started by src/browser/scripts.ts, where the operating-system layer is in
 * force, inside bubblewrap (no network, its own PID and IPC namespaces, a read-only view of the
 * Node binary, this file, the runners' shared module and playwright-core, a private /tmp), and
 * always with Node's permission model (no file writes, no child processes, no worker threads, no
 * addons; reads limited to this file, the shared module and playwright-core), an empty
 * environment and a heap limit. Once playwright-core is loaded and before any script runs, it
 * switches itself to the unprivileged user it was given (`uid` of its start options) when it
 * starts as root. It connects to the organisation's browser through the relay (a Unix socket
 * bound into its view, or loopback where there is no network namespace), makes a fresh context,
 * and runs the caller's code as the body of an async function in a vm context whose only
 * globals of this realm are `page` and a `console` that writes to the task log (and, in tests
 * only, this process's own `process`: `breach` of its start options, which the parent writes
 * only when test code passed AppOptions.assumeBreach to the composition root, src/app.ts).
 * Downloads of every page of the context are read through the browser connection (no file is
 * written here) and handed to the parent with the script's own file, if it returned one.
 *
 * What both runner programs do alike — start options, the user switch and root check, the IPC
 * envelope, file limits, stray rejections — is src/containment/runner-common.cjs. This file is
 * the Playwright side, apart from the code-step runner because its tenant code is a Playwright
 * client: it runs in this process's own isolate (a vm context holding live `page` objects, which
 * cannot be copied into another isolate), awaits a browser over a connection for as long as the
 * task lasts, and collects downloads as they arrive, whereas code steps run synchronously in
 * isolated-vm isolates that only exchange copies with the runner.
 *
 * Messages (version 2 of the script protocol, in the shared `{v, t}` envelope): parent → child
 * `{v, t: 'run', task, ...}`, one at a time; child → parent `{v, t: 'ready'}` once, then per task
 * `{v, t: 'log', task, line}`, `{v, t: 'done', task, ok, result, files, error}` and
 * `{v, t: 'idle', task}` (ready for the next task). The parent trusts none of it blindly
 * (src/browser/scripts.ts checks sizes again, and watches the process tree's memory and process
 * count from outside) and kills the process instead of reusing it after a time limit or a
 * broken task.
 */
const vm = require('node:vm');
const common = require('../containment/runner-common.cjs');

const OPTIONS = common.startOptions();

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

// playwright-core asks for the home folder when it loads; the environment is empty and the
// contained view has no /etc/passwd to look it up in, so the private /tmp stands in.
const os = require('node:os');
os.homedir = () => '/tmp';
const { chromium } = /** @type {typeof import('playwright-core')} */ (require(OPTIONS.playwright));

// A runner that was meant to switch users and cannot does not run scripts.
common.becomeUser(OPTIONS.uid);
common.ignoreStrayRejections();
/** Tests only (start options `breach`): scripts get this process object, as if the vm boundary had failed. */
const BREACH = OPTIONS.breach !== 'off';
/** The script protocol's version (runner-common.cjs PROTOCOL, read by src/browser/scripts.ts too). */
const PROTOCOL = common.PROTOCOL.script;

const MiB = 1024 * 1024;
/**
 * A file a task hands back (src/browser/scripts.ts ScriptFile, checked there again).
 * @typedef {{ fileName: string, data: Buffer, source: 'script' | 'download', mimeType?: string }} TaskFile
 */
/**
 * One task: its number, the log's clock, its files; `live` until its outcome is sent.
 * @typedef {{ n: number, started: number, files: import('../containment/runner-common.cjs').FileTally<TaskFile>, live: boolean }} Task
 */
/**
 * A `run` message of the parent (src/browser/scripts.ts runIn).
 * @typedef {{ task: number, reuse: boolean, defaultViewport: Viewport, startedAt: unknown, wsEndpoint: string, code: string, viewport: Viewport, storageState: any, proxy: string, limits: Limits }} RunMessage
 */
/** @typedef {{ width: number, height: number }} Viewport */
/** @typedef {{ files: number, fileBytes: number, totalBytes: number, resultChars: number, lineChars: number }} Limits */
/**
 * A context opened for a task (or ahead of one), its page, and the downloads credited to `task`.
 * @typedef {{ browser: import('playwright-core').Browser, proxy: string | undefined, context: import('playwright-core').BrowserContext, page: import('playwright-core').Page | undefined, viewport: Viewport, downloads: Promise<void>[], last: number, task: Task | undefined }} Opened
 */

/** @type {Limits} The task's limits, sent with each task by the parent (src/browser/scripts.ts SCRIPT_LIMITS). */
let LIMITS;
/** After the script returns: downloads started this recently may still announce themselves. */
const DOWNLOAD_SETTLE_MS = 500;
/**
 * After the script returns, at least this long for a download it started (a click on a download
 * link, then return) to announce itself. Chromium reports a download only once its response
 * arrives, and no request event comes before that; on a loaded CI machine that can take well
 * over 50 ms even for a local download.
 */
const DOWNLOAD_ANNOUNCE_MS = 200;

/** @param {Task} task */
function stamp(task) {
  const s = (Date.now() - task.started) / 1000;
  const mm = String(Math.floor(s / 60)).padStart(2, '0');
  const ss = (s % 60).toFixed(3).padStart(6, '0');
  return `[${mm}:${ss}]`;
}

/**
 * A line of one task's log; nothing once the task is over (a promise it left behind cannot write
 * into the next task's log).
 */
/**
 * @param {Task} task
 * @param {unknown} text
 */
function log(task, text) {
  if (!task.live) return;
  ipc.send(common.MESSAGE.log, {
    task: task.n,
    line: `${stamp(task)} ${String(text)
      .replace(/[\r\n]+/g, ' ')
      .slice(0, LIMITS.lineChars)}`,
  });
}

/** Every file is kept: a download named like an earlier file is another file. */
/**
 * @param {Task} task
 * @param {TaskFile} file
 */
function addFile(task, file) {
  const refused = task.files.add(file);
  if (refused === 'fileBytes') throw new Error(`${file.fileName} is larger than ${LIMITS.fileBytes / MiB} MiB`);
  if (refused === 'files') throw new Error(`at most ${LIMITS.files} files per task`);
  if (refused === 'totalBytes') throw new Error(`the task's files exceed ${LIMITS.totalBytes / MiB} MiB in total`);
}

/**
 * A typed array of any realm (page.screenshot() answers a Buffer of this one; the script's own
 * Uint8Array is of its context).
 */
/**
 * @param {unknown} v
 * @returns {v is Uint8Array}
 */
function isBytes(v) {
  return (
    v !== null &&
    typeof v === 'object' &&
    /^\[object (Uint8Array|Uint8ClampedArray|Buffer)\]$/.test(Object.prototype.toString.call(v))
  );
}

/** The script's return value → the task's result text, and its file when it asked for one. */
/**
 * @param {Task} task
 * @param {any} value
 * @returns {string}
 */
function settleReturn(task, value) {
  if (value !== null && typeof value === 'object' && value.writeToCollection === true) {
    const { fileName, fileContent } = value;
    if (typeof fileName !== 'string' || fileName.trim() === '')
      throw new Error('writeToCollection needs a fileName (a non-empty string)');
    let data;
    if (typeof fileContent === 'string') data = Buffer.from(fileContent, 'utf8');
    else if (isBytes(fileContent))
      data = Buffer.from(fileContent.buffer, fileContent.byteOffset, fileContent.byteLength);
    else throw new Error("writeToCollection needs a fileContent (a string or bytes such as page.screenshot()'s)");
    addFile(task, {
      fileName,
      data: Buffer.from(data),
      source: 'script',
      mimeType: typeof value.mimeType === 'string' ? value.mimeType : undefined,
    });
    log(task, `saved ${fileName} (${data.length} bytes, script)`);
    return `Saved ${fileName} (${data.length} bytes) to the collection.`;
  }
  return common.text(value).slice(0, LIMITS.resultChars);
}

/** Schemes a download may come from (src/browser/urls.ts downloadRefusal): the web, and what a page builds itself. */
const DOWNLOAD_SCHEMES = new Set(['http:', 'https:', 'blob:', 'data:']);

/** @param {string} url */
function downloadScheme(url) {
  try {
    return new URL(url).protocol;
  } catch {
    return '';
  }
}

/**
 * @param {Task} task
 * @param {import('playwright-core').Download} download
 */
async function readDownload(task, download) {
  const name = download.suggestedFilename() || 'download';
  const scheme = downloadScheme(download.url());
  if (!DOWNLOAD_SCHEMES.has(scheme)) {
    await download.cancel().catch(() => undefined);
    throw new Error(
      `${name}: downloads from ${scheme || 'unknown'} URLs are refused (only http(s), blob: and data: downloads are saved)`,
    );
  }
  log(task, `download started: ${name}`);
  const stream = await download.createReadStream();
  /** @type {Buffer[]} */
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
  addFile(task, { fileName: name, data: Buffer.concat(chunks), source: 'download' });
  log(task, `download saved: ${name} (${size} bytes)`);
}

/** The script's realm: a fresh vm context per task with `page` and a console bridged through strings. */
/**
 * @param {Task} task
 * @param {import('playwright-core').Page | undefined} page
 */
function scriptContext(task, page) {
  const sandbox = Object.create(null);
  const context = vm.createContext(sandbox, { name: 'playwright_run', codeGeneration: { strings: true, wasm: false } });
  const bridge = (/** @type {string} */ level, /** @type {string} */ line) =>
    log(task, level === 'log' ? line : `${level}: ${line}`);
  vm.runInContext(
    `(function (bridge) {
    const show = (v) => { if (typeof v === 'string') return v; try { const s = JSON.stringify(v); return s === undefined ? String(v) : s; } catch { return String(v); } };
    const make = (level) => (...args) => { bridge(level, args.map(show).join(' ')); };
    globalThis.console = Object.freeze({ log: make('log'), info: make('info'), warn: make('warn'), error: make('error'), debug: make('debug') });
  })`,
    context,
  )(bridge);
  sandbox.page = page;
  if (BREACH) sandbox.process = process;
  return context;
}

/**
 * A fresh context and page, opened before the task that will use it is known (with the default
 * viewport) or for it; downloads of every page of the context are credited to the task that
 * `holder.task` names when they start.
 */
/**
 * @param {import('playwright-core').Browser} browser
 * @param {Viewport} viewport
 * @param {any} storageState
 * @param {string | undefined} proxy
 * @returns {Promise<Opened>}
 */
async function openContext(browser, viewport, storageState, proxy) {
  const context = await browser.newContext({
    viewport: { width: viewport.width, height: viewport.height },
    acceptDownloads: true,
    // The browser already goes through the guarded proxy; naming it on the context also sends the
    // context's API requests (page.request, route.fetch, made by playwright-core's server side) through it.
    ...(proxy ? { proxy: { server: proxy } } : {}),
    ...(storageState ? { storageState } : {}),
  });
  /** @type {Opened} */
  const opened = { browser, proxy, context, page: undefined, viewport, downloads: [], last: 0, task: undefined };
  context.on('page', (p) =>
    p.on('download', (d) => {
      const task = opened.task;
      if (!task || !task.live) return;
      opened.last = Date.now();
      opened.downloads.push(readDownload(task, d).catch((err) => log(task, `download not saved: ${err.message}`)));
    }),
  );
  opened.page = await context.newPage();
  return opened;
}

/**
 * The organisation's browser connection, kept between tasks, and the context opened for the
 * next task while this one runs (`next`, a promise), so back-to-back tasks start on a ready page.
 */
/** @type {import('playwright-core').Browser | undefined} */
let browser;
/** @type {string | undefined} */
let endpoint;
/** @type {Promise<Opened> | undefined} */
let next;

/**
 * @param {string} wsEndpoint
 * @returns {Promise<import('playwright-core').Browser>}
 */
async function connect(wsEndpoint) {
  if (browser && endpoint === wsEndpoint && browser.isConnected()) return browser;
  if (browser) await browser.close().catch(() => undefined);
  next = undefined;
  const connected = await chromium.connect(wsEndpoint, { timeout: 30_000 });
  browser = connected;
  endpoint = wsEndpoint;
  return connected;
}

/** The context opened ahead, when it suits this task (same browser, viewport, no saved login); else it is closed. */
/**
 * @param {import('playwright-core').Browser} b
 * @param {RunMessage} msg
 */
async function takeNext(b, msg) {
  const ahead = next;
  next = undefined;
  const opened = ahead ? await ahead.catch(() => undefined) : undefined;
  if (!opened) return undefined;
  if (
    opened.browser === b &&
    opened.proxy === msg.proxy &&
    !msg.storageState &&
    opened.viewport.width === msg.viewport.width &&
    opened.viewport.height === msg.viewport.height
  )
    return opened;
  void opened.context.close().catch(() => undefined);
  return undefined;
}

/** @param {RunMessage} msg */
async function run(msg) {
  /** @type {Task} */
  const task = {
    n: msg.task,
    started: typeof msg.startedAt === 'number' ? msg.startedAt : Date.now(),
    files: new common.FileTally(LIMITS),
    live: true,
  };
  log(task, 'script process ready');
  let opened;
  try {
    const b = await connect(msg.wsEndpoint);
    opened = (await takeNext(b, msg)) ?? (await openContext(b, msg.viewport, msg.storageState, msg.proxy));
    if (msg.reuse) {
      next = openContext(b, msg.defaultViewport, undefined, msg.proxy);
      next.catch(() => undefined);
    }
    opened.task = task;
    log(task, `browser context ready (viewport ${msg.viewport.width}x${msg.viewport.height})`);
    const script = new vm.Script(`(async () => {\n${msg.code}\n})()`, { filename: 'script.js', lineOffset: -1 });
    const value = await script.runInContext(scriptContext(task, opened.page));
    const result = settleReturn(task, value);
    log(task, 'script returned');
    // Downloads the script started just before returning may not have announced themselves yet.
    const returned = Date.now();
    for (;;) {
      const quiet = Math.max(
        DOWNLOAD_SETTLE_MS - (Date.now() - opened.last),
        DOWNLOAD_ANNOUNCE_MS - (Date.now() - returned),
      );
      const pending = opened.downloads.length;
      await new Promise((r) => setTimeout(r, Math.max(50, quiet)));
      await Promise.all(opened.downloads);
      if (opened.downloads.length === pending && Date.now() - opened.last >= DOWNLOAD_SETTLE_MS) break;
    }
    task.live = false;
    ipc.send(common.MESSAGE.done, { task: task.n, ok: true, result, files: task.files.list });
  } catch (err) {
    const message = common.messageOf(err);
    log(task, `failed: ${message.split('\n')[0]}`);
    task.live = false;
    ipc.send(common.MESSAGE.done, { task: task.n, ok: false, error: message.slice(0, 4000), files: task.files.list });
  }
  // The task's context goes, in the background; the process takes its next task at once.
  if (opened) void opened.context.close().catch(() => undefined);
  ipc.send(common.MESSAGE.idle, { task: task.n });
}

let busy = false;
/** A message this runner does not speak, or a task while one runs: the parent is not what it expects. */
const refuse = () => process.exit(common.EXIT.protocol);
const ipc = common.channel(
  PROTOCOL,
  {
    [common.MESSAGE.run]: (msg) => {
      if (busy || !msg.limits) refuse();
      LIMITS = msg.limits;
      busy = true;
      run(/** @type {RunMessage} */ (/** @type {unknown} */ (msg))).then(() => {
        busy = false;
      }, refuse);
    },
  },
  refuse,
);
// playwright-core is loaded and the user switched: the parent checks the user from outside, then sends tasks.
ipc.ready();
