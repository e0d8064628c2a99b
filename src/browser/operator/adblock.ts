/**
 * `blockAds` (README.md in this folder): Ghostery's maintained ad blocker for Playwright
 * (@ghostery/adblocker-playwright), which blocks requests of a page by filter rules and hides
 * ad elements. The rules: BROWSER_ADBLOCK_LISTS when set (EasyList-syntax lists, files or
 * URLs, for installations without internet access or with lists of their own), else Ghostery's
 * prebuilt ads engine (EasyList and friends), fetched from its CDN and kept for a day in
 * DATA_DIR/browser. No list is bundled: an installation that can load none gets a log line
 * saying blockAds was not applied, never a silent no-op. A failed load is retried after
 * RETRY_MS, a loaded engine is kept for the life of the process (prebuilt: refreshed daily).
 */
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { PlaywrightBlocker } from '@ghostery/adblocker-playwright';
import type { Page } from 'playwright-core';
import type { AdBlock } from './task.js';

const DAY_MS = 86_400_000;
const RETRY_MS = 600_000;
const FETCH_TIMEOUT_MS = 15_000;
const ENGINE_FILE = 'adblock-ads-engine.bin';

const timedFetch: typeof fetch = (input, init) =>
  fetch(input, { ...init, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });

/** The library, loaded on the first task that blocks ads. */
const library = () => import('@ghostery/adblocker-playwright').then((m) => m.PlaywrightBlocker);

async function fromLists(lists: string[]): Promise<PlaywrightBlocker> {
  const PlaywrightBlocker = await library();
  const texts = await Promise.all(
    lists.map(async (l) => {
      if (!/^https?:\/\//i.test(l)) return readFile(l, 'utf8');
      const res = await timedFetch(l);
      if (!res.ok) throw new Error(`${l} answered HTTP ${res.status}`);
      return res.text();
    }),
  );
  return PlaywrightBlocker.parse(texts.join('\n'));
}

async function prebuilt(dir: string): Promise<PlaywrightBlocker> {
  const PlaywrightBlocker = await library();
  const file = path.join(dir, ENGINE_FILE);
  const cached = async () => PlaywrightBlocker.deserialize(new Uint8Array(await readFile(file)));
  const age = await stat(file).then(
    (s) => Date.now() - s.mtimeMs,
    () => Infinity,
  );
  if (age < DAY_MS) {
    try {
      return await cached();
    } catch {
      // A file of another library version: fetch anew.
    }
  }
  try {
    const blocker = await PlaywrightBlocker.fromPrebuiltAdsOnly(timedFetch);
    await mkdir(dir, { recursive: true });
    await writeFile(file, blocker.serialize());
    return blocker;
  } catch (err) {
    // Yesterday's rules are better than none.
    if (age !== Infinity) return cached().catch(() => Promise.reject(err as Error));
    throw err;
  }
}

export class AdBlocker {
  private state: { promise: Promise<AdBlock>; at: number; failed: boolean } | undefined;

  constructor(private readonly opts: { lists: string[]; dataDir: string }) {}

  /** The blocker, loaded on first use; reloaded RETRY_MS after a failure, and daily for the prebuilt engine. */
  get(): Promise<AdBlock> {
    const s = this.state;
    const age = s ? Date.now() - s.at : 0;
    if (!s || (s.failed ? age > RETRY_MS : this.opts.lists.length === 0 && age > DAY_MS)) {
      const at = Date.now();
      const promise = this.load();
      const next = { promise, at, failed: false };
      void promise.then((b) => {
        next.failed = 'unavailable' in b;
        next.at = Date.now();
      });
      this.state = next;
      return promise;
    }
    return s.promise;
  }

  private async load(): Promise<AdBlock> {
    const what = this.opts.lists.length
      ? `the ${this.opts.lists.length} list(s) of BROWSER_ADBLOCK_LISTS`
      : "Ghostery's prebuilt ads engine";
    try {
      const blocker = this.opts.lists.length
        ? await fromLists(this.opts.lists)
        : await prebuilt(path.join(this.opts.dataDir, 'browser'));
      return {
        describe: what,
        enable: async (page: Page) => {
          await blocker.enableBlockingInPage(
            page as unknown as Parameters<PlaywrightBlocker['enableBlockingInPage']>[0],
          );
        },
      };
    } catch (err) {
      return {
        unavailable: `${what} could not be loaded: ${(err as Error).message.split('\n')[0]}${this.opts.lists.length ? '' : '; set BROWSER_ADBLOCK_LISTS to filter lists this server can read'}`,
      };
    }
  }
}
