/**
 * Browser tasks as the `browser-automation` server uses them (spec section 12, the browser task
 * state table): a start call records the task RUNNING and returns at once; the task runs in the
 * background in this process; a poll from any process reads the store. Files the task makes
 * (the script's own, downloads) are saved in the task's collection, a filestore, and listed
 * with signed URLs valid one hour; the log is saved there too, as `logFileName`.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileTypeFromBuffer } from 'file-type';
import { lookup as mimeLookup } from 'mime-types';
import type { Knex } from 'knex';
import type { Config } from '../config/index.js';
import type { Logger } from '../config/logger.js';
import type { Isolation, MemoryBudget } from '../containment/index.js';
import { addFile, createCollection, type CollectionRecord, type EventsService, holdsFiles } from '../events/index.js';
import { BROWSER_FILE_URL_TTL_SECONDS, signFileUrl } from '../files/index.js';
import { newId } from '../kernel/ids.js';
import { OutboundPolicy, parseOutboundAllowlist } from '../kernel/outbound.js';
import { withSpan } from '../kernel/tracing.js';
import { BrowserNoRoomError, BrowserPool, BrowserUnavailableError, type PoolProxy } from './pool.js';
import { ChromiumBox } from './contain.js';
import { GuardedProxy } from './proxy.js';
import { BrowserRelay } from './relay.js';
import { DEFAULT_VIEWPORT, SCRIPT_LIMITS, ScriptRunners, type ScriptFile } from './scripts.js';
import { loginState, type StorageState } from './logins.js';
import {
  expireStale,
  findTask,
  finishTask,
  insertTask,
  pruneFinished,
  touchTask,
  type TaskFile,
  type TaskKind,
  type TaskRecord,
} from './tasks.js';
import type { Lease } from './pool.js';
import { TaskError } from './errors.js';
import {
  executeOperator,
  planOperator,
  type OperatorArgs,
  type OperatorDeps,
  type OperatorPlan,
} from './operator/task.js';
import { pruneExpired } from './operator/cache.js';
import { AdBlocker } from './operator/adblock.js';
import { browserTasks } from '../kernel/metrics.js';

/**
 * The running process renews a task this often; a task not renewed for STALE_MS, or STALE_MS past
 * its deadline, is failed.
 */
const HEARTBEAT_MS = 5_000;
export const STALE_MS = 30_000;
const SWEEP_MS = 30_000;
/** Finished task records are pruned (after RUN_RETENTION_DAYS) at most this often. */
const PRUNE_EVERY_MS = 3_600_000;
/** A script runner process serves at most this many tasks of its organisation, then a new one starts. */
const TASKS_PER_PROCESS = 50;
const MiB = 1024 * 1024;

/** Starts a guarded proxy on loopback and on its Unix socket in `socketDir`. */
async function started(proxy: GuardedProxy, socketDir: string): Promise<PoolProxy> {
  const url = await proxy.start(socketDir);
  return { url, port: Number(new URL(url).port), socket: proxy.socket! };
}

export interface ScriptArgs {
  code: string;
  buildId: string;
  collectionId?: string | undefined;
  useContextService?: string | undefined;
  viewportWidth?: number | undefined;
  viewportHeight?: number | undefined;
}

export interface PollArgs {
  sessionId: string;
  collectionId?: string | undefined;
  logFileName?: string | undefined;
}

export interface FileEntry {
  url: string;
  fileName: string;
  mimeType: string;
  size: number;
  source: TaskFile['source'];
}

export { TaskError };

type Login = { id: string; state: StorageState };

/** A task while it runs, as its body sees it (src/browser/operator/task.ts, runScript). */
export interface RunningTask {
  id: string;
  startedAt: number;
  deadline: number;
  /** Aborts at the task's time limit or at shutdown. */
  limit: AbortSignal;
  /** A line of the task log, stamped with the time since the start. */
  log(line: string): void;
  /** The log so far (lines already stamped go in directly). */
  lines: string[];
  /** The progress message a poll shows while the task runs. */
  status(message: string): void;
}

/**
 * How a task ended: the result text, its files, and the message of the end state (default "Task
 * completed." / "Task failed.").
 */
export interface TaskOutcome {
  ok: boolean;
  result: string;
  files: ScriptFile[];
  message?: string | undefined;
}

const CONTINUE_TOOL: Record<TaskKind, string> = {
  script: 'browser-automation_playwright_run_continue',
  operator: 'browser-automation_operator_run_continue',
};

function stamp(startedAt: number): string {
  const s = (Date.now() - startedAt) / 1000;
  return `[${String(Math.floor(s / 60)).padStart(2, '0')}:${(s % 60).toFixed(3).padStart(6, '0')}]`;
}

async function mimeTypeOf(file: ScriptFile): Promise<string> {
  if (file.mimeType && /^[\w.+-]+\/[\w.+-]+/.test(file.mimeType)) return file.mimeType;
  const byName = mimeLookup(file.fileName);
  if (byName) return byName;
  return (await fileTypeFromBuffer(file.data))?.mime ?? 'application/octet-stream';
}

/**
 * Layers of the browser's containment a test turned off, to show what the others hold on their
 * own (src/app.ts AssumedBreach, README.md "Security model"); every layer holds unless named.
 */
export interface BrowserWeakening {
  /** Script runners hand their own `process` to scripts, as if the vm boundary had failed. */
  runnerProcess?: boolean | undefined;
  /** Scripts may open any URL: the relay refuses no scheme and Chromium gets no URL blocklist. */
  anyScheme?: boolean | undefined;
  /** The relay forwards every message unchanged (it still counts pages and contexts). */
  relayOpen?: boolean | undefined;
}

export class BrowserService {
  readonly pool: BrowserPool;
  private readonly runners: ScriptRunners;
  private readonly proxy: GuardedProxy;
  /** The guard in front of BROWSER_PROXY_URL (operator tasks with proxies: true), started on first use. */
  private readonly upstreamProxy: GuardedProxy | undefined;
  private upstreamProxyUrl: Promise<PoolProxy> | undefined;
  /** The folder of the proxies' Unix sockets, made when the first proxy starts. */
  private proxySockets: string | undefined;
  private readonly relay: BrowserRelay;
  private readonly box: ChromiumBox;
  private readonly running = new Set<Promise<void>>();
  private readonly stopping = new AbortController();
  private readonly policy: OutboundPolicy;
  private sweeper: NodeJS.Timeout | undefined;
  private readonly adblock: AdBlocker;
  /** The action cache's clock (epoch ms); tests replace it to expire entries without waiting days. */
  clock: () => number = Date.now;

  constructor(
    private readonly deps: {
      db: Knex;
      config: Config;
      log: Logger;
      events: EventsService;
      isolation: Isolation;
      /** The memory budget boxes share with code runners (TENANT_MEMORY_MB, src/containment/budget.ts). */
      budget?: MemoryBudget | undefined;
      /** Layers a test turned off (src/app.ts AppOptions.assumeBreach); none otherwise. */
      weakened?: BrowserWeakening | undefined;
    },
  ) {
    const { isolation, config } = deps;
    const weakened = deps.weakened ?? {};
    this.runners = new ScriptRunners({
      idleMs: config.browser.idleMs,
      tasksPerProcess: TASKS_PER_PROCESS,
      isolation,
      breach: weakened.runnerProcess === true,
    });
    const policy = new OutboundPolicy(
      parseOutboundAllowlist(deps.config.outboundAllowlist.join(',')),
      Object.values(deps.config.baseUrls),
    );
    this.policy = policy;
    this.adblock = new AdBlocker({ lists: deps.config.browser.adblockLists, dataDir: deps.config.dataDir });
    this.proxy = new GuardedProxy(policy);
    this.upstreamProxy = deps.config.browser.proxyUrl
      ? new GuardedProxy(policy, new URL(deps.config.browser.proxyUrl))
      : undefined;
    let proxy: Promise<PoolProxy> | undefined;
    const startProxy = () => (proxy ??= started(this.proxy, this.proxyDir()));
    const startUpstream = () => (this.upstreamProxyUrl ??= started(this.upstreamProxy!, this.proxyDir()));
    // Runners without a network reach the relay by a socket bound into their view; others by loopback.
    const schemes = weakened.anyScheme !== true;
    this.relay = new BrowserRelay({
      proxyUrl: async () => (await startProxy()).url,
      transport: isolation.plan.bwrap ? 'unix' : 'tcp',
      refuseSchemes: schemes,
      filter: weakened.relayOpen !== true,
      limits: { pages: config.browser.maxPages, contexts: config.browser.maxOpenContexts },
      onLimit: (target, reason, kind) =>
        this.pool.stopBrowser(
          target,
          `had ${reason} (${kind === 'pages' ? 'BROWSER_MAX_PAGES' : 'BROWSER_MAX_OPEN_CONTEXTS'})`,
        ),
      log: deps.log,
    });
    this.box = new ChromiumBox({
      executable: config.browser.executable,
      isolation,
      blockSchemes: schemes,
      diskBytes: config.browser.diskMb * MiB,
      log: deps.log,
    });
    this.pool = new BrowserPool({
      proxy: startProxy,
      // Operator tasks with proxies: true name the upstream proxy's guard: every box can reach it.
      extraProxies: async () => (this.upstreamProxy ? [await startUpstream()] : []),
      relay: this.relay,
      box: this.box,
      executable: config.browser.executable,
      limits: {
        memoryBytes: config.browser.memoryMb * MiB,
        diskBytes: config.browser.diskMb * MiB,
        taskCpuMs: config.browser.taskCpuMs,
      },
      maxContexts: config.browser.maxContexts,
      orgMaxContexts: config.browser.orgMaxContexts,
      idleMs: config.browser.idleMs,
      budget: deps.budget,
      log: deps.log,
    });
    deps.log.info({ chromium: this.box.level }, `browser: Chromium runs under ${this.box.describe()}`);
    if (weakened.runnerProcess)
      deps.log.warn('browser: breach assumed (tests only): script runners hand their own process to scripts');
    if (!schemes) deps.log.warn('browser: breach assumed (tests only): browser scripts may open any URL');
    if (weakened.relayOpen)
      deps.log.warn('browser: breach assumed (tests only): the relay forwards every call of browser scripts unchanged');
  }

  /**
   * The proxies also listen on Unix sockets in one private folder (0755: each box's user may pass
   * it), bound into every browser box, which has no network of its own to reach them by.
   */
  private proxyDir(): string {
    if (!this.proxySockets) {
      this.proxySockets = mkdtempSync(path.join(os.tmpdir(), 'sy-proxy-'));
      chmodSync(this.proxySockets, 0o755);
    }
    return this.proxySockets;
  }

  start(): void {
    let lastPrune = 0;
    const sweep = () => {
      const now = Date.now();
      expireStale(this.deps.db, new Date(now - STALE_MS).toISOString()).catch((err: Error) =>
        this.deps.log.warn({ err: err.message }, 'browser: sweeping stale tasks failed'),
      );
      if (now - lastPrune < PRUNE_EVERY_MS) return;
      lastPrune = now;
      pruneFinished(this.deps.db, new Date(now - this.deps.config.runRetentionDays * 86_400_000).toISOString()).catch(
        (err: Error) => this.deps.log.warn({ err: err.message }, 'browser: pruning finished tasks failed'),
      );
      pruneExpired(this.deps.db, new Date(this.clock()).toISOString()).catch((err: Error) =>
        this.deps.log.warn({ err: err.message }, 'browser: pruning expired cache entries failed'),
      );
    };
    sweep();
    this.sweeper = setInterval(sweep, SWEEP_MS);
    this.sweeper.unref();
  }

  async stop(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    this.stopping.abort(new Error('The service is shutting down'));
    while (this.running.size > 0) await Promise.all([...this.running]);
    this.runners.close();
    await this.pool.close();
    this.box.close();
    await this.relay.close();
    await this.proxy.close();
    if (this.upstreamProxyUrl) await this.upstreamProxy?.close();
    if (this.proxySockets) rmSync(this.proxySockets, { recursive: true, force: true });
  }

  /** `playwright_run`: records the task and starts it; answers at once. */
  async startScript(orgId: string, args: ScriptArgs): Promise<Record<string, unknown>> {
    const why = this.pool.unavailable();
    if (why) throw new BrowserUnavailableError(why);
    const login = await this.login(orgId, args.useContextService);
    return this.launch(orgId, 'script', {
      buildId: args.buildId,
      collectionId: args.collectionId,
      body: (t) => this.runScript(orgId, t, args, login),
    });
  }

  /** `operator_run`: checks the model, fetches the files to upload, records the task and starts it; answers at once. */
  async startOperator(orgId: string, args: OperatorArgs): Promise<Record<string, unknown>> {
    const why = this.pool.unavailable();
    if (why) throw new BrowserUnavailableError(why);
    const plan = await planOperator(this.operatorDeps(), orgId, args);
    return this.launch(orgId, 'operator', {
      buildId: plan.buildId,
      collectionId: args.collectionId,
      body: (t) => this.runOperatorTask(orgId, t, plan),
    });
  }

  private async login(orgId: string, id: string | undefined): Promise<Login | undefined> {
    if (id === undefined) return undefined;
    const state = await loginState(this.deps.db, this.deps.config.secretKey, orgId, id);
    if (!state)
      throw new TaskError(
        `No saved login ${id} exists in this organisation (browser-automation_logins_list lists them).`,
      );
    return { id, state };
  }

  private operatorDeps(): OperatorDeps {
    return { db: this.deps.db, config: this.deps.config, policy: this.policy, now: () => this.clock() };
  }

  /**
   * Records a task RUNNING and runs `body` in the background: the heartbeat (progress message
   * and log so far), the task's time limit, its files saved in the collection, the log file,
   * and the end state. Answers the start response at once.
   */
  private async launch(
    orgId: string,
    kind: TaskKind,
    {
      buildId,
      collectionId,
      body,
    }: { buildId: string; collectionId: string | undefined; body: (t: RunningTask) => Promise<TaskOutcome> },
  ): Promise<Record<string, unknown>> {
    const sessionId = newId('ses');
    const collection = await this.collectionFor(orgId, collectionId, sessionId);
    const logFileName = `task-${sessionId}.log`;
    const deadline = Date.now() + this.deps.config.browser.taskTimeoutMs;
    await insertTask(this.deps.db, {
      id: sessionId,
      orgId,
      kind,
      buildId,
      collectionId: collection.id,
      logFileName,
      message: 'Task started.',
      deadlineAt: new Date(deadline).toISOString(),
    });
    // The task's span outlives the call that started it: it ends with the task.
    const task = withSpan('browser task', {}, (span) => {
      if (span.isRecording())
        span.setAttributes({
          'switchyard.org_id': orgId,
          'switchyard.browser.task_kind': kind,
          'switchyard.browser.session_id': sessionId,
        });
      return this.track(sessionId, collection, { logFileName, deadline, body });
    }).catch((err: Error) => this.deps.log.error({ err: err.message, sessionId }, 'browser: task bookkeeping failed'));
    this.running.add(task);
    void task.finally(() => this.running.delete(task));
    return {
      status: 'RUNNING',
      sessionId,
      collectionId: collection.id,
      buildId,
      logFileName,
      message: `Task started. Poll with ${CONTINUE_TOOL[kind]} every 3-5 seconds.`,
    };
  }

  /** A `..._run_continue` poll: the task as the store has it, a stale RUNNING task failed first. */
  async poll(orgId: string, kind: TaskKind, args: PollArgs): Promise<Record<string, unknown>> {
    let task = await this.task(orgId, kind, args);
    if (task.status === 'RUNNING') {
      const now = Date.now();
      if ((await expireStale(this.deps.db, new Date(now - STALE_MS).toISOString(), task.id)) > 0) {
        task = (await findTask(this.deps.db, orgId, task.id))!;
      }
    }
    const base = {
      status: task.status,
      sessionId: task.id,
      collectionId: task.collectionId,
      logFileName: task.logFileName,
      message: task.message,
    };
    if (task.status === 'RUNNING') return base;
    const files = task.files.map((f): FileEntry => ({
      url: signFileUrl(this.deps.config, f.fileId, BROWSER_FILE_URL_TTL_SECONDS),
      fileName: f.fileName,
      mimeType: f.mimeType,
      size: f.size,
      source: f.source,
    }));
    return { ...base, result: task.result ?? '', files, logContent: task.log };
  }

  private async task(orgId: string, kind: TaskKind, args: PollArgs): Promise<TaskRecord> {
    const task = await findTask(this.deps.db, orgId, args.sessionId);
    if (!task) throw new TaskError(`No browser session ${args.sessionId} exists in this organisation.`);
    if (task.kind !== kind)
      throw new TaskError(
        `Session ${args.sessionId} is ${task.kind === 'script' ? 'a playwright_run script' : 'an operator_run task'}; poll it with ${CONTINUE_TOOL[task.kind]}.`,
      );
    if (args.collectionId !== undefined && args.collectionId !== task.collectionId)
      throw new TaskError(
        `Session ${args.sessionId} writes to collection ${task.collectionId}, not ${args.collectionId}.`,
      );
    if (args.logFileName !== undefined && args.logFileName !== task.logFileName)
      throw new TaskError(`The log file of session ${args.sessionId} is ${task.logFileName}, not ${args.logFileName}.`);
    return task;
  }

  private async collectionFor(
    orgId: string,
    collectionId: string | undefined,
    sessionId: string,
  ): Promise<CollectionRecord> {
    if (collectionId === undefined) {
      return createCollection(this.deps.db, orgId, {
        name: `Browser task ${sessionId}`,
        description: 'Files and log of a browser task (browser-automation).',
        type: 'filestore',
      });
    }
    const c = await this.deps.events.collection(orgId, collectionId);
    if (!c) throw new TaskError(`No collection ${collectionId} exists in this organisation.`);
    if (!holdsFiles(c.type))
      throw new TaskError(
        `Collection ${collectionId} is a ${c.type.replace('_', ' ')}; browser task files need a filestore or a knowledge base.`,
      );
    return c;
  }

  private async track(
    id: string,
    collection: CollectionRecord,
    {
      logFileName,
      deadline,
      body,
    }: { logFileName: string; deadline: number; body: (t: RunningTask) => Promise<TaskOutcome> },
  ): Promise<void> {
    const startedAt = Date.now();
    const lines: string[] = [];
    const state = { message: 'Waiting for a browser.' };
    const beat = setInterval(() => {
      touchTask(this.deps.db, id, { message: state.message, log: lines.join('\n') }).catch((err: Error) =>
        this.deps.log.warn({ err: err.message, sessionId: id }, 'browser: heartbeat failed'),
      );
    }, HEARTBEAT_MS);
    beat.unref();
    const limit = AbortSignal.any([this.stopping.signal, AbortSignal.timeout(Math.max(1, deadline - Date.now()))]);
    const log = (line: string) => {
      if (lines.length < SCRIPT_LIMITS.logLines)
        lines.push(`${stamp(startedAt)} ${line}`.slice(0, SCRIPT_LIMITS.lineChars));
    };
    let outcome: TaskOutcome;
    try {
      outcome = await body({ id, startedAt, deadline, limit, log, lines, status: (m) => (state.message = m) });
    } catch (err) {
      const e = err as Error & { files?: ScriptFile[] };
      outcome = {
        ok: false,
        files: e.files ?? [],
        result:
          err instanceof BrowserUnavailableError
            ? err.message
            : limit.aborted && !this.stopping.signal.aborted
              ? `The task did not finish within its time limit (${Math.round(this.deps.config.browser.taskTimeoutMs / 1000)} s, BROWSER_TASK_TIMEOUT_MS).`
              : this.stopping.signal.aborted
                ? 'The task was stopped before it finished (the service is shutting down).'
                : `The task failed: ${e.message.split('\n')[0]}`,
      };
    }
    const files: TaskFile[] = [];
    for (const f of outcome.files) {
      try {
        const saved = await addFile(this.deps.events.deps, collection, {
          filename: f.fileName,
          mimeType: await mimeTypeOf(f),
          data: f.data,
        });
        files.push({
          fileId: saved.id,
          fileName: saved.filename,
          mimeType: saved.mimeType,
          size: saved.fileSize,
          source: f.source,
        });
      } catch (err) {
        log(`file not saved: ${f.fileName}: ${(err as Error).message}`);
      }
    }
    log(`task ${outcome.ok ? 'completed' : 'failed'}`);
    clearInterval(beat);
    const text = lines.join('\n');
    try {
      await addFile(this.deps.events.deps, collection, {
        filename: logFileName,
        mimeType: 'text/plain',
        data: Buffer.from(text, 'utf8'),
      });
    } catch (err) {
      this.deps.log.warn({ err: (err as Error).message, sessionId: id }, 'browser: saving the task log file failed');
    }
    const message = outcome.message ?? (outcome.ok ? 'Task completed.' : 'Task failed.');
    browserTasks
      .labels(outcome.ok ? 'completed' : limit.aborted && !this.stopping.signal.aborted ? 'timeout' : 'failed')
      .inc();
    await finishTask(this.deps.db, id, {
      status: outcome.ok ? 'completed' : 'failed',
      message,
      result: outcome.result,
      files,
      log: text,
    });
  }

  /** Runs `body` with a browser slot of the organisation; a task that gets none fails saying why. */
  private async withBrowser(
    orgId: string,
    t: RunningTask,
    body: (lease: Lease) => Promise<TaskOutcome>,
  ): Promise<TaskOutcome> {
    let lease: Lease;
    try {
      lease = await this.pool.acquire(orgId, t.limit);
    } catch (err) {
      if (err instanceof BrowserUnavailableError || this.stopping.signal.aborted) throw err;
      const limitS = Math.round(this.deps.config.browser.taskTimeoutMs / 1000);
      const why =
        err instanceof BrowserNoRoomError
          ? `No browser became free within the task's time limit (${limitS} s): ${err.message}.`
          : t.limit.aborted
            ? `No browser became free within the task's time limit (${limitS} s).`
            : `The task could not start a browser: ${(err as Error).message}`;
      return { ok: false, result: why, files: [] };
    }
    try {
      t.log('browser ready');
      const outcome = await body(lease).catch((err: Error & { files?: ScriptFile[] }) => {
        if (lease.stopped() === undefined) throw err;
        return { ok: false, result: '', files: err.files ?? [] };
      });
      const stopped = lease.stopped();
      if (stopped === undefined) return outcome;
      // The pool stopped the browser over a limit: that, not the broken connection, is why the task failed.
      t.log(`the browser was stopped: it ${stopped}`);
      return { ok: false, result: `The task's browser was stopped: it ${stopped}.`, files: outcome.files };
    } finally {
      lease.release();
    }
  }

  private runScript(orgId: string, t: RunningTask, args: ScriptArgs, login: Login | undefined): Promise<TaskOutcome> {
    t.log(`playwright_run started (build ${args.buildId})`);
    if (login) t.log(`starting from saved login ${login.id} (${login.state.cookies.length} cookies)`);
    return this.withBrowser(orgId, t, (lease) => {
      t.status('Script running.');
      // The runner writes its own stamped lines (its clock is the task's start).
      return this.runners.run(orgId, {
        wsEndpoint: lease.wsEndpoint,
        relaySocketDir: lease.relaySocketDir,
        proxyUrl: lease.proxyUrl,
        code: args.code,
        signal: this.stopping.signal,
        viewport: {
          width: args.viewportWidth ?? DEFAULT_VIEWPORT.width,
          height: args.viewportHeight ?? DEFAULT_VIEWPORT.height,
        },
        timeoutMs: Math.max(1, t.deadline - Date.now()),
        taskLimitMs: this.deps.config.browser.taskTimeoutMs,
        startedAt: t.startedAt,
        onLog: (line) => t.lines.push(line),
        storageState: login?.state,
      });
    });
  }

  private runOperatorTask(orgId: string, t: RunningTask, plan: OperatorPlan): Promise<TaskOutcome> {
    for (const line of plan.notes) t.log(line);
    return this.withBrowser(orgId, t, (lease) =>
      executeOperator(this.operatorDeps(), lease, plan, {
        t,
        adblock: () => this.adblock.get(),
        upstreamProxy: async () =>
          (await (this.upstreamProxyUrl ??= started(this.upstreamProxy!, this.proxyDir()))).url,
      }),
    );
  }
}
