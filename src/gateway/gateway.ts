/**
 * The gateway assembled: upstream pool, catalogue (embedded + application servers), router.
 * Built once per process by the composition root.
 */
import type { Config } from '../config/index.js';
import type { Logger } from '../config/logger.js';
import { GatewayCatalog } from './catalog.js';
import { GatewayRouter } from './router.js';
import { UpstreamPool } from './upstream/index.js';
import { createMcpServer } from '../servers/mcp/index.js';
import { createGatewayServer } from '../servers/gateway/index.js';
import { createSidekickServer } from '../servers/sidekick/index.js';
import { createAgentManagementServer } from '../servers/agent-management/index.js';
import { createBrowserAutomationServer } from '../servers/browser-automation/index.js';

export interface Gateway {
  catalog: GatewayCatalog;
  router: GatewayRouter;
  pool: UpstreamPool;
  /** After a connection change in this process: discovery and PCID checks see it at once. */
  forgetConnections(orgId: string): void;
  close(): Promise<void>;
}

export function createGateway(config: Config, log: Logger): Gateway {
  const pool = new UpstreamPool({ log, timeoutMs: config.upstreamTimeoutMs, idleMs: config.upstreamIdleMs, connectionTtlMs: config.revocationCacheMs, listBudgetMs: config.upstreamListBudgetMs });
  const catalog = new GatewayCatalog(pool, config.revocationCacheMs);
  const sidekick = createSidekickServer(catalog);
  catalog.registerEmbedded(createMcpServer(catalog));
  catalog.registerEmbedded(sidekick);
  catalog.registerEmbedded(createGatewayServer(sidekick, catalog));
  catalog.registerEmbedded(createAgentManagementServer());
  catalog.registerEmbedded(createBrowserAutomationServer());
  return {
    catalog,
    router: new GatewayRouter(log),
    pool,
    forgetConnections(orgId) {
      catalog.forgetOrg(orgId);
      pool.connections.forgetOrg(orgId);
    },
    close: () => pool.close(),
  };
}
