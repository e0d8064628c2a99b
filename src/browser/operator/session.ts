/**
 * One operator task in its own browser context (README.md in this folder). The operator runs
 * in the service process: it executes no caller code, only the closed set of actions in
 * actions.ts, so it needs no script runner; it reaches the organisation's browser through the
 * same filtering relay and guarded proxy as scripts do (src/browser/relay.ts, proxy.ts). The
 * context gets the task's viewport, a saved login's storage state, the ad blocker, a trace when
 * `recordSession` is on, and every download of every page is captured.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { BrowserContext, BrowserContextOptions, Download, Page } from 'playwright-core';
import type { LanguageModel } from 'ai';
import type { Lease } from '../pool.js';
import { SCRIPT_LIMITS, type ScriptFile } from '../scripts.js';
import type { StorageState } from '../logins.js';
import type { OperatorPlan } from './task.js';
import type { CacheEntry } from './cache.js';
import { operate, type OperatorOutcome } from './run.js';
import { downloadRefusal } from '../urls.js';

/** After the last step: downloads started this recently may still announce themselves. */
const DOWNLOAD_SETTLE_MS = 500;
/**
 * After an action: GRACE_MS for the requests it causes to start (a page's handler may await
 * something first), then settled when none started since the action began; else once no request
 * has been in flight for QUIET_MS, or after SETTLE_MAX_MS.
 */
const GRACE_MS = 50;
const QUIET_MS = 100;
const SETTLE_MAX_MS = 3_000;
const SETTLE_TICK_MS = 10;

/** What a task's session needs of its plan (task.ts), and what the plan resolved into. */
export type OperatorParams = Pick<
  OperatorPlan,
  'task' | 'mode' | 'maxSteps' | 'systemPrompt' | 'viewport' | 'uploads' | 'recordSession' | 'startUrl'
> & {
  sessionId: string;
  storageState?: StorageState | undefined;
  cached?: CacheEntry | undefined;
  /** Turns the ad blocker on for a page (blockAds), when one is available. */
  blockAds?: ((page: Page) => Promise<void>) | undefined;
  /** The guarded proxy through BROWSER_PROXY_URL (proxies: true), instead of the direct one. */
  proxyUrl?: string | undefined;
};

export interface OperatorEnvIn {
  model: LanguageModel;
  signal: AbortSignal;
  log(line: string): void;
  status(message: string): void;
}

/**
 * The files a task keeps, within the task limits of src/browser/README.md. script-runner.cjs
 * applies the same limits and reads downloads the same way in its own process, which may read
 * only its own file and playwright-core (the permission model), so it cannot share this code.
 */
class TaskFiles {
  readonly files: ScriptFile[] = [];
  private bytes = 0;

  add(file: ScriptFile): void {
    if (this.files.length >= SCRIPT_LIMITS.files) throw new Error(`at most ${SCRIPT_LIMITS.files} files per task`);
    if (file.data.length > SCRIPT_LIMITS.fileBytes)
      throw new Error(`${file.fileName} is larger than ${SCRIPT_LIMITS.fileBytes / 1048576} MiB`);
    if (this.bytes + file.data.length > SCRIPT_LIMITS.totalBytes)
      throw new Error(`the task's files exceed ${SCRIPT_LIMITS.totalBytes / 1048576} MiB in total`);
    this.bytes += file.data.length;
    this.files.push(file);
  }
}

async function readDownload(download: Download, files: TaskFiles, log: (l: string) => void): Promise<void> {
  const name = download.suggestedFilename() || 'download';
  const refused = downloadRefusal(download.url());
  if (refused) {
    await download.cancel().catch(() => undefined);
    throw new Error(`${name}: ${refused}`);
  }
  log(`download started: ${name}`);
  const stream = await download.createReadStream();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > SCRIPT_LIMITS.fileBytes) {
      stream.destroy();
      throw new Error(`download ${name} is larger than ${SCRIPT_LIMITS.fileBytes / 1048576} MiB`);
    }
    chunks.push(chunk);
  }
  const failure = await download.failure();
  if (failure) throw new Error(`download ${name} failed: ${failure}`);
  files.add({ fileName: name, data: Buffer.concat(chunks), source: 'download' });
  log(`download saved: ${name} (${size} bytes)`);
}

export async function runOperator(
  lease: Lease,
  p: OperatorParams,
  env: OperatorEnvIn,
): Promise<{ outcome: OperatorOutcome; files: ScriptFile[] }> {
  const files = new TaskFiles();
  // The operator is the service's own code: it connects to the browser directly and names the
  // guarded proxy of its context itself (scripts go through the relay, which does that for them).
  // Loaded on first use, as the pool does: a service that runs no browser task never pays for it.
  const { chromium } = await import('playwright-core');
  const browser = await chromium.connect(lease.directEndpoint, { timeout: 30_000 });
  let context: BrowserContext | undefined;
  try {
    context = await browser.newContext({
      viewport: p.viewport,
      acceptDownloads: true,
      proxy: { server: p.proxyUrl ?? lease.proxyUrl },
      ...(p.storageState
        ? { storageState: p.storageState as Exclude<BrowserContextOptions['storageState'], string | undefined> }
        : {}),
    });
    if (p.recordSession) await context.tracing.start({ screenshots: true, snapshots: true, title: p.sessionId });
    const pages: Page[] = [];
    const downloads: Array<Promise<void>> = [];
    let lastDownload = 0;
    const blocking: Array<Promise<void>> = [];
    const inFlight = new Set<unknown>();
    let lastNetwork = Date.now();
    const ended = (r: unknown) => {
      inFlight.delete(r);
      lastNetwork = Date.now();
    };
    context.on('request', (r) => {
      inFlight.add(r);
      lastNetwork = Date.now();
    });
    context.on('requestfinished', ended);
    context.on('requestfailed', ended);
    const settle = async (since: number) => {
      const until = Date.now() + SETTLE_MAX_MS;
      await new Promise((r) => setTimeout(r, GRACE_MS));
      if (inFlight.size === 0 && lastNetwork < since) return;
      while (Date.now() < until && (inFlight.size > 0 || Date.now() - lastNetwork < QUIET_MS))
        await new Promise((r) => setTimeout(r, SETTLE_TICK_MS));
    };
    context.on('page', (page) => {
      pages.push(page);
      page.once('close', () => pages.splice(pages.indexOf(page), 1));
      if (p.blockAds)
        blocking.push(
          p.blockAds(page).catch((err: Error) => env.log(`blockAds: not applied to a page: ${err.message}`)),
        );
      page.on('download', (d) => {
        lastDownload = Date.now();
        downloads.push(
          readDownload(d, files, env.log).catch((err: Error) => env.log(`download not saved: ${err.message}`)),
        );
      });
    });
    const first = await context.newPage();
    await Promise.all(blocking);
    const outcome = await operate(
      {
        task: p.task,
        systemPrompt: p.systemPrompt,
        mode: p.mode,
        maxSteps: p.maxSteps,
        startUrl: p.startUrl,
        uploads: p.uploads.map((u) => u.name),
        cached: p.cached,
      },
      {
        model: env.model,
        signal: env.signal,
        log: env.log,
        status: env.status,
        host: {
          // The newest open page: a link that opens a tab moves the operator there, closing it moves back.
          page: () => pages[pages.length - 1] ?? first,
          viewport: p.viewport,
          uploads: new Map(p.uploads.map((u) => [u.name, u])),
          actionTimeoutMs: 10_000,
          settle,
          saveFile: async (fileName, data, mimeType) => files.add({ fileName, data, source: 'extract', mimeType }),
        },
      },
    );
    // Downloads the last steps started may not have announced themselves yet.
    for (;;) {
      const pending = downloads.length;
      await new Promise((r) =>
        setTimeout(r, Math.max(SETTLE_TICK_MS, DOWNLOAD_SETTLE_MS - (Date.now() - lastDownload))),
      );
      await Promise.all(downloads);
      if (downloads.length === pending && Date.now() - lastDownload >= DOWNLOAD_SETTLE_MS) break;
    }
    if (p.recordSession) await saveTrace(context, p.sessionId, files, env.log);
    return { outcome, files: files.files };
  } catch (err) {
    if (context && p.recordSession) await saveTrace(context, p.sessionId, files, env.log);
    (err as { files?: ScriptFile[] }).files = files.files;
    throw err;
  } finally {
    await context?.close().catch(() => undefined);
    await browser.close().catch(() => undefined);
  }
}

/**
 * recordSession: the Playwright trace (open it with `npx playwright show-trace` or
 * trace.playwright.dev) as a file of the task.
 */
async function saveTrace(
  context: BrowserContext,
  sessionId: string,
  files: TaskFiles,
  log: (l: string) => void,
): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sy-trace-'));
  try {
    const file = path.join(dir, 'trace.zip');
    await context.tracing.stop({ path: file });
    const data = await readFile(file);
    const fileName = `session-${sessionId}.zip`;
    files.add({ fileName, data, source: 'extract', mimeType: 'application/zip' });
    log(`recordSession: saved the session trace as ${fileName} (${data.length} bytes)`);
  } catch (err) {
    log(`recordSession: the trace could not be saved: ${(err as Error).message.split('\n')[0]}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
