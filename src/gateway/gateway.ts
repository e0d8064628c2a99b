/**
 * The gateway assembled: upstream pool, catalogue (embedded + application servers), router.
 * Built once per process by the composition root.
 */
import type { Knex } from 'knex';
import type { Config } from '../config/index.js';
import type { Logger } from '../config/logger.js';
import type { RedisClient } from '../storage/redis.js';
import { OutboundPolicy, parseOutboundAllowlist } from '../kernel/outbound.js';
import { watchTables } from '../storage/changes.js';
import { newestOrganizationIds } from '../auth/index.js';
import { GatewayCatalog } from './catalog.js';
import { GatewayRouter } from './router.js';
import type { GatewayServices } from './types.js';
import { UpstreamPool } from './upstream/index.js';
import { createMcpServer } from '../servers/mcp/index.js';
import { createGatewayServer } from '../servers/gateway/index.js';
import { performance } from 'node:perf_hooks';
import {
  createDiscoveryEngine,
  createSidekickServer,
  EmbeddingsProvider,
  RedisPending,
  Semantic,
  UsageMemory,
} from '../servers/sidekick/index.js';
import { createAgentManagementServer, type AgentManagementDeps } from '../servers/agent-management/index.js';
import { createBrowserAutomationServer, type BrowserAutomationDeps } from '../servers/browser-automation/index.js';

export interface Gateway {
  catalog: GatewayCatalog;
  router: GatewayRouter;
  pool: UpstreamPool;
  /** Discovery's learning from use (absent with DISCOVERY_LEARNING=false): told of agents' tool calls too. */
  usage?: UsageMemory | undefined;
  /** Discovery's semantic ranking (absent without EMBEDDINGS_URL): its provider's state is a /readyz detail. */
  semantic?: Semantic | undefined;
  /**
   * Builds the discovery indexes of up to PREWARM_ORGS organisations, newest first, one after
   * another in the background, so no request pays the first build; close() stops it.
   */
  prewarm(services: GatewayServices): Promise<void>;
  close(): Promise<void>;
}

/** Organisations whose discovery index is built at start (the engine keeps 500). */
const PREWARM_ORGS = 500;

export interface GatewayOptions {
  config: Config;
  log: Logger;
  /**
   * Keeps discovery's embeddings (without it they live in this process only), and is the store
   * whose changes (registrations, connections, collections) the catalogue and the connection
   * cache follow at once; without it they see changes within their TTL.
   */
  db?: Knex | undefined;
  /** Shares discovery's pending discovers between the service's processes (learning from use). */
  redis?: RedisClient | undefined;
  /** The agent turns agent-management starts and resets; without it those tools fail. */
  agents?: AgentManagementDeps['agents'] | undefined;
  /** The browser tasks browser-automation starts and polls; without it those tools fail. */
  browser?: BrowserAutomationDeps['browser'] | undefined;
}

/** A process without the part (a test of other servers) answers its tools with an internal error. */
function unavailable(part: string): () => never {
  return () => {
    throw new Error(`${part} are not available in this process`);
  };
}

export function createGateway(opts: GatewayOptions): Gateway {
  const { config, log, db, redis } = opts;
  // Upstreams pass the outbound policy of workflow `http` steps (src/app.ts): OUTBOUND_ALLOWLIST,
  // and the service's own origins always.
  const outbound = new OutboundPolicy(
    parseOutboundAllowlist(config.outboundAllowlist.join(',')),
    Object.values(config.baseUrls),
  );
  const pool = new UpstreamPool({
    outbound,
    log,
    timeoutMs: config.upstreamTimeoutMs,
    idleMs: config.upstreamIdleMs,
    connectionTtlMs: config.revocationCacheMs,
    listBudgetMs: config.upstreamListBudgetMs,
  });
  const catalog = new GatewayCatalog(pool, config.revocationCacheMs);
  // A change made in this process through the owners' write functions (registrations here,
  // connections, collections) is seen by the next call and discovery at once.
  if (db) {
    watchTables(db, ['app_servers', 'connections', 'collections'], catalog);
    watchTables(db, ['connections'], pool.connections);
  }
  // Learning from use (src/servers/sidekick/usage.ts): off → nothing recorded, nothing learned used.
  const usage = config.discovery.learning
    ? new UsageMemory({ shared: redis ? new RedisPending(redis, config.redisPrefix, log) : undefined })
    : undefined;
  const { embeddingsUrl, embeddingsModel, embeddingsBudgetMs } = config.discovery;
  const semantic = embeddingsUrl
    ? new Semantic(
        new EmbeddingsProvider({
          url: embeddingsUrl,
          model: embeddingsModel,
          apiKey: config.embeddingsApiKey,
          budgetMs: embeddingsBudgetMs,
          log,
        }),
        log,
        db,
      )
    : undefined;
  const engine = createDiscoveryEngine(catalog, { usage, semantic });
  const sidekick = createSidekickServer(catalog, { engine });
  const stopping = new AbortController();
  let warming: Promise<void> | undefined;
  catalog.registerEmbedded(createMcpServer(catalog));
  catalog.registerEmbedded(sidekick);
  catalog.registerEmbedded(createGatewayServer(engine, catalog, usage));
  catalog.registerEmbedded(createAgentManagementServer({ catalog, agents: opts.agents ?? unavailable('agent turns') }));
  catalog.registerEmbedded(createBrowserAutomationServer({ browser: opts.browser ?? unavailable('browser tasks') }));
  return {
    catalog,
    router: new GatewayRouter(log, usage),
    pool,
    usage,
    semantic,
    prewarm(services) {
      warming ??= (async () => {
        const started = performance.now();
        const ids = await newestOrganizationIds(services.db, PREWARM_ORGS);
        for (const id of ids) {
          if (stopping.signal.aborted) return;
          await engine.warm({ services, log, orgId: id, forwardedHeaders: {}, signal: stopping.signal });
        }
        log.info({ orgs: ids.length, ms: Math.round(performance.now() - started) }, 'discovery indexes pre-warmed');
      })().catch((err: unknown) => {
        if (!stopping.signal.aborted) log.warn({ err }, 'discovery pre-warm stopped; indexes are built on first use');
      });
      return warming;
    },
    close: async () => {
      stopping.abort();
      await warming;
      await usage?.settled();
      await pool.close();
    },
  };
}
