/**
 * Composition root: builds the services, the run workers and the HTTP app from
 * configuration. No business logic lives here.
 */
import { readFileSync } from 'node:fs';
import type { Config } from './config/index.js';
import type { Logger } from './config/logger.js';
import { openStore, migrate, type Knex } from './storage/db.js';
import { connectRedis } from './storage/redis.js';
import { createTokenService, createClientAuthLimiter, ApiKeyVerifier, newestOrganizationIds } from './auth/index.js';
import { authHandlers } from './auth/handlers/index.js';
import { SandboxPool } from './engine/index.js';
import { workflowHandlers } from './engine/handlers/index.js';
import { CallTargets } from './triggers/index.js';
import { triggerHandlers, triggerCallHandlers, runPollingHandlers } from './triggers/handlers/index.js';
import { connectionHandlers } from './connections/handlers/index.js';
import { createGateway, toolCaller, type EmbeddedMount, type GatewayCatalog } from './gateway/index.js';
import { createMcpServer } from './servers/mcp/index.js';
import { createGatewayServer } from './servers/gateway/index.js';
import {
  createDiscoveryEngine,
  createDiscoveryMemory,
  createSidekickServer,
  type DiscoveryMemory,
} from './servers/sidekick/index.js';
import { createAgentManagementServer, type AgentManagementDeps } from './servers/agent-management/index.js';
import { createBrowserAutomationServer, type BrowserAutomationDeps } from './servers/browser-automation/index.js';
import { appServerHandlers, gatewayHandlers } from './gateway/handlers/index.js';
import {
  createSignals,
  drainSyncWaits,
  GroupCommitter,
  RunWorkers,
  InProcessRunQueue,
  RedisRunQueue,
} from './runs/index.js';
import { runHandlers, runListHandlers } from './runs/handlers/index.js';
import { AgentService, agentInvoker, failAbandonedTurns, createChatOrder } from './agents/index.js';
import { agentHandlers, channelHandlers, chatHandlers, sendChannelMessage } from './agents/handlers/index.js';
import { EventsService, eventCalls, threadPoster } from './events/index.js';
import { resourceHandlers, collectionHandlers } from './events/handlers/index.js';
import { openBlobStore } from './kernel/blobs.js';
import { WriteQueue } from './storage/write-queue.js';
import { QueuesService } from './queues/index.js';
import { queueManagementHandlers, queueBatchHandlers } from './queues/handlers/index.js';
import { BrowserService } from './browser/index.js';
import { browserLoginHandlers } from './browser/handlers/index.js';
import { createHttpApp, type HttpApp } from './http/pipeline.js';
import { CONSOLE_PREFIX, consoleListener } from './console/index.js';
import { OutboundPolicy, orgFetches, parseOutboundAllowlist } from './kernel/outbound.js';
import { getHealth, getReadiness } from './health/handlers/index.js';
import { MemoryBudget, probeIsolation, type Isolation } from './containment/index.js';
import { stopTracing } from './observability/index.js';
import type { ResponseValidator } from './http/response-validator.js';
import type { HandlerMap, Services } from './services.js';

export interface Runtime {
  services: Services;
  workers: RunWorkers;
  /**
   * Shutdown, first part: /readyz answers 503 (`services.draining`), the run workers take no more
   * runs and give back the ones they claimed but did not start; resolves once the runs executing
   * here have finished, and then, without Redis, ends the synchronous waits still under way.
   * `close` then releases everything else.
   */
  drain(): Promise<void>;
  close(): Promise<void>;
}

export interface App extends Runtime {
  http: HttpApp;
  responseValidator: ResponseValidator | undefined;
}

export interface AppOptions {
  /** An already-open store (tests); otherwise one is opened from config and closed with the app. */
  db?: Knex;
  /**
   * Layers of containment turned off on purpose, so tests can show what the other layers hold on
   * their own (README.md "Security model"). Only test code passes it: the entry points (main.ts,
   * worker.ts, embed.ts) never do, and no setting or environment variable reaches it.
   */
  assumeBreach?: AssumedBreach;
  /**
   * Check every response against the OpenAPI bundle (DESIGN.md section 2): a response that breaks
   * it is recorded in `App.responseValidator.failures` and answered with 500. Tests turn it on.
   */
  validateResponses?: boolean;
}

/** What a test assumes broken (AppOptions.assumeBreach); every layer holds unless named here. */
export interface AssumedBreach {
  /**
   * The language layer: code step runners and browser script runners hand their own `process` to
   * the tenant code they run, as if isolated-vm or the vm boundary had failed.
   */
  runnerProcess?: boolean;
  /** Browser scripts may open any URL: the relay refuses no scheme and Chromium gets no URL blocklist. */
  anyScheme?: boolean;
  /**
   * The relay between browser scripts and their browser forwards every message unchanged (no
   * allow-list, no parameter refusals or rewrites, no scheme refusal); it still counts pages and contexts.
   */
  relayOpen?: boolean;
}

export function allHandlers(): HandlerMap {
  return {
    ...authHandlers,
    ...workflowHandlers,
    ...triggerHandlers,
    ...triggerCallHandlers,
    ...runPollingHandlers,
    ...runHandlers,
    ...runListHandlers,
    ...connectionHandlers,
    ...appServerHandlers,
    ...agentHandlers,
    ...channelHandlers,
    ...chatHandlers,
    ...resourceHandlers,
    ...collectionHandlers,
    ...browserLoginHandlers,
    ...queueManagementHandlers,
    ...queueBatchHandlers,
    ...gatewayHandlers,
    sendChannelMessage,
    getHealth,
    getReadiness,
  } satisfies HandlerMap;
}

/** Services and run workers, without HTTP (`npm run worker` uses this alone). */
export async function createRuntime(config: Config, log: Logger, opts: AppOptions = {}): Promise<Runtime> {
  const ownsDb = !opts.db;
  const db =
    opts.db ??
    openStore({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      sqliteSynchronous: config.sqliteSynchronous,
    });
  await migrate(db);
  const isolation = await probeIsolation({ mode: config.codeIsolation });
  logIsolation(log, isolation);
  const tokens = await createTokenService({ db, config, log });
  const redis = config.redisUrl ? await connectRedis(config.redisUrl, log) : undefined;
  const signals = await createSignals(redis, log, config.redisPrefix);
  const queue = config.redisUrl
    ? new RedisRunQueue(config.redisUrl, {
        isWorker: config.runConcurrency > 0,
        prefix: config.redisPrefix,
        closeTimeoutMs: config.shutdownGraceMs,
      })
    : new InProcessRunQueue(Math.max(250, Math.floor(config.runLeaseMs / 2)));
  const blobs = openBlobStore(config);
  // Discovery's learning and ranking first: the gateway's router tells the learning of tool calls.
  const discovery = createDiscoveryMemory({ config, log, db, redis });
  // The catalogue, router and pool; the embedded servers are mounted once the agents and the
  // browser they use exist (below), which completes the gateway the services hold.
  const gatewayParts = createGateway({ config, log, db, ...discovery });
  const apiKeys = new ApiKeyVerifier(db, config.revocationCacheMs, log);
  const runWriter = new GroupCommitter(WriteQueue.for(db));
  const callTargets = new CallTargets(db, config.revocationCacheMs);
  // Event calls are delivered where runs are executed, on a delivery thread off the event loop that
  // serves requests; an HTTP-only process (RUN_CONCURRENCY=0) only records them.
  const delivers = config.runConcurrency > 0;
  const queues = new QueuesService({
    db,
    config,
    log,
    blobs,
    signals,
    callTargets,
    runQueue: queue,
    active: delivers,
  });
  const events = new EventsService({
    db,
    config,
    log,
    blobs,
    redis,
    ...eventCalls(config),
    deliver: delivers,
    delivery: delivers ? threadPoster(config) : undefined,
  });
  // One memory budget for every process that runs tenant code: code runners and browser boxes.
  const budget = new MemoryBudget(config.tenantMemoryMb * 1024 * 1024);
  const browser = new BrowserService({ db, config, log, events, isolation, budget, weakened: opts.assumeBreach });
  const chatOrder = createChatOrder(redis, { prefix: `${config.redisPrefix}:`, log });
  // With Redis, hears of the addresses blocked by every process (loaded once here) before serving.
  const clientAuthLimiter = createClientAuthLimiter({ config, redis, log });
  await clientAuthLimiter.start();
  const agents = new AgentService({ db, config, log, blobs, gateway: gatewayParts }, chatOrder);
  const gateway = gatewayParts.mount(
    embeddedServers({ catalog: gatewayParts.catalog, discovery, agents, browser, db }),
  );
  const services: Services = {
    config,
    db,
    log,
    isolation: isolation.report,
    draining: false,
    tokens,
    clientAuthLimiter,
    redis,
    apiKeys,
    blobs,
    signals,
    queue,
    runWriter,
    callTargets,
    gateway,
    agents,
    events,
    queues,
    browser,
  };
  // Turns left RUNNING by a process that died can never finish: mark them failed (never stuck).
  await failAbandonedTurns(db, config.agentTurnTimeoutMs);
  const sandbox = new SandboxPool({
    isolation,
    budget,
    size: config.sandboxPoolSize,
    reuseContexts: config.sandboxReuseContexts,
    maxExecutionsPerProcess: config.sandboxMaxExecutions,
    breach: opts.assumeBreach?.runnerProcess ? 'process' : 'off',
    log,
  });
  // The sandbox's spare runners start with the first code step (about 50 ms, once), not here: an
  // idle service holds no runner process (README "Running in production", idle memory).
  // Workflow `http` steps go through the same outbound policy as event calls; the service's own
  // URLs are always reachable. Each organisation's steps keep their connections apart.
  const stepFetches = orgFetches(
    new OutboundPolicy(parseOutboundAllowlist(config.outboundAllowlist.join(',')), Object.values(config.baseUrls)),
  );
  const workers = new RunWorkers({
    db,
    config,
    log,
    queue,
    sandbox,
    blobs,
    signals,
    fetchFor: stepFetches.of,
    callTool: toolCaller(services),
    invokeAgent: agentInvoker(services),
  });
  await workers.start();
  services.adoptRun = (orgId) => workers.adopt(orgId);
  services.events.start();
  services.queues.start();
  services.browser.start();
  return {
    services,
    workers,
    async drain() {
      // The waits for runs of other processes end in time for the rest of the shutdown (SHUTDOWN_GRACE_MS).
      const deadline = Date.now() + config.shutdownGraceMs - Math.min(5_000, config.shutdownGraceMs / 5);
      services.draining = true;
      await workers.drain();
      // Without Redis no other process executes or signals this process's runs: synchronous
      // callers still waiting get the timeout answer now (their runs execute after a restart).
      // With Redis, those whose runs no other process has picked up get it too (drain-waits.ts).
      if (!redis) signals.endWaits();
      else await drainSyncWaits({ db, signals }, { deadline });
    },
    async close() {
      await services.browser.stop();
      await services.queues.stop();
      await services.events.stop();
      await workers.close();
      stepFetches.close();
      await chatOrder.close();
      await gateway.close();
      await sandbox.close();
      await signals.close();
      await tokens.close();
      await clientAuthLimiter.close();
      if (redis) await redis.close();
      if (ownsDb) await db.destroy();
      // The spans of the work just finished are exported before the process ends.
      await stopTracing();
    },
  };
}

interface EmbeddedParts {
  catalog: GatewayCatalog;
  discovery: DiscoveryMemory;
  agents: AgentManagementDeps['agents'];
  browser: BrowserAutomationDeps['browser'];
  db: Knex;
}

/** The five embedded servers (src/servers/*) and discovery's pre-warm, for `Gateway.mount`. */
function embeddedServers(parts: EmbeddedParts): EmbeddedMount {
  const { catalog, discovery, agents, browser, db } = parts;
  const engine = createDiscoveryEngine(catalog, discovery);
  return {
    servers: [
      createMcpServer(catalog),
      createSidekickServer(catalog, { engine }),
      createGatewayServer(engine, catalog, discovery.usage),
      createAgentManagementServer({ catalog, agents }),
      createBrowserAutomationServer({ browser }),
    ],
    discovery: engine,
    newestOrgs: (limit) => newestOrganizationIds(db, limit),
  };
}

/** The isolation in force, once at start; what `auto` could not use is one warning (src/containment/README.md). */
function logIsolation(log: Logger, isolation: Isolation): void {
  const { report } = isolation;
  log.info({ isolation: report }, `code isolation: ${report.level} (CODE_ISOLATION=${report.mode})`);
  if (report.mode === 'process') {
    log.warn(
      'CODE_ISOLATION=process: tenant code is contained by isolated-vm and per-organisation runner processes only, without the operating-system layer; use it for single-organisation installs',
    );
  } else if (report.missing.length > 0) {
    log.warn(
      { missing: report.missing },
      `code isolation: not every layer is available here: ${report.missing.join('; ')}`,
    );
  }
}

export async function createApp(config: Config, log: Logger, opts: AppOptions = {}): Promise<App> {
  const runtime = await createRuntime(config, log, opts);
  const responseValidator = opts.validateResponses
    ? await (
        await import('./http/response-validator.js')
      ).ResponseValidator.create(
        JSON.parse(readFileSync(new URL('../generated/openapi/switchyard.json', import.meta.url), 'utf8')) as Record<
          string,
          unknown
        >,
      )
    : undefined;
  const http = createHttpApp({
    services: runtime.services,
    handlers: allHandlers(),
    responseValidator,
    mounts: [{ prefix: CONSOLE_PREFIX, listener: consoleListener(log) }],
  });
  // Discovery indexes are built now, in the background, rather than by the first request.
  void runtime.services.gateway.prewarm(runtime.services);
  return { ...runtime, http, responseValidator };
}
