/**
 * The composition type: everything a handler may use, built once by the composition root
 * (src/app.ts). It lives here, beside app.ts, so that http/ stays free of the contexts: the
 * pipeline is generic over `PipelineServices`, and the handler types below bind it to these.
 */
import type { Knex } from 'knex';
import type { Config } from './config/index.js';
import type { Logger } from './config/logger.js';
import type { ApiKeyVerifier, ClientAuthLimiter, TokenService } from './auth/index.js';
import type { RedisClient } from './storage/redis.js';
import type { BlobStore } from './kernel/blobs.js';
import type { Signals, GroupCommitter, RunAdoption, RunQueue } from './runs/index.js';
import type { QueuesService } from './queues/index.js';
import type { CallTargets } from './triggers/index.js';
import type { Gateway } from './gateway/index.js';
import type { Semantic, UsageMemory } from './servers/sidekick/index.js';
import type { AgentService } from './agents/index.js';
import type { EventsService } from './events/index.js';
import type { BrowserService } from './browser/index.js';
import type { IsolationReport } from './containment/index.js';
import type * as Http from './http/types.js';

export type { HandlerRequest, Reply, OperationId } from './http/types.js';

export interface Services extends Http.PipelineServices {
  config: Config;
  db: Knex;
  log: Logger;
  /** The code isolation in force (src/containment): reported by /readyz. */
  isolation: IsolationReport;
  /** The process is shutting down (src/main.ts, src/worker.ts): /readyz answers 503. */
  draining: boolean;
  tokens: TokenService;
  /** Failed client authentications at the token endpoints, per address and client (src/auth/client-auth-limits.ts). */
  clientAuthLimiter: ClientAuthLimiter;
  /** Present when REDIS_URL is set (scale-out queue, signals and rate windows use it). */
  redis?: RedisClient | undefined;
  /** Trigger API keys, verified with a short per-process memo (src/auth/api-keys.ts). */
  apiKeys: ApiKeyVerifier;
  blobs: BlobStore;
  signals: Signals;
  queue: RunQueue;
  /** Group commit of new runs (src/runs/group-commit.ts). */
  runWriter: GroupCommitter;
  /** A new run handed straight to an idle run consumer of this process, when one is (RunWorkers.adopt). */
  adoptRun?: ((orgId: string) => RunAdoption | undefined) | undefined;
  /** Trigger call targets, memoised per process (src/triggers/target.ts). */
  callTargets: CallTargets;
  /** The tool gateway: catalogue, router, upstream pool (src/gateway). */
  gateway: Gateway<UsageMemory, Semantic>;
  /** Agent turns for the channel, agent_invoke and workflow agent steps (src/agents). */
  agents: AgentService;
  /** Collections, items, files and their event calls (src/events). */
  events: EventsService;
  /** Queues, CSV batches, their loader and dispatcher (src/queues). */
  queues: QueuesService;
  /** Browser tasks: the Chromium pool and the script runner (src/browser). */
  browser: BrowserService;
}

export type RequestContext<K extends Http.OperationId = Http.OperationId> = Http.RequestContext<K, Services>;
export type Handler<K extends Http.OperationId> = Http.Handler<K, Services>;
export type HandlerMap = Http.HandlerMap<Services>;
export type BeforeBody = Http.BeforeBody<Services>;
export type ServesPath = Http.ServesPath;
export type PartialHandlerMap = Http.PartialHandlerMap<Services>;
