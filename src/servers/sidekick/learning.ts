/**
 * Discovery's learning from use and semantic ranking as configured (DISCOVERY_LEARNING,
 * EMBEDDINGS_URL): built by the composition root before the gateway, which tells the learning of
 * every routed tool call and keeps both for /readyz and close.
 */
import type { Knex } from 'knex';
import type { Config } from '../../config/index.js';
import type { Logger } from '../../config/logger.js';
import type { RedisClient } from '../../storage/redis.js';
import { EmbeddingsProvider } from './embeddings.js';
import { Semantic } from './semantic.js';
import { UsageMemory } from './usage.js';
import { RedisPending } from './usage-pending.js';

export interface DiscoveryMemoryOptions {
  config: Pick<Config, 'discovery' | 'embeddingsApiKey' | 'redisPrefix'>;
  log: Logger;
  /** Keeps discovery's embeddings; without it they live in this process only. */
  db?: Knex | undefined;
  /** Shares discovery's pending discovers between the service's processes (learning from use). */
  redis?: RedisClient | undefined;
}

export interface DiscoveryMemory {
  /** Absent with DISCOVERY_LEARNING=false: nothing recorded, nothing learned used. */
  usage: UsageMemory | undefined;
  /** Absent without EMBEDDINGS_URL. */
  semantic: Semantic | undefined;
}

export function createDiscoveryMemory(opts: DiscoveryMemoryOptions): DiscoveryMemory {
  const { config, log, db, redis } = opts;
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
  return { usage, semantic };
}
