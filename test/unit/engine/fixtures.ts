/**
 * Shared fixtures of the management tests (engine, triggers, connections, gateway): seeded
 * organisations, definitions, a handler context, error capture and OpenAPI reply checks.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { expect } from 'chai';
import type { Knex } from 'knex';
import { readFileSync } from 'node:fs';
import YAML from 'yaml';
import type { Services } from '../../../src/services.js';
import { CallTargets } from '../../../src/triggers/index.js';
import { createGateway, type Gateway } from '../../../src/gateway/index.js';
import { createMcpServer } from '../../../src/servers/mcp/index.js';
import { createGatewayServer } from '../../../src/servers/gateway/index.js';
import {
  createDiscoveryEngine,
  createSidekickServer,
  type Semantic,
  type UsageMemory,
} from '../../../src/servers/sidekick/index.js';
import type { Config } from '../../../src/config/index.js';
import { createLogger } from '../../../src/config/logger.js';
import { AppError } from '../../../src/errors/index.js';
import { ResponseValidator } from '../../../src/http/response-validator.js';
import type { WorkflowDefinition } from '../../../src/engine/index.js';
import type { AuthContext, TokenService } from '../../../src/auth/index.js';
import type { Handler, HandlerRequest, OperationId, Reply, RequestContext } from '../../../src/services.js';

export const ORG_A = 'org_a';
export const ORG_B = 'org_b';

/** Organisations are owned by the auth context; tests insert the rows directly. */
export async function seedOrgs(db: Knex, ...ids: string[]): Promise<void> {
  const list = ids.length ? ids : [ORG_A, ORG_B];
  await db('organizations').insert(list.map((id) => ({ id, name: `Org ${id}`, created_at: new Date().toISOString() })));
}

export function codeStep(name: string, code = `return '${name}';`): Record<string, unknown> {
  return { type: 'code', name, code };
}

export function definition(steps = 2, extra: Partial<WorkflowDefinition> = {}): WorkflowDefinition {
  return {
    name: 'Greeting report',
    steps: Array.from({ length: steps }, (_, i) => codeStep(`step ${i}`)) as WorkflowDefinition['steps'],
    ...extra,
  };
}

export function testConfig(): Config {
  return {
    port: 0,
    host: '127.0.0.1',
    dataDir: '/tmp',
    databaseUrl: null,
    redisUrl: null,
    publicUrl: 'http://localhost:8080',
    redisPrefix: 'switchyard',
    baseUrls: {
      triggers: 'http://triggers.test',
      auth: 'http://auth.test',
      mcp: 'http://mcp.test/mcp',
      connect: 'http://connect.test',
      runFiles: 'http://files.test',
    },
    secretKey: randomBytes(32),
    logLevel: 'silent',
    tokenTtlSeconds: 3600,
    revocationCacheMs: 0,
    signingKeyMaxAgeDays: 30,
    tokenAudience: 'switchyard',
    adminOrgIds: [],
    tokenFailureLimits: { windowMs: 60_000, perClient: 10, perAddress: 30, trackedKeys: 50_000 },
    seedDemo: false,
    syncWaitMs: 1000,
    runTimeoutMs: 60_000,
    runConcurrency: 0,
    runOrgConcurrency: 1,
    runLeaseMs: 30_000,
    runMaxAttempts: 2,
    runRetentionDays: 30,
    sandboxPoolSize: 1,
    sandboxReuseContexts: true,
    sandboxMaxExecutions: 10_000,
    tenantMemoryMb: 4096,
    codeIsolation: 'auto',
    browser: {
      executable: '/usr/bin/chromium',
      maxContexts: 2,
      orgMaxContexts: 1,
      taskTimeoutMs: 60_000,
      idleMs: 60_000,
      adblockLists: [],
      proxyUrl: null,
      memoryMb: 2048,
      diskMb: 512,
      maxPages: 50,
      maxOpenContexts: 20,
      taskCpuMs: 120_000,
    },
    sqliteSynchronous: 'NORMAL',
    upstreamTimeoutMs: 30_000,
    upstreamIdleMs: 300_000,
    upstreamListBudgetMs: 1_000,
    discovery: {
      embeddingsUrl: null,
      embeddingsModel: 'text-embedding-3-small',
      embeddingsBudgetMs: 300,
      learning: true,
    },
    embeddingsApiKey: null,
    models: {
      defaultModel: null,
      openaiCompatibleBaseUrl: null,
      openaiCompatibleStructuredOutputs: true,
      openaiBaseUrl: null,
      anthropicBaseUrl: null,
      keys: { openaiCompatible: null, openai: null, anthropic: null, google: null },
      providers: [],
    },
    agentMaxSteps: 20,
    agentTurnTimeoutMs: 300_000,
    outboundAllowlist: [],
    metricsPort: null,
    metricsHost: '127.0.0.1',
    shutdownGraceMs: 30_000,
    tracing: { enabled: false, disabled: false, serviceName: 'switchyard' },
  };
}

/** What the pipeline hands a bearerAuth operation's handler (src/http/types.ts RequestContext). */
export type BearerContext = Omit<RequestContext, 'auth'> & { auth: AuthContext };

/** The management handlers never issue or verify tokens; a call here is a test bug. */
const noTokens: TokenService = {
  issue: () => Promise.reject(new Error('tokens are not used by these handlers')),
  verify: () => Promise.reject(new Error('tokens are not used by these handlers')),
  jwks: () => Promise.reject(new Error('tokens are not used by these handlers')),
  rotate: () => Promise.reject(new Error('tokens are not used by these handlers')),
  revokeCredential: () => Promise.reject(new Error('tokens are not used by these handlers')),
  forgetCredential: () => undefined,
  close: () => Promise.resolve(),
};

let sharedGateway: Gateway<UsageMemory, Semantic> | undefined;
/**
 * One gateway for every handler context of a test process (its caches are keyed by organisation),
 * with the embedded servers that need no agents or browser.
 */
function testGateway(config: Config, log: ReturnType<typeof createLogger>): Gateway<UsageMemory, Semantic> {
  if (sharedGateway) return sharedGateway;
  const parts = createGateway<UsageMemory, Semantic>({ config, log });
  const engine = createDiscoveryEngine(parts.catalog);
  sharedGateway = parts.mount({
    servers: [
      createMcpServer(parts.catalog),
      createSidekickServer(parts.catalog, { engine }),
      createGatewayServer(engine, parts.catalog),
    ],
    discovery: engine,
    newestOrgs: () => Promise.resolve([]),
  });
  return sharedGateway;
}

export function context(db: Knex, orgId: string, config: Config = testConfig()): BearerContext {
  const log = createLogger('silent');
  return {
    // Management handlers use only config, db, log and the per-process memos (call targets, gateway) of the services.
    services: {
      config,
      db,
      log,
      tokens: noTokens,
      callTargets: new CallTargets(db, config.revocationCacheMs),
      gateway: testGateway(config, log),
    } as Services,
    log,
    requestId: 'req-test',
    auth: {
      orgId,
      credentialId: 'cred_test',
      clientId: 'cli_test',
      tokenId: 'tok_test',
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    },
  };
}

/**
 * The parts of a request a test sets. Loose on purpose: tests also hand the handlers what the
 * pipeline would have rejected or coerced (unknown fields, bodies without schema defaults) to
 * prove the checks of the handlers and repositories themselves.
 */
export interface RequestParts {
  params?: Record<string, unknown>;
  query?: Record<string, unknown>;
  headers?: IncomingHttpHeaders;
  body?: unknown;
}

export function request(parts: RequestParts = {}): RequestParts {
  return parts;
}

/** The HandlerRequest<K> the pipeline would build from these parts (handlers do not read `raw`). */
function handlerRequest<K extends OperationId>(operationId: K, parts: RequestParts): HandlerRequest<K> {
  const built = {
    operationId,
    params: {},
    query: {},
    headers: {},
    body: undefined,
    contentType: parts.body === undefined ? undefined : 'application/json',
    raw: undefined,
    ...parts,
  };
  // The one cast of these fixtures: the parts are deliberately loose (see RequestParts).
  return built as unknown as HandlerRequest<K>;
}

/** Awaits a promise that must fail with an AppError of the given wire code and status. */
export async function expectAppError(p: Promise<unknown>, code: string, status: number): Promise<AppError> {
  try {
    await p;
  } catch (e) {
    expect(e, String(e)).to.be.instanceOf(AppError);
    const err = e as AppError;
    expect({ code: err.code, status: err.status }).to.deep.equal({ code, status });
    return err;
  }
  throw new Error(`expected ${code} (${status}) but the call succeeded`);
}

const validators = new Map<string, Promise<ResponseValidator>>();

/** Validator of one document of openapi/ (not the bundle: other documents may be mid-edit). */
function validatorFor(operationId: string): Promise<ResponseValidator> {
  const file = operationId === 'listUserConnections' ? 'connect.yaml' : 'management.yaml';
  let v = validators.get(file);
  if (!v) {
    const doc = YAML.parse(readFileSync(new URL(`../../../openapi/${file}`, import.meta.url), 'utf8')) as Record<
      string,
      unknown
    >;
    v = ResponseValidator.create(doc);
    validators.set(file, v);
  }
  return v;
}

/**
 * Runs a handler and renders a thrown AppError as the pipeline does ({error, message,
 * details}); the reply must match openapi/ for its operation and status.
 */
export async function call<K extends OperationId>(
  operationId: K,
  handler: Handler<K>,
  req: RequestParts,
  ctx: RequestContext<K>,
): Promise<Reply> {
  let reply: Reply;
  try {
    reply = await handler(handlerRequest(operationId, req), ctx);
  } catch (e) {
    if (!(e instanceof AppError)) throw e;
    reply = {
      status: e.status,
      body: { error: e.code, message: e.message, ...(e.details === undefined ? {} : { details: e.details }) },
    };
  }
  const problem = (await validatorFor(operationId)).check(operationId, reply);
  expect(problem?.message, 'reply conforms to openapi/').to.equal(undefined);
  return reply;
}
