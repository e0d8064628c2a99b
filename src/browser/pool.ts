/**
 * Warm browsers, one per organisation, and the task slots of this process (src/browser/README.md
 * "Pool"). A browser is a box (src/browser/contain.ts, box.ts): a contained process running
 * playwright-core's browser server with Debian's Chromium as its child, under a user of its own
 * and, where the operating-system layer is in force, with no network but the guarded proxy
 * (src/browser/proxy.ts). A task's runner process reaches it through the filtering relay
 * (src/browser/relay.ts) by a relay endpoint whose path is a random secret, and makes its own
 * fresh context. Browsers are never shared between organisations: a script that reaches the
 * browser level (CDP) sees only its own organisation's pages. Each box is watched
 * (src/browser/watchdog.ts: memory, disk, CPU per task; the relay counts pages and contexts): one
 * over a limit is killed, its tasks fail naming the limit, and the organisation's next task gets a
 * fresh box. A browser with no task for `idleMs` is closed; one that crashes is dropped (its tasks
 * fail through their broken connections) and the next task starts another.
 *
 * Slots are shared fairly: at most `maxContexts` tasks run at once, at most `orgMaxContexts` of
 * one organisation, and a slot that frees goes to the waiting organisation with the fewest tasks
 * running (ties: the one served least recently), to its oldest waiting task. Boxes are members of
 * the memory budget of tenant processes (src/containment/budget.ts): admitted with the size a box
 * is expected to need, busy while it has tasks, idle (evictable, least recently used first)
 * otherwise, sized by the watchdog's measurements. A task whose organisation has no box waits,
 * without holding a slot, until the budget has room for one.
 */
import { accessSync, constants } from 'node:fs';
import type { Logger } from '../config/logger.js';
import type { BudgetMember, MemoryBudget } from '../containment/index.js';
import { BrowserBox, type BoxWatch } from './box.js';
import type { ChromiumBox, ProxySocket } from './contain.js';
import type { BrowserRelay } from './relay.js';
import type { BrowserLimits, CpuShare } from './watchdog.js';
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

const MiB = 1024 * 1024;

/**
 * What one organisation's box is expected to need when the memory budget admits it, before the
 * watchdog has measured it. Measured here (Debian's Chromium, namespaces level): an idle box,
 * with the context its runner opens ahead, 314–432 MiB PSS over its 14 processes (about
 * 1,050 MiB RSS summed); with one task on a page 356–462 MiB PSS.
 */
export const BOX_EXPECTED_BYTES = 400 * MiB;
/**
 * A task waiting for room in the budget tries again this often: memory that code runners free is
 * not announced to this pool. A box of this pool that goes idle or ends wakes it at once.
 */
const ROOM_RETRY_MS = 250;

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
  /** BROWSER_MAX_CONTEXTS: tasks this process runs at once. */
  maxContexts: number;
  /** BROWSER_ORG_MAX_CONTEXTS: tasks of one organisation this process runs at once. */
  orgMaxContexts: number;
  idleMs: number;
  /** The memory budget boxes share with code runners (TENANT_MEMORY_MB); without one, boxes are bounded by `idleMs` alone. */
  budget?: MemoryBudget | undefined;
  log: Logger;
}

interface Warm {
  box: Promise<BrowserBox>;
  tasks: number;
  idle: NodeJS.Timeout | undefined;
  dead: boolean;
  /** Why the pool stopped the box (a limit it crossed), for the tasks it was running. */
  stopped: string | undefined;
  /** Its place in the memory budget (none without a budget). */
  member: BudgetMember | undefined;
}

/** A task waiting for a slot: its organisation, its place in line, and the call that hands it the slot. */
interface Waiter {
  orgId: string;
  /** When the task first asked (a counter): a task that gave its slot back to wait for memory keeps its place. */
  since: number;
  grant: () => void;
}

export class BrowserUnavailableError extends Error {}

/** No room for the organisation's box came in the memory budget within the task's time limit. */
export class BrowserNoRoomError extends Error {}

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
  /** Slots taken, in all and per organisation. */
  private running = 0;
  private readonly held = new Map<string, number>();
  /** Tasks waiting for a slot, per organisation, oldest first. */
  private readonly queues = new Map<string, Waiter[]>();
  /** When each organisation with tasks running or waiting was last given a slot (a counter). */
  private readonly served = new Map<string, number>();
  private serves = 0;
  private asked = 0;
  /** Tasks waiting for room in the memory budget, and how to wake them. */
  private readonly roomWaiters = new Set<() => void>();
  private closed = false;
  private readonly unsample: () => void;

  constructor(private readonly opts: PoolOptions) {
    this.unsample = sampleOnScrape(browserPool, () => {
      const s = this.slots();
      browserPool.set({ state: 'browsers' }, [...this.browsers.values()].filter((w) => !w.dead).length);
      browserPool.set({ state: 'in_use' }, s.inUse);
      browserPool.set({ state: 'waiting' }, s.waiting);
    });
  }

  /** The memory budget boxes are members of, if any. */
  get budget(): MemoryBudget | undefined {
    return this.opts.budget;
  }

  /**
   * Slots in use (in all and per organisation) and tasks waiting, for a slot or for room in the
   * memory budget (operations, metrics and tests).
   */
  slots(): { inUse: number; waiting: number; perOrg: Map<string, number> } {
    let waiting = this.roomWaiters.size;
    for (const q of this.queues.values()) waiting += q.length;
    return { inUse: this.running, waiting, perOrg: new Map(this.held) };
  }

  /** Why browser tasks cannot run here, or undefined when they can. */
  unavailable(): string | undefined {
    try {
      accessSync(this.opts.executable, constants.X_OK);
    } catch {
      return `Chromium is not installed on this server (no executable at ${this.opts.executable}). Install Debian's Chromium with \`apt-get install -y chromium\`, or set BROWSER_EXECUTABLE to a Chromium binary, then restart the service.`;
    }
    const budget = this.opts.budget;
    if (budget && BOX_EXPECTED_BYTES > budget.totalBytes)
      return `Browser tasks cannot run on this server: an organisation's browser is expected to need ${BOX_EXPECTED_BYTES / MiB} MiB, more than the whole memory budget of tenant processes (${Math.round(budget.totalBytes / MiB)} MiB, TENANT_MEMORY_MB). Raise TENANT_MEMORY_MB to at least ${BOX_EXPECTED_BYTES / MiB}, then restart the service.`;
    return undefined;
  }

  /**
   * Waits for a slot (BROWSER_MAX_CONTEXTS, at most BROWSER_ORG_MAX_CONTEXTS of the
   * organisation's), then for the organisation's browser. When the organisation has no browser
   * and the memory budget has no room for one, the task gives its slot back and waits for room,
   * keeping its place in line, until `signal` aborts (BrowserNoRoomError).
   */
  async acquire(orgId: string, signal: AbortSignal): Promise<Lease> {
    const why = this.unavailable();
    if (why) throw new BrowserUnavailableError(why);
    const since = ++this.asked;
    let warm: Warm | undefined;
    for (;;) {
      await this.slot(orgId, since, signal);
      warm = this.warm(orgId);
      if (warm) break;
      this.free(orgId);
      await this.room(signal);
    }
    const w = warm;
    let released = false;
    w.tasks++;
    w.member?.busy();
    if (w.idle) clearTimeout(w.idle);
    w.idle = undefined;
    let cpu: CpuShare | undefined;
    const release = () => {
      if (released) return;
      released = true;
      cpu?.end();
      w.tasks--;
      this.free(orgId);
      if (w.tasks === 0 && !w.dead) {
        w.member?.idle();
        w.idle = setTimeout(() => this.retire(orgId, w), this.opts.idleMs);
        w.idle.unref();
        this.roomChanged();
      }
    };
    try {
      const [box, proxy] = await Promise.all([w.box, this.opts.proxy()]);
      cpu = box.task();
      const relay = await this.opts.relay.endpointFor(orgId, box.wsEndpoint());
      return {
        wsEndpoint: relay.url,
        relaySocketDir: relay.socketDir,
        directEndpoint: box.wsEndpoint(),
        proxyUrl: proxy.url,
        stopped: () => w.stopped,
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
    await Promise.all(
      all.map(async ([orgId, w]) => {
        this.drop(orgId, w);
        await w.box
          .then(
            (b) => b.close(),
            () => undefined,
          )
          .catch(() => undefined);
      }),
    );
  }

  /** Waits in the organisation's line until `dispatch` hands this task a slot. */
  private slot(orgId: string, since: number, signal: AbortSignal): Promise<void> {
    if (this.closed) return Promise.reject(new BrowserUnavailableError('The service is shutting down'));
    if (signal.aborted) return Promise.reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        orgId,
        since,
        grant: () => {
          signal.removeEventListener('abort', abort);
          resolve();
        },
      };
      const abort = () => {
        const q = this.queues.get(orgId);
        const i = q?.indexOf(waiter) ?? -1;
        if (q && i >= 0) {
          q.splice(i, 1);
          if (q.length === 0) this.queues.delete(orgId);
          if (!this.held.has(orgId) && !this.queues.has(orgId)) this.served.delete(orgId);
        }
        reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      };
      signal.addEventListener('abort', abort, { once: true });
      const q = this.queues.get(orgId) ?? [];
      // Oldest first: a task that gave its slot back to wait for memory goes before later ones.
      let at = q.length;
      while (at > 0 && q[at - 1]!.since > since) at--;
      q.splice(at, 0, waiter);
      this.queues.set(orgId, q);
      this.dispatch();
    });
  }

  /**
   * Hands free slots to waiting tasks: each to the organisation below its cap with the fewest
   * tasks running, the one given a slot least recently among equals, and there to its oldest task.
   */
  private dispatch(): void {
    while (this.running < this.opts.maxContexts) {
      let best: string | undefined;
      let bestHeld = 0;
      let bestServed = 0;
      for (const orgId of this.queues.keys()) {
        const held = this.held.get(orgId) ?? 0;
        if (held >= this.opts.orgMaxContexts) continue;
        const served = this.served.get(orgId) ?? 0;
        if (best === undefined || held < bestHeld || (held === bestHeld && served < bestServed)) {
          best = orgId;
          bestHeld = held;
          bestServed = served;
        }
      }
      if (best === undefined) return;
      const q = this.queues.get(best)!;
      const waiter = q.shift()!;
      if (q.length === 0) this.queues.delete(best);
      this.running++;
      this.held.set(best, bestHeld + 1);
      this.served.set(best, ++this.serves);
      waiter.grant();
    }
  }

  /** Gives a slot of the organisation back and hands it on. */
  private free(orgId: string): void {
    this.running--;
    const held = (this.held.get(orgId) ?? 1) - 1;
    if (held > 0) this.held.set(orgId, held);
    else {
      this.held.delete(orgId);
      if (!this.queues.has(orgId)) this.served.delete(orgId);
    }
    this.dispatch();
  }

  /**
   * Waits until the memory budget may have room for a box: a box of this pool went idle or ended,
   * or ROOM_RETRY_MS passed. Rejects with BrowserNoRoomError when `signal` aborts.
   */
  private room(signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const done = (err?: Error) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', abort);
        this.roomWaiters.delete(wake);
        if (err) reject(err);
        else resolve();
      };
      const wake = () => done();
      const abort = () => {
        const total = this.opts.budget?.totalBytes ?? 0;
        done(
          new BrowserNoRoomError(
            `the memory budget of tenant processes (${Math.round(total / MiB)} MiB, TENANT_MEMORY_MB) had no room for the organisation's browser (${BOX_EXPECTED_BYTES / MiB} MiB expected): every process in it was in use`,
          ),
        );
      };
      const timer = setTimeout(wake, ROOM_RETRY_MS);
      this.roomWaiters.add(wake);
      if (signal.aborted) abort();
      else signal.addEventListener('abort', abort, { once: true });
    });
  }

  /** A box went idle or ended: tasks waiting for room in the budget try again. */
  private roomChanged(): void {
    for (const wake of [...this.roomWaiters]) wake();
  }

  /**
   * The organisation's live browser, or a new one when the memory budget admits it (evicting idle
   * members, least recently used first, as far as needed); undefined when it has no room.
   */
  private warm(orgId: string): Warm | undefined {
    const existing = this.browsers.get(orgId);
    if (existing && !existing.dead) return existing;
    let member: BudgetMember | undefined;
    if (this.opts.budget) {
      member = this.opts.budget.admit('browser', {
        orgId,
        expectedBytes: BOX_EXPECTED_BYTES,
        evict: () => this.evicted(orgId, warm),
      });
      if (!member) return undefined;
    }
    const warm: Warm = {
      box: this.launch({
        limits: this.opts.limits,
        onBreach: (reason) => this.kill(orgId, warm, reason),
        onMeasure: (bytes) => {
          if (!warm.dead) warm.member?.setBytes(bytes);
        },
      }),
      tasks: 0,
      idle: undefined,
      dead: false,
      stopped: undefined,
      member,
    };
    this.browsers.set(orgId, warm);
    warm.box.then(
      (box) => {
        box.onExit(() => {
          const stopped = warm.dead;
          this.drop(orgId, warm);
          this.opts.relay.forget(box.wsEndpoint());
          if (!this.closed && !stopped && !warm.stopped)
            this.opts.log.warn({ orgId }, 'browser: Chromium exited; the next task starts another');
        });
        // Stopped (evicted, over a limit, shut down) while it started.
        if (warm.dead) void box.close().catch(() => undefined);
      },
      () => this.drop(orgId, warm),
    );
    return warm;
  }

  /**
   * The box is gone or going: it takes no more tasks, its idle timer stops, its measurements are
   * no longer counted, and its memory is free in the budget. Idempotent.
   */
  private drop(orgId: string, warm: Warm): void {
    const first = !warm.dead;
    warm.dead = true;
    if (warm.idle) clearTimeout(warm.idle);
    warm.idle = undefined;
    if (this.browsers.get(orgId) === warm) this.browsers.delete(orgId);
    warm.member?.release();
    if (first) this.roomChanged();
  }

  /** The memory budget evicted the idle box to make room for another process: it is stopped. */
  private evicted(orgId: string, warm: Warm): void {
    if (warm.dead) return;
    this.opts.log.info(
      { orgId },
      "browser: stopped an idle organisation's browser to make room in the memory budget (TENANT_MEMORY_MB)",
    );
    this.drop(orgId, warm);
    void warm.box
      .then((b) => {
        this.opts.relay.forget(b.wsEndpoint());
        return b.close();
      })
      .catch(() => undefined);
  }

  /** Kills a box over a limit: its tasks fail with `reason`; the organisation's next task starts a fresh one. */
  private kill(orgId: string, warm: Warm, reason: string): void {
    if (warm.dead) return;
    warm.stopped ??= reason;
    this.drop(orgId, warm);
    this.opts.log.warn({ orgId, reason }, "browser: stopped an organisation's browser over a limit");
    void warm.box.then((b) => b.close()).catch(() => undefined);
  }

  private retire(orgId: string, warm: Warm): void {
    if (warm.tasks > 0 || warm.dead) return;
    this.drop(orgId, warm);
    void warm.box
      .then((b) => {
        this.opts.relay.forget(b.wsEndpoint());
        return b.close();
      })
      .catch(() => undefined);
  }

  private async launch(watch: BoxWatch): Promise<BrowserBox> {
    const why = this.unavailable();
    if (why) throw new BrowserUnavailableError(why);
    const [proxy, extra] = await Promise.all([this.opts.proxy(), this.opts.extraProxies()]);
    const args = [...CHROMIUM_ARGS, `--proxy-server=${proxy.url}`, '--proxy-bypass-list=<-loopback>'];
    const launch = this.opts.box.prepare({ proxies: [proxy, ...extra], chromiumArgs: args });
    return BrowserBox.start(launch, watch);
  }
}
