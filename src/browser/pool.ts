/**
 * Warm browsers, one per organisation, and the per-process limit of concurrent tasks
 * (src/browser/README.md "Pool"). A browser is a box (src/browser/contain.ts, box.ts): a
 * contained process running playwright-core's browser server with Debian's Chromium as its
 * child, under a user of its own and, where the operating-system layer is in force, with no
 * network but the guarded proxy (src/browser/proxy.ts). A task's runner process reaches it
 * through the filtering relay (src/browser/relay.ts) by a relay endpoint whose path is a random
 * secret, and makes its own fresh context. Browsers are never shared between organisations: a
 * script that reaches the browser level (CDP) sees only its own organisation's pages. Each box is
 * watched (src/browser/watchdog.ts: memory, disk, CPU per task; the relay counts pages and
 * contexts): one over a limit is killed, its tasks fail naming the limit, and the organisation's
 * next task gets a fresh box. A browser with no task for `idleMs` is closed; one that crashes is
 * dropped (its tasks fail through their broken connections) and the next task starts another.
 */
import { accessSync, constants } from 'node:fs';
import type { Logger } from '../config/logger.js';
import { BrowserBox } from './box.js';
import type { ChromiumBox, ProxySocket } from './contain.js';
import type { BrowserRelay } from './relay.js';
import { BrowserWatchdog, type BrowserLimits, type CpuShare } from './watchdog.js';
import { browserPool, sampleOnScrape } from '../kernel/metrics.js';

/**
 * The flags Chromium needs on these machines (closed network, root, no GPU), WebRTC kept off UDP
 * that would go around the guarded proxy, and a disk cache that leaves room on the box's
 * private disk for downloads.
 */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
  '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
  `--disk-cache-size=${32 * 1024 * 1024}`,
];

/** A guarded proxy every box can use: its URL (the same on both sides of a box) and Unix socket. */
export interface PoolProxy extends ProxySocket {
  url: string;
}

export interface PoolOptions {
  executable: string;
  /** The guarded forward proxy every browser connects through (src/browser/proxy.ts), started on first use. */
  proxy: () => Promise<PoolProxy>;
  /** Further guarded proxies a box must reach (the upstream proxy of operator tasks), started with the box. */
  extraProxies: () => Promise<PoolProxy[]>;
  /** The filtering relay runners reach the browsers through (src/browser/relay.ts). */
  relay: BrowserRelay;
  /** How each browser is contained (src/browser/contain.ts). */
  box: ChromiumBox;
  limits: BrowserLimits;
  maxContexts: number;
  idleMs: number;
  log: Logger;
}

interface Warm {
  box: Promise<BrowserBox>;
  tasks: number;
  idle: NodeJS.Timeout | undefined;
  dead: boolean;
  watchdog: BrowserWatchdog | undefined;
  /** Why the pool stopped the box (a limit it crossed), for the tasks it was running. */
  stopped: string | undefined;
}

export class BrowserUnavailableError extends Error {}

/** A slot: the endpoint to connect to, and its release (exactly once). */
export interface Lease {
  /** The relay endpoint a script runner connects to. */
  wsEndpoint: string;
  /** The organisation's relay socket folder, to bind into its runners' view (Unix socket relays). */
  relaySocketDir: string | undefined;
  /** The guarded proxy, for the contexts the task makes (their API requests go through it too). */
  proxyUrl: string;
  /**
   * The browser server's own endpoint, for the service's own code (the operator, which names the
   * proxy of each context it makes); never handed to a script runner, which gets `wsEndpoint`.
   */
  directEndpoint: string;
  /** Why the pool stopped the task's browser (a limit it crossed, in words), once it has. */
  stopped(): string | undefined;
  release(): void;
}

export class BrowserPool {
  private readonly browsers = new Map<string, Warm>();
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private closed = false;
  private readonly unsample: () => void;

  constructor(private readonly opts: PoolOptions) {
    this.unsample = sampleOnScrape(browserPool, () => {
      browserPool.set({ state: 'browsers' }, [...this.browsers.values()].filter((w) => !w.dead).length);
      browserPool.set({ state: 'in_use' }, this.running);
      browserPool.set({ state: 'waiting' }, this.waiting.length);
    });
  }

  /** Why browser tasks cannot run here, or undefined when they can. */
  unavailable(): string | undefined {
    try {
      accessSync(this.opts.executable, constants.X_OK);
      return undefined;
    } catch {
      return `Chromium is not installed on this server (no executable at ${this.opts.executable}). Install Debian's Chromium with \`apt-get install -y chromium\`, or set BROWSER_EXECUTABLE to a Chromium binary, then restart the service.`;
    }
  }

  /** Waits for a free slot (BROWSER_MAX_CONTEXTS), then for the organisation's browser. */
  async acquire(orgId: string, signal: AbortSignal): Promise<Lease> {
    await this.slot(signal);
    let released = false;
    const warm = this.warm(orgId);
    warm.tasks++;
    if (warm.idle) clearTimeout(warm.idle);
    warm.idle = undefined;
    let cpu: CpuShare | undefined;
    const release = () => {
      if (released) return;
      released = true;
      cpu?.end();
      warm.tasks--;
      this.running--;
      this.waiting.shift()?.();
      if (warm.tasks === 0 && !warm.dead) {
        warm.idle = setTimeout(() => this.retire(orgId, warm), this.opts.idleMs);
        warm.idle.unref();
      }
    };
    try {
      const [box, proxy] = await Promise.all([warm.box, this.opts.proxy()]);
      cpu = warm.watchdog?.task();
      const relay = await this.opts.relay.endpointFor(orgId, box.wsEndpoint());
      return {
        wsEndpoint: relay.url,
        relaySocketDir: relay.socketDir,
        directEndpoint: box.wsEndpoint(),
        proxyUrl: proxy.url,
        stopped: () => warm.stopped,
        release,
      };
    } catch (err) {
      release();
      throw err;
    }
  }

  /** The process id of the organisation's running browser box, if it has one (operations and tests). */
  async pidOf(orgId: string): Promise<number | undefined> {
    const warm = this.browsers.get(orgId);
    if (!warm || warm.dead) return undefined;
    return (await warm.box.catch(() => undefined))?.pid;
  }

  /**
   * Stops the browser whose endpoint is `endpoint` because it crossed a limit (`reason`, e.g.
   * "opened more than 50 pages at once (BROWSER_MAX_PAGES)"): its tasks fail with the reason, and
   * the organisation's next task gets a fresh browser.
   */
  stopBrowser(endpoint: string, reason: string): void {
    for (const [orgId, warm] of this.browsers) {
      void warm.box.then(
        (box) => {
          if (box.wsEndpoint() === endpoint) this.kill(orgId, warm, reason);
        },
        () => undefined,
      );
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unsample();
    const all = [...this.browsers.entries()];
    this.browsers.clear();
    await Promise.all(
      all.map(async ([, w]) => {
        if (w.idle) clearTimeout(w.idle);
        w.dead = true;
        w.watchdog?.stop();
        await w.box
          .then(
            (b) => b.close(),
            () => undefined,
          )
          .catch(() => undefined);
      }),
    );
  }

  private slot(signal: AbortSignal): Promise<void> {
    if (this.closed) return Promise.reject(new BrowserUnavailableError('The service is shutting down'));
    if (this.running < this.opts.maxContexts) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const go = () => {
        signal.removeEventListener('abort', abort);
        this.running++;
        resolve();
      };
      const abort = () => {
        const i = this.waiting.indexOf(go);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      };
      signal.addEventListener('abort', abort, { once: true });
      this.waiting.push(go);
    });
  }

  private warm(orgId: string): Warm {
    const existing = this.browsers.get(orgId);
    if (existing && !existing.dead) return existing;
    const warm: Warm = {
      box: this.launch(),
      tasks: 0,
      idle: undefined,
      dead: false,
      watchdog: undefined,
      stopped: undefined,
    };
    this.browsers.set(orgId, warm);
    warm.box.then(
      (box) => {
        if (box.pid !== undefined)
          warm.watchdog = new BrowserWatchdog(
            { pid: box.pid, namespaces: box.launch.namespaces },
            this.opts.limits,
            (reason) => this.kill(orgId, warm, reason),
          );
        box.onExit(() => {
          warm.dead = true;
          warm.watchdog?.stop();
          this.opts.relay.forget(box.wsEndpoint());
          if (this.browsers.get(orgId) === warm) this.browsers.delete(orgId);
          if (!this.closed && !warm.stopped)
            this.opts.log.warn({ orgId }, 'browser: Chromium exited; the next task starts another');
        });
      },
      () => {
        warm.dead = true;
        if (this.browsers.get(orgId) === warm) this.browsers.delete(orgId);
      },
    );
    return warm;
  }

  /** Kills a box over a limit: its tasks fail with `reason`; the organisation's next task starts a fresh one. */
  private kill(orgId: string, warm: Warm, reason: string): void {
    if (warm.dead) return;
    warm.stopped ??= reason;
    warm.dead = true;
    warm.watchdog?.stop();
    if (warm.idle) clearTimeout(warm.idle);
    if (this.browsers.get(orgId) === warm) this.browsers.delete(orgId);
    this.opts.log.warn({ orgId, reason }, "browser: stopped an organisation's browser over a limit");
    void warm.box.then((b) => b.close()).catch(() => undefined);
  }

  private retire(orgId: string, warm: Warm): void {
    if (warm.tasks > 0 || warm.dead) return;
    warm.dead = true;
    warm.watchdog?.stop();
    if (this.browsers.get(orgId) === warm) this.browsers.delete(orgId);
    void warm.box
      .then((b) => {
        this.opts.relay.forget(b.wsEndpoint());
        return b.close();
      })
      .catch(() => undefined);
  }

  private async launch(): Promise<BrowserBox> {
    const why = this.unavailable();
    if (why) throw new BrowserUnavailableError(why);
    const [proxy, extra] = await Promise.all([this.opts.proxy(), this.opts.extraProxies()]);
    const args = [...CHROMIUM_ARGS, `--proxy-server=${proxy.url}`, '--proxy-bypass-list=<-loopback>'];
    const launch = this.opts.box.prepare({ proxies: [proxy, ...extra], chromiumArgs: args });
    return BrowserBox.start(launch);
  }
}
