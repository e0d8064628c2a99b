/**
 * Warm Chromium browsers, one per organisation, and the per-process limit of concurrent tasks
 * (src/browser/README.md "Pool"). A browser is a playwright-core browser server on Debian's
 * Chromium, contained by src/browser/contain.ts (its own user and, where the operating-system
 * layer is in force, its own namespaces and file system view); a task's runner process reaches
 * it through the filtering relay (src/browser/relay.ts) by a relay endpoint whose path is a
 * random secret, and makes its own fresh context. Browsers are never shared between
 * organisations: a script that reaches the browser level (CDP) sees only its own
 * organisation's pages. A browser with no task for `idleMs` is closed; one that crashes is
 * dropped (its tasks fail through their broken connections) and the next task starts another.
 * Browsers reach the network only through the guarded proxy (src/browser/proxy.ts).
 */
import { accessSync, constants } from 'node:fs';
import type { Logger } from '../config/logger.js';
import type { ChromiumBox } from './contain.js';
import type { BrowserRelay } from './relay.js';
import { browserPool, sampleOnScrape } from '../kernel/metrics.js';

/**
 * The flags Chromium needs on these machines (closed network, root, no GPU),
 * and WebRTC kept off UDP that would go around the guarded proxy.
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
];

export interface PoolOptions {
  executable: string;
  /** The guarded forward proxy every browser connects through (src/browser/proxy.ts). */
  proxyUrl: () => Promise<string>;
  /** The filtering relay runners reach the browsers through (src/browser/relay.ts). */
  relay: BrowserRelay;
  /** How each browser is contained (src/browser/contain.ts). */
  box: ChromiumBox;
  maxContexts: number;
  idleMs: number;
  log: Logger;
}

interface BrowserServer {
  wsEndpoint(): string;
  close(): Promise<void>;
  process(): { on(event: 'exit', cb: () => void): void; pid?: number | undefined };
}

interface Warm {
  server: Promise<BrowserServer>;
  tasks: number;
  idle: NodeJS.Timeout | undefined;
  dead: boolean;
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
    const release = () => {
      if (released) return;
      released = true;
      warm.tasks--;
      this.running--;
      this.waiting.shift()?.();
      if (warm.tasks === 0 && !warm.dead) {
        warm.idle = setTimeout(() => this.retire(orgId, warm), this.opts.idleMs);
        warm.idle.unref();
      }
    };
    try {
      const [server, proxyUrl] = await Promise.all([warm.server, this.opts.proxyUrl()]);
      const relay = await this.opts.relay.endpointFor(orgId, server.wsEndpoint());
      return {
        wsEndpoint: relay.url,
        relaySocketDir: relay.socketDir,
        directEndpoint: server.wsEndpoint(),
        proxyUrl,
        release,
      };
    } catch (err) {
      release();
      throw err;
    }
  }

  /** The process id of the organisation's running Chromium, if it has one (operations and tests). */
  async pidOf(orgId: string): Promise<number | undefined> {
    const warm = this.browsers.get(orgId);
    if (!warm || warm.dead) return undefined;
    return (await warm.server.catch(() => undefined))?.process().pid;
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
        await w.server
          .then(
            (s) => s.close(),
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
    const warm: Warm = { server: this.launch(), tasks: 0, idle: undefined, dead: false };
    this.browsers.set(orgId, warm);
    warm.server.then(
      (server) => {
        server.process().on('exit', () => {
          warm.dead = true;
          this.opts.relay.forget(server.wsEndpoint());
          if (this.browsers.get(orgId) === warm) this.browsers.delete(orgId);
          if (!this.closed) this.opts.log.warn({ orgId }, 'browser: Chromium exited; the next task starts another');
        });
      },
      () => {
        warm.dead = true;
        if (this.browsers.get(orgId) === warm) this.browsers.delete(orgId);
      },
    );
    return warm;
  }

  private retire(orgId: string, warm: Warm): void {
    if (warm.tasks > 0 || warm.dead) return;
    warm.dead = true;
    if (this.browsers.get(orgId) === warm) this.browsers.delete(orgId);
    void warm.server
      .then((s) => {
        this.opts.relay.forget(s.wsEndpoint());
        return s.close();
      })
      .catch(() => undefined);
  }

  private async launch(): Promise<BrowserServer> {
    const why = this.unavailable();
    if (why) throw new BrowserUnavailableError(why);
    const [{ chromium }, proxy] = await Promise.all([import('playwright-core'), this.opts.proxyUrl()]);
    const box = this.opts.box.prepare();
    try {
      const server = (await chromium.launchServer({
        executablePath: box.executablePath,
        headless: true,
        // Every connection of every page goes through the guarded proxy, loopback included.
        args: [...CHROMIUM_ARGS, `--proxy-server=${proxy}`, '--proxy-bypass-list=<-loopback>'],
        // The service's environment (secrets included) is not the browser's business.
        env: box.env,
        // Downloads land in the browser's own folder, the only one it may write.
        ...(box.downloadsPath ? { downloadsPath: box.downloadsPath } : {}),
        handleSIGINT: false,
        handleSIGTERM: false,
        handleSIGHUP: false,
      })) as BrowserServer;
      server.process().on('exit', box.release);
      return server;
    } catch (err) {
      box.release();
      throw err;
    }
  }
}
