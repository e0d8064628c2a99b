/**
 * The gateway assembled: upstream pool, catalogue (embedded + application servers), router.
 * Built once per process by the composition root, in two steps the types order: `createGateway`
 * gives the catalogue, pool and router that agents and the embedded servers are built with; the
 * composition root then builds the embedded servers (src/servers/*) and hands them over with
 * `mount`, which gives the whole `Gateway`. The gateway imports no embedded server.
 */
import type { Knex } from 'knex';
import type { Config } from '../config/index.js';
import type { Logger } from '../config/logger.js';
import { OutboundPolicy, parseOutboundAllowlist } from '../kernel/outbound.js';
import { watchTables } from '../storage/changes.js';
import { GatewayCatalog } from './catalog.js';
import { GatewayRouter } from './router.js';
import type { GatewayContext, GatewayServices, ToolCallObserver, ToolServer } from './types.js';
import { UpstreamPool } from './upstream/index.js';
import { performance } from 'node:perf_hooks';

/** Discovery's learning from use, as the gateway holds it: told of tool calls, settled on close. */
export interface GatewayUsage extends ToolCallObserver {
  /** Resolves when every pending write of learned use is done. */
  settled(): Promise<void>;
}

/** The gateway before its embedded servers: what agents and the embedded servers are built with. */
export interface GatewayParts<U extends GatewayUsage = GatewayUsage, S = unknown> {
  catalog: GatewayCatalog;
  router: GatewayRouter;
  pool: UpstreamPool;
  /** Discovery's learning from use (absent with DISCOVERY_LEARNING=false): told of agents' tool calls too. */
  usage?: U | undefined;
  /** Discovery's semantic ranking (absent without EMBEDDINGS_URL): its provider's state is a /readyz detail. */
  semantic?: S | undefined;
}

export interface Gateway<U extends GatewayUsage = GatewayUsage, S = unknown> extends GatewayParts<U, S> {
  /**
   * Builds the discovery indexes of up to PREWARM_ORGS organisations, newest first, one after
   * another in the background, so no request pays the first build; close() stops it.
   */
  prewarm(services: GatewayServices): Promise<void>;
  close(): Promise<void>;
}

/** What the composition root hands the gateway once the parts the embedded servers use exist. */
export interface EmbeddedMount {
  /** The embedded servers every organisation sees (src/servers/*). */
  servers: ToolServer[];
  /** Discovery's index builder, used by the start-up pre-warm. */
  discovery: { warm(ctx: GatewayContext): Promise<void> };
  /** The organisations whose index the pre-warm builds, newest first, at most `limit`. */
  newestOrgs(limit: number): Promise<string[]>;
}

/** The gateway's parts and the one step that completes it. */
export interface UnmountedGateway<U extends GatewayUsage, S> extends GatewayParts<U, S> {
  /** Registers the embedded servers and gives the whole gateway; a second call throws. */
  mount(embedded: EmbeddedMount): Gateway<U, S>;
}

/** Organisations whose discovery index is built at start (the engine keeps 500). */
const PREWARM_ORGS = 500;

export interface GatewayOptions<U extends GatewayUsage = GatewayUsage, S = unknown> {
  config: Config;
  log: Logger;
  /**
   * The store whose changes (registrations, connections, collections) the catalogue and the
   * connection cache follow at once; without it they see changes within their TTL.
   */
  db?: Knex | undefined;
  /** Discovery's learning from use (src/servers/sidekick), told of every routed tool call. */
  usage?: U | undefined;
  /** Discovery's semantic ranking (src/servers/sidekick), kept for /readyz. */
  semantic?: S | undefined;
}

export function createGateway<U extends GatewayUsage = GatewayUsage, S = unknown>(
  opts: GatewayOptions<U, S>,
): UnmountedGateway<U, S> {
  const { config, log, db, usage, semantic } = opts;
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
  const parts = { catalog, router: new GatewayRouter(log, usage), pool, usage, semantic };
  let mounted = false;
  return {
    ...parts,
    mount(embedded) {
      if (mounted) throw new Error('the embedded servers are mounted once');
      mounted = true;
      for (const server of embedded.servers) catalog.registerEmbedded(server);
      const stopping = new AbortController();
      let warming: Promise<void> | undefined;
      return {
        ...parts,
        prewarm(services) {
          warming ??= (async () => {
            const started = performance.now();
            const ids = await embedded.newestOrgs(PREWARM_ORGS);
            for (const id of ids) {
              if (stopping.signal.aborted) return;
              await embedded.discovery.warm({
                services,
                log,
                orgId: id,
                forwardedHeaders: {},
                signal: stopping.signal,
              });
            }
            log.info({ orgs: ids.length, ms: Math.round(performance.now() - started) }, 'discovery indexes pre-warmed');
          })().catch((err: unknown) => {
            if (!stopping.signal.aborted)
              log.warn({ err }, 'discovery pre-warm stopped; indexes are built on first use');
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
    },
  };
}
