/**
 * Composition root: builds the services and the HTTP app from configuration. No business
 * logic lives here (DESIGN.md section 3).
 */
import type { Express } from 'express';
import { readFileSync } from 'node:fs';
import type { Config } from './config/index.js';
import type { Logger } from './config/logger.js';
import { openStore, migrate, type Knex } from './storage/db.js';
import { connectRedis } from './storage/redis.js';
import { createTokenService, authHandlers } from './auth/index.js';
import { workflowHandlers } from './engine/index.js';
import { triggerHandlers } from './triggers/index.js';
import { connectionHandlers } from './connections/index.js';
import { appServerHandlers } from './gateway/index.js';
import { createHttpApp } from './http/pipeline.js';
import { pendingHandlers } from './http/pending.js';
import { getHealth, getReadiness } from './http/handlers/health.js';
import { ResponseValidator } from './http/response-validator.js';
import type { HandlerMap, Services } from './http/types.js';

export interface App {
  services: Services;
  http: Express;
  responseValidator: ResponseValidator | undefined;
  close(): Promise<void>;
}

export interface AppOptions {
  /** An already-open store (tests); otherwise one is opened from config and closed with the app. */
  db?: Knex;
}

export function allHandlers(): HandlerMap {
  return {
    ...pendingHandlers(),
    ...authHandlers,
    ...workflowHandlers,
    ...triggerHandlers,
    ...connectionHandlers,
    ...appServerHandlers,
    getHealth,
    getReadiness,
  } satisfies HandlerMap;
}

export async function createApp(config: Config, log: Logger, opts: AppOptions = {}): Promise<App> {
  const ownsDb = !opts.db;
  const db = opts.db ?? openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  await migrate(db);
  const tokens = await createTokenService({ db, config, log });
  const redis = config.redisUrl ? await connectRedis(config.redisUrl, log) : undefined;
  const services: Services = { config, db, log, tokens, redis };
  const responseValidator = config.validateResponses
    ? await ResponseValidator.create(JSON.parse(readFileSync(new URL('../generated/openapi/switchyard.json', import.meta.url), 'utf8')) as Record<string, unknown>)
    : undefined;
  const http = createHttpApp({ services, handlers: allHandlers(), responseValidator });
  return {
    services,
    http,
    responseValidator,
    async close() {
      await tokens.close();
      if (redis) await redis.close();
      if (ownsDb) await db.destroy();
    },
  };
}
