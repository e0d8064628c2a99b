/** Public shapes of the sandbox pool (pool.ts). */
import type { Logger } from '../../config/logger.js';
import type { Isolation, MemoryBudget } from '../../containment/index.js';
import type { SandboxLimits } from './limits.js';
import type { Breach } from './flags.js';

export interface SandboxPoolOptions {
  /** The layers in force and how to start a contained process (src/containment). */
  isolation: Isolation;
  /**
   * The memory budget runners share with browser boxes (TENANT_MEMORY_MB,
   * src/containment/budget.ts): it bounds how many processes live at once. Without one the pool
   * has a budget of its own of 256 MiB (FALLBACK_BUDGET_BYTES).
   */
  budget?: MemoryBudget | undefined;
  /** The memory a runner is admitted with until measured (default RUNNER_EXPECTED_BYTES, 16 MiB). */
  runnerBytes?: number;
  /** Warm spare processes, and the most processes one organisation may have (default 2; config SANDBOX_POOL_SIZE). */
  size?: number;
  /** Heap limit of steps that set no memoryMb (schema default 128). */
  defaultMemoryMb?: number;
  /**
   * Executions before a process is replaced (default 10,000, config SANDBOX_MAX_EXECUTIONS); 1 = a
   * fresh process per step.
   */
  maxExecutionsPerProcess?: number;
  /** Idle time after which a process bound to an organisation exits (default 5 min; the budget evicts it sooner when it needs the room). */
  idleTimeoutMs?: number;
  spawnTimeoutMs?: number;
  /** Wall-clock slack after a step's timeoutMs before its process is killed (default 500 ms). */
  killGraceMs?: number;
  /**
   * Resident memory of a runner's tree allowed above twice its isolates' heap limits, in MiB
   * (default 384: Node, files, buffers).
   */
  rssHeadroomMb?: number;
  /**
   * Reuse warm contexts for executions of the same context key (default true; README.md
   * "Context reuse"). False: a fresh context for every execution.
   */
  reuseContexts?: boolean;
  /** Contexts a process keeps per memory class for reuse, least recently used evicted (default 32, at most 256). */
  contextsPerProcess?: number;
  /**
   * Tests only, from the composition root (src/app.ts AppOptions.assumeBreach): steps get the
   * runner's own `process` (README.md "Testing the outer layers"). `off` unless given.
   */
  breach?: Breach;
  limits?: Partial<SandboxLimits>;
  log?: Logger;
}

export interface SandboxRequest {
  /** The organisation whose step this is: only its own processes run it. */
  orgId: string;
  /** Body of an async function receiving `ctx` (schema codeStep.code). */
  code: string;
  inputs: unknown;
  steps: unknown;
  timeoutMs: number;
  memoryMb?: number;
  /**
   * Who may share a warm context: executions with equal keys only (README.md "Context reuse").
   * The code step adapter sets it to org + workflow + step index + sha256(code); none: a fresh
   * context.
   */
  contextKey?: string;
  /** The run was cancelled or reached its deadline: the process is killed. */
  signal?: AbortSignal;
}

export interface SandboxFile {
  fileName: string;
  mimeType: string;
  data: Buffer;
}

/**
 * ok: the step returned (`kind` says what); error: it threw or broke a limit; invalid: it does
 * not compile; timeout: over timeoutMs (or awaiting a promise that can never settle); memory:
 * over its memory limit; killed: its process died or misbehaved; aborted: the caller's signal;
 * unavailable: no process could be started. `text` is the result text or the message.
 */
export interface SandboxRun {
  outcome: 'ok' | 'error' | 'invalid' | 'timeout' | 'memory' | 'killed' | 'aborted' | 'unavailable';
  kind?: 'string' | 'json' | 'undefined';
  text: string;
  files: SandboxFile[];
  logs: string[];
  durationMs: number;
  /** Which runner process ran it (an opaque number), when one did. */
  runner?: number | undefined;
}
