import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { defaultRunOrgConcurrency, defaults } from './defaults.js';
import { parseOutboundAllowlist } from '../kernel/outbound.js';
import { SwitchyardConfig as validateConfig } from '../../generated/validators/schemas.js';
import type { SwitchyardConfig } from '../../generated/schemas/types.js';
import type { Config, ConfigModels, ConfigTokenFailureLimits, ConfigTracing } from '../../generated/config/types.js';

export { defaults };
export type {
  Config,
  ConfigModels as ModelConfig,
  ConfigTracing as TracingConfig,
} from '../../generated/config/types.js';

type ModelProviderName = ConfigModels['providers'][number];

/**
 * The configuration as read from the environment: LOG_LEVEL is any text until the schema's check
 * (its `logLevel` enum) narrows it to SwitchyardConfig.
 */
type Unchecked = Omit<SwitchyardConfig, 'logLevel'> & { logLevel: string };

export class ConfigError extends Error {}

function intEnv(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  { min = 0, max = Number.MAX_SAFE_INTEGER }: { min?: number; max?: number } = {},
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return n;
}

/**
 * BROWSER_MAX_CONTEXTS and BROWSER_ORG_MAX_CONTEXTS: the organisation cap defaults to half the
 * slots (at least one), so one organisation's tasks always leave the other half to the rest.
 */
function browserSlots(env: NodeJS.ProcessEnv): { maxContexts: number; orgMaxContexts: number } {
  const maxContexts = intEnv(env, 'BROWSER_MAX_CONTEXTS', defaults.browserMaxContexts, { min: 1, max: 64 });
  const orgMaxContexts = intEnv(env, 'BROWSER_ORG_MAX_CONTEXTS', defaults.browserOrgMaxContexts(maxContexts), {
    min: 1,
    max: 64,
  });
  if (orgMaxContexts > maxContexts)
    throw new ConfigError(
      `BROWSER_ORG_MAX_CONTEXTS (${orgMaxContexts}) must not be more than BROWSER_MAX_CONTEXTS (${maxContexts}): one organisation's tasks cannot have more slots than the process has`,
    );
  return { maxContexts, orgMaxContexts };
}

function urlEnv(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  const raw = env[name] ?? fallback;
  try {
    const u = new URL(raw);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('protocol');
  } catch {
    throw new ConfigError(`${name} must be an absolute http(s) URL, got "${raw}"`);
  }
  return raw.replace(/\/+$/, '');
}

function sqliteSynchronous(env: NodeJS.ProcessEnv): Config['sqliteSynchronous'] {
  const raw = (env.SQLITE_SYNCHRONOUS ?? '').trim().toUpperCase();
  if (raw === '' || raw === 'NORMAL') return 'NORMAL';
  if (raw === 'FULL') return 'FULL';
  throw new ConfigError(`SQLITE_SYNCHRONOUS must be NORMAL or FULL, got "${env.SQLITE_SYNCHRONOUS}"`);
}

function codeIsolation(env: NodeJS.ProcessEnv): Config['codeIsolation'] {
  const raw = (env.CODE_ISOLATION ?? '').trim().toLowerCase();
  if (raw === '') return 'auto';
  if (raw === 'auto' || raw === 'strict' || raw === 'process') return raw;
  throw new ConfigError(`CODE_ISOLATION must be auto, strict or process, got "${env.CODE_ISOLATION}"`);
}

function boolEnv(env: NodeJS.ProcessEnv, name: string, { fallback }: { fallback: boolean }): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no'].includes(raw.toLowerCase())) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

/** ADMIN_ORG_IDS: comma-separated organisation ids allowed the installation-wide operations. */
function adminOrgIds(value: string | undefined): string[] {
  return [
    ...new Set(
      (value ?? '')
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean),
    ),
  ];
}

/**
 * BROWSER_ADBLOCK_LISTS: comma-separated filter lists (absolute paths or http(s) URLs); empty means
 * Ghostery's prebuilt ads engine.
 */
function adblockLists(value: string | undefined): string[] {
  const lists = (value ?? '')
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);
  for (const l of lists) {
    if (!/^https?:\/\//i.test(l) && !path.isAbsolute(l))
      throw new ConfigError(`BROWSER_ADBLOCK_LISTS entries must be absolute paths or http(s) URLs, got "${l}"`);
  }
  return lists;
}

/**
 * The secret key comes from SECRET_KEY (base64, 32 bytes) or, when unset, from
 * DATA_DIR/secret.key, created on first start with mode 0600. Answered as its canonical base64
 * text, the form the config schema describes (secretKey); loadConfig decodes it once checked.
 */
function loadSecretKey(env: NodeJS.ProcessEnv, dataDir: string): string {
  const raw = env.SECRET_KEY;
  if (raw) {
    const key = Buffer.from(raw, 'base64');
    if (key.length !== 32) throw new ConfigError('SECRET_KEY must be 32 bytes, base64-encoded');
    return key.toString('base64');
  }
  const file = path.join(dataDir, 'secret.key');
  if (existsSync(file)) {
    const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
    if (key.length !== 32) throw new ConfigError(`${file} does not hold a 32-byte base64 key`);
    return key.toString('base64');
  }
  const key = randomBytes(32).toString('base64');
  writeFileSync(file, key + '\n', { mode: 0o600 });
  return key;
}

function modelConfig(env: NodeJS.ProcessEnv): ConfigModels {
  const text = (name: string): string | null => (env[name] ?? '').trim() || null;
  const baseUrl = env.OPENAI_COMPATIBLE_BASE_URL ? urlEnv(env, 'OPENAI_COMPATIBLE_BASE_URL', '') : null;
  const openaiBaseUrl = env.OPENAI_BASE_URL ? urlEnv(env, 'OPENAI_BASE_URL', '') : null;
  const anthropicBaseUrl = env.ANTHROPIC_BASE_URL ? urlEnv(env, 'ANTHROPIC_BASE_URL', '') : null;
  const keys = {
    openaiCompatible: text('OPENAI_COMPATIBLE_API_KEY'),
    openai: text('OPENAI_API_KEY'),
    anthropic: text('ANTHROPIC_API_KEY'),
    google: text('GOOGLE_GENERATIVE_AI_API_KEY') ?? text('GEMINI_API_KEY'),
  };
  const providers: ModelProviderName[] = [];
  if (baseUrl) providers.push('openai-compatible');
  if (keys.openai) providers.push('openai');
  if (keys.anthropic) providers.push('anthropic');
  if (keys.google) providers.push('google');
  const defaultModel = text('DEFAULT_MODEL');
  if (defaultModel !== null && !/^(openai-compatible|openai|anthropic|google)\/.+$/.test(defaultModel)) {
    throw new ConfigError(
      `DEFAULT_MODEL must be provider/model with provider openai-compatible, openai, anthropic or google, got "${defaultModel}"`,
    );
  }
  return {
    defaultModel,
    openaiCompatibleBaseUrl: baseUrl,
    openaiCompatibleStructuredOutputs: boolEnv(env, 'OPENAI_COMPATIBLE_STRUCTURED_OUTPUTS', { fallback: true }),
    openaiBaseUrl,
    anthropicBaseUrl,
    keys,
    providers,
  };
}

function tracingConfig(env: NodeJS.ProcessEnv): ConfigTracing {
  const endpoint = (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT || '').trim();
  const disabled = (env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true';
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter(Boolean);
  if (exporters.some((e) => e !== 'otlp' && e !== 'none')) {
    throw new ConfigError(`OTEL_TRACES_EXPORTER must be otlp or none, got "${env.OTEL_TRACES_EXPORTER}"`);
  }
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || '').trim();
  if (protocol && protocol !== 'http/protobuf' && protocol !== 'http/json') {
    throw new ConfigError(`OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json, got "${protocol}"`);
  }
  if (endpoint) {
    try {
      const u = new URL(endpoint);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('protocol');
    } catch {
      throw new ConfigError(`OTEL_EXPORTER_OTLP_ENDPOINT must be an absolute http(s) URL, got "${endpoint}"`);
    }
  }
  return {
    enabled: endpoint !== '' && !disabled && !exporters.includes('none'),
    disabled: disabled || exporters.includes('none'),
    serviceName: (env.OTEL_SERVICE_NAME ?? '').trim() || 'switchyard',
  };
}

function tokenFailureLimits(env: NodeJS.ProcessEnv): ConfigTokenFailureLimits {
  return {
    windowMs: intEnv(env, 'TOKEN_FAILURE_WINDOW_MS', defaults.tokenFailureWindowMs, { min: 1000, max: 86_400_000 }),
    perClient: intEnv(env, 'TOKEN_FAILURE_LIMIT_PER_CLIENT', defaults.tokenFailureLimitPerClient, {
      min: 0,
      max: 100_000,
    }),
    perAddress: intEnv(env, 'TOKEN_FAILURE_LIMIT_PER_ADDRESS', defaults.tokenFailureLimitPerAddress, {
      min: 0,
      max: 100_000,
    }),
    trackedKeys: intEnv(env, 'TOKEN_FAILURE_TRACKED_KEYS', defaults.tokenFailureTrackedKeys, {
      min: 100,
      max: 10_000_000,
    }),
  };
}

function outboundAllowlist(env: NodeJS.ProcessEnv): string[] {
  try {
    return [...parseOutboundAllowlist(env.OUTBOUND_ALLOWLIST).entries];
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = intEnv(env, 'PORT', defaults.port, { min: 0, max: 65535 });
  const dataDir = path.resolve(env.DATA_DIR || defaults.dataDir);
  mkdirSync(dataDir, { recursive: true });
  const publicUrl = urlEnv(env, 'PUBLIC_URL', `http://localhost:${port}`);
  const runConcurrency = intEnv(env, 'RUN_CONCURRENCY', defaults.runConcurrency, { min: 0, max: 256 });
  const sandboxPoolSize = intEnv(env, 'SANDBOX_POOL_SIZE', defaults.sandboxPoolSize, { min: 1, max: 64 });
  const config: Unchecked = {
    port,
    host: env.HOST || defaults.host,
    dataDir,
    databaseUrl: env.DATABASE_URL || null,
    redisUrl: env.REDIS_URL || null,
    redisPrefix: env.REDIS_PREFIX || 'switchyard',
    publicUrl,
    baseUrls: {
      triggers: urlEnv(env, 'TRIGGERS_URL', publicUrl),
      auth: urlEnv(env, 'AUTH_URL', publicUrl),
      mcp: urlEnv(env, 'MCP_URL', `${publicUrl}/mcp`),
      connect: urlEnv(env, 'CONNECT_URL', publicUrl),
      runFiles: urlEnv(env, 'RUN_FILES_URL', publicUrl),
    },
    secretKey: loadSecretKey(env, dataDir),
    logLevel: env.LOG_LEVEL || defaults.logLevel,
    tokenTtlSeconds: intEnv(env, 'TOKEN_TTL_SECONDS', defaults.tokenTtlSeconds, { min: 60, max: 86400 }),
    revocationCacheMs: intEnv(env, 'REVOCATION_CACHE_MS', defaults.revocationCacheMs, { min: 0, max: 5000 }),
    signingKeyMaxAgeDays: intEnv(env, 'SIGNING_KEY_MAX_AGE_DAYS', defaults.signingKeyMaxAgeDays, { min: 1, max: 3650 }),
    tokenAudience: env.TOKEN_AUDIENCE || defaults.tokenAudience,
    adminOrgIds: adminOrgIds(env.ADMIN_ORG_IDS),
    tokenFailureLimits: tokenFailureLimits(env),
    seedDemo: boolEnv(env, 'SEED_DEMO', { fallback: true }),
    syncWaitMs: intEnv(env, 'SYNC_WAIT_MS', defaults.syncWaitMs, { min: 1, max: 60_000 }),
    runTimeoutMs: intEnv(env, 'RUN_TIMEOUT_MS', defaults.runTimeoutMs, { min: 1000, max: 86_400_000 }),
    runConcurrency,
    runOrgConcurrency: intEnv(env, 'RUN_ORG_CONCURRENCY', defaultRunOrgConcurrency(runConcurrency, sandboxPoolSize), {
      min: 1,
      max: 256,
    }),
    runLeaseMs: intEnv(env, 'RUN_LEASE_MS', defaults.runLeaseMs, { min: 500, max: 3_600_000 }),
    runMaxAttempts: intEnv(env, 'RUN_MAX_ATTEMPTS', defaults.runMaxAttempts, { min: 1, max: 10 }),
    runRetentionDays: intEnv(env, 'RUN_RETENTION_DAYS', defaults.runRetentionDays, { min: 1, max: 3650 }),
    sandboxPoolSize,
    sandboxReuseContexts: boolEnv(env, 'SANDBOX_REUSE_CONTEXTS', { fallback: true }),
    sandboxMaxExecutions: intEnv(env, 'SANDBOX_MAX_EXECUTIONS', defaults.sandboxMaxExecutions, {
      min: 1,
      max: 1_000_000,
    }),
    tenantMemoryMb: intEnv(env, 'TENANT_MEMORY_MB', defaults.tenantMemoryMb, { min: 256, max: 16_777_216 }),
    codeIsolation: codeIsolation(env),
    sqliteSynchronous: sqliteSynchronous(env),
    upstreamTimeoutMs: intEnv(env, 'GATEWAY_UPSTREAM_TIMEOUT_MS', defaults.upstreamTimeoutMs, {
      min: 100,
      max: 600_000,
    }),
    upstreamIdleMs: intEnv(env, 'GATEWAY_UPSTREAM_IDLE_MS', defaults.upstreamIdleMs, { min: 1000, max: 86_400_000 }),
    upstreamListBudgetMs: intEnv(env, 'GATEWAY_UPSTREAM_LIST_BUDGET_MS', defaults.upstreamListBudgetMs, {
      min: 10,
      max: 600_000,
    }),
    models: modelConfig(env),
    agentMaxSteps: intEnv(env, 'AGENT_MAX_STEPS', defaults.agentMaxSteps, { min: 1, max: 100 }),
    agentTurnTimeoutMs: intEnv(env, 'AGENT_TURN_TIMEOUT_MS', defaults.agentTurnTimeoutMs, {
      min: 1000,
      max: 3_600_000,
    }),
    outboundAllowlist: outboundAllowlist(env),
    browser: {
      executable: env.BROWSER_EXECUTABLE || defaults.browserExecutable,
      ...browserSlots(env),
      taskTimeoutMs: intEnv(env, 'BROWSER_TASK_TIMEOUT_MS', defaults.browserTaskTimeoutMs, {
        min: 1000,
        max: 3_600_000,
      }),
      idleMs: intEnv(env, 'BROWSER_IDLE_MS', defaults.browserIdleMs, { min: 1000, max: 86_400_000 }),
      adblockLists: adblockLists(env.BROWSER_ADBLOCK_LISTS),
      proxyUrl: env.BROWSER_PROXY_URL ? urlEnv(env, 'BROWSER_PROXY_URL', '') : null,
      memoryMb: intEnv(env, 'BROWSER_MEMORY_MB', defaults.browserMemoryMb, { min: 256, max: 1_048_576 }),
      diskMb: intEnv(env, 'BROWSER_DISK_MB', defaults.browserDiskMb, { min: 64, max: 1_048_576 }),
      maxPages: intEnv(env, 'BROWSER_MAX_PAGES', defaults.browserMaxPages, { min: 1, max: 10_000 }),
      maxOpenContexts: intEnv(env, 'BROWSER_MAX_OPEN_CONTEXTS', defaults.browserMaxOpenContexts, {
        min: 2,
        max: 10_000,
      }),
      taskCpuMs: intEnv(env, 'BROWSER_TASK_CPU_MS', defaults.browserTaskCpuMs, { min: 100, max: 86_400_000 }),
    },
    discovery: {
      embeddingsUrl: env.EMBEDDINGS_URL ? urlEnv(env, 'EMBEDDINGS_URL', '') : null,
      embeddingsModel: env.EMBEDDINGS_MODEL || defaults.embeddingsModel,
      embeddingsBudgetMs: intEnv(env, 'EMBEDDINGS_BUDGET_MS', defaults.embeddingsBudgetMs, { min: 10, max: 60_000 }),
      learning: boolEnv(env, 'DISCOVERY_LEARNING', { fallback: true }),
    },
    embeddingsApiKey: env.EMBEDDINGS_API_KEY || null,
    metricsPort: env.METRICS_PORT ? intEnv(env, 'METRICS_PORT', 0, { min: 1, max: 65535 }) : null,
    metricsHost: env.METRICS_HOST || '127.0.0.1',
    shutdownGraceMs: intEnv(env, 'SHUTDOWN_GRACE_MS', defaults.shutdownGraceMs, { min: 0, max: 3_600_000 }),
    tracing: tracingConfig(env),
  };
  // The resolved configuration must match schemas/config/config.schema.json. Ajv's messages name
  // the path and the rule broken, never the value, so no secret reaches the error.
  if (!validateConfig(config)) {
    const problems = (validateConfig.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`);
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  return { ...config, secretKey: Buffer.from(config.secretKey, 'base64') };
}
