import { readFileSync } from 'node:fs';
import os from 'node:os';

/** Cores this process may use (cgroup-aware where Node knows it). */
const cores = Math.max(1, os.availableParallelism());

/** Memory this process may use: its cgroup's limit where it has one (a container), else the machine's. */
function serviceMemoryBytes(): number {
  const total = os.totalmem();
  for (const file of ['/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory/memory.limit_in_bytes']) {
    try {
      const v = readFileSync(file, 'utf8').trim();
      const n = Number(v);
      if (v !== 'max' && Number.isFinite(n) && n > 0 && n < total) return n;
    } catch {
      // not in a cgroup that limits memory
    }
  }
  return total;
}

/** Every tunable with its default. Values here are the embedded, single-process defaults. */
export const defaults = {
  port: 8080,
  host: '0.0.0.0',
  dataDir: './data',
  /** Runtime token lifetime: spec "Limits" — 60 minutes (`expires_in` 3600). */
  tokenTtlSeconds: 3600,
  /** Our rule (spec leaves revocation open): revoked credentials fail within 5 s. */
  revocationCacheMs: 2000,
  /** Signing keys rotate after this age; old keys stay published until their tokens expire. */
  signingKeyMaxAgeDays: 30,
  /**
   * Failed client authentications at the token endpoints (src/auth/client-auth-limits.ts): a
   * rolling window, the failures a client id (or, on the legacy exchange, an organisation) may
   * have in it before further wrong secrets answer 429, the failures a source address may have
   * before everything from it answers 429, and the keys this process tracks at most.
   */
  tokenFailureWindowMs: 60_000,
  tokenFailureLimitPerClient: 10,
  tokenFailureLimitPerAddress: 30,
  tokenFailureTrackedKeys: 50_000,
  tokenAudience: 'switchyard',
  logLevel: 'info',
  /** Management list pagination. */
  pageDefault: 50,
  pageMax: 200,
  /** Body limit for JSON and form bodies (openapi/triggers.yaml decision: 16 MiB; multipart is streamed). */
  jsonBodyLimitBytes: 16 * 1024 * 1024,
  /** Spec Limits: synchronous wait 60 s. */
  syncWaitMs: 60_000,
  /** Per-run execution limit when the definition sets none (TIMEOUT beyond it). */
  runTimeoutMs: 600_000,
  /**
   * Concurrent runs per process: 32 per core, at least 32. Runs wait on the store, on sandbox
   * processes and on HTTP far more than they compute in this process, and more runs at once
   * make bigger write batches, which cost less CPU per run (bench/README.md, "Run execution").
   */
  runConcurrency: Math.min(256, Math.max(32, 32 * cores)),
  /** A worker holds a run for this long and renews while it runs; expired leases are recovered. */
  runLeaseMs: 30_000,
  /** Attempts before a run whose worker was lost ends FAILED. */
  runMaxAttempts: 2,
  /** Finished runs, their files and attachments are pruned after this many days. */
  runRetentionDays: 30,
  /**
   * Browser automation (src/browser/README.md): Debian's Chromium, concurrent tasks per process,
   * task time limit, idle browser lifetime.
   */
  browserExecutable: '/usr/bin/chromium',
  browserMaxContexts: 4,
  /**
   * Browser tasks of one organisation at once: half of BROWSER_MAX_CONTEXTS, at least one, so an
   * organisation with many tasks always leaves the other half of the slots to the others.
   */
  browserOrgMaxContexts: (maxContexts: number): number => Math.max(1, Math.floor(maxContexts / 2)),
  browserTaskTimeoutMs: 300_000,
  browserIdleMs: 60_000,
  /**
   * One organisation's browser box (src/browser/README.md "Limits"): its memory, its private disk,
   * the pages and contexts open in it at once (a task keeps two contexts: its own and the one
   * opened ahead for the next), and the CPU time one task may cost it.
   */
  browserMemoryMb: 2048,
  browserDiskMb: 512,
  browserMaxPages: 50,
  browserMaxOpenContexts: 20,
  browserTaskCpuMs: 120_000,
  /**
   * Code runner spares kept warm, and one organisation's most runners: one per core, at least 2
   * (src/engine/sandbox/README.md).
   */
  sandboxPoolSize: Math.min(64, Math.max(2, cores)),
  /**
   * Executions a code runner serves before it is replaced (src/engine/sandbox/README.md): a start
   * (Node, the addon, bubblewrap, the first isolate) costs as much CPU as hundreds of warm
   * executions, so a busy runner lives seconds, not a fraction of one.
   */
  sandboxMaxExecutions: 10_000,
  /**
   * The memory budget of every process that runs tenant code, code runners and browser boxes
   * together (src/containment/budget.ts): half of the memory this process may use.
   */
  tenantMemoryMb: Math.max(256, Math.floor(serviceMemoryBytes() / 2 / (1024 * 1024))),
  // SIGTERM: what running steps and in-flight requests get to finish.
  shutdownGraceMs: 30_000,
  /** Application servers (src/gateway/upstream): idle upstream sessions close after 5 min. */
  upstreamIdleMs: 300_000,
  /** Upstream sessions kept per process at most (least recently used evicted first). */
  upstreamMaxSessions: 1000,
  /** Time limit of one upstream operation, connect included (spec Errors: timeout → -32000). */
  upstreamTimeoutMs: 30_000,
  upstreamListBudgetMs: 1_000,
  /**
   * Discovery (src/servers/sidekick/README.md): the embeddings model asked for, and how long a
   * query waits for its embedding.
   */
  embeddingsModel: 'text-embedding-3-small',
  embeddingsBudgetMs: 300,
  /** Connection (PCID) lookups are reused this long: status changes and revocation apply within it. */
  upstreamConnectionTtlMs: 2000,
  /** An upstream MCP server's tool list is reused this long within one session. */
  upstreamToolsTtlMs: 30_000,
  /** Agents: model calls per turn at most (a model that never stops calling tools ends there). */
  agentMaxSteps: 20,
  /** Agents: time limit of one turn, model and tool calls together. */
  agentTurnTimeoutMs: 300_000,
} as const;

/**
 * RUN_ORG_CONCURRENCY when it is not set: how many runs of one organisation a process executes at
 * once (src/runs/README.md "Sharing the run slots"). Three quarters of RUN_CONCURRENCY, so that one
 * organisation's backlog always leaves a quarter of the slots to the others, and at least twice
 * SANDBOX_POOL_SIZE (the most code runners one organisation has), never above RUN_CONCURRENCY.
 * Not the runner count: a run spends most of its time claiming, loading, waiting on HTTP and
 * committing rather than in its runner, and one organisation's throughput follows how many of its
 * runs overlap (src/runs/README.md, bench/runs.ts).
 */
export function defaultRunOrgConcurrency(runConcurrency: number, sandboxPoolSize: number): number {
  const leaveOthers = Math.ceil(runConcurrency / 4);
  return Math.max(1, Math.min(runConcurrency, Math.max(2 * sandboxPoolSize, runConcurrency - leaveOthers)));
}
