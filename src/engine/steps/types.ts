/**
 * The contract between the run worker (src/runs) and the step executors. A step's outcome
 * feeds the spec's step entries: `result {stepIndex, resultType, result}`, `exitCode`,
 * `duration` and `resultUrls` (the produced files).
 */
import type { Logger } from '../../config/logger.js';
import type { SandboxPool } from '../sandbox/pool.js';

/** An earlier step of the same run, as later steps and templates see it (`steps[i]`). */
export interface PriorStep {
  stepIndex: number;
  name: string;
  status: string;
  resultType: string;
  /** Parsed JSON for json results, else the text. */
  result: unknown;
  exitCode: number;
}

export interface StepRunContext {
  /** The run inputs; attachments appear as inputs.attachments[] ({filename, contentType, size, url}). */
  inputs: Record<string, unknown>;
  /** Outcomes of earlier steps of this run. */
  steps: PriorStep[];
  runId: string;
  automationId: string;
  stepIndex: number;
  /** The run's organisation: tool steps call the gateway as it. */
  orgId?: string | undefined;
}

export interface ProducedFile {
  fileName: string;
  mimeType: string;
  data: Buffer;
}

export type StepStatus = 'COMPLETE' | 'FAILED' | 'TIMEOUT';
export type ResultType = 'markdown' | 'plaintext' | 'json' | 'error';

export interface ExecutedStep {
  status: StepStatus;
  resultType: ResultType;
  /** The text stored and returned: JSON text for json results, the message for failures. */
  result: string;
  /**
   * 0 success; 1 the step's code threw or its request failed; 2 invalid step (bad template,
   * code that does not compile, bad URL, not implemented); 124 over its time limit;
   * 137 killed (memory limit, crash, run cancelled).
   */
  exitCode: number;
  durationMs: number;
  files: ProducedFile[];
  /** ctx.log lines (code steps), bounded to 1000 lines and 64 KiB. */
  logs: string[];
}

export interface StepDeps {
  sandbox: SandboxPool;
  log: Logger;
  /**
   * The run was cancelled or reached its deadline. Reason `AbortError` (plain `abort()`)
   * counts as a cancellation (FAILED, 137); any other reason as the deadline (TIMEOUT, 124).
   */
  signal?: AbortSignal;
  fetchImpl?: typeof fetch;
  /** Calls an MCP tool through the gateway as the run's organisation (tool steps). */
  callTool?: ToolCaller;
  /** Runs one agent turn in a new chat as the run's organisation (agent steps). */
  invokeAgent?: AgentInvoker;
}

/** What an agent step needs of the agents context (src/app.ts builds it from AgentService). */
export type AgentInvoker = (call: {
  orgId: string;
  agentId: string;
  message: string;
  signal: AbortSignal | undefined;
}) => Promise<
  | {
      kind: 'ok';
      chatId: string;
      turnId: string;
      reply: string;
      output: Record<string, unknown> | null;
      messages: unknown[];
    }
  | { kind: 'failed'; chatId: string; turnId: string; error: string; message: string; messages: unknown[] }
  | { kind: 'refused'; message: string }
>;

/** What a tool step needs of the gateway (src/gateway/steps.ts builds it). */
export interface ToolCall {
  orgId: string;
  server: string;
  tool: string;
  arguments: Record<string, unknown>;
  signal: AbortSignal | undefined;
}

/** A tool's result (MCP CallToolResult), or a thrown error carrying a JSON-RPC `code`. */
export type ToolCaller = (call: ToolCall) => Promise<{
  content: Array<{ type: string; [k: string]: unknown }>;
  structuredContent?: Record<string, unknown> | undefined;
  isError?: boolean | undefined;
}>;

export const EXIT = { ok: 0, error: 1, invalid: 2, timeout: 124, killed: 137 } as const;

/** A failed outcome with the error result type. */
export function failed(
  status: 'FAILED' | 'TIMEOUT',
  exitCode: number,
  message: string,
  { durationMs, extra = {} }: { durationMs: number; extra?: Partial<ExecutedStep> },
): ExecutedStep {
  return { status, resultType: 'error', result: message, exitCode, durationMs, files: [], logs: [], ...extra };
}

/** How the caller's signal ended a step: the run deadline (TIMEOUT) or a cancellation. */
export function stoppedByRun(
  signal: AbortSignal | undefined,
  durationMs: number,
  extra: Partial<ExecutedStep> = {},
): ExecutedStep {
  const reason = signal?.reason as { name?: unknown; message?: unknown } | undefined;
  const why = reason && typeof reason.message === 'string' && reason.message ? `: ${reason.message}` : '';
  if (reason?.name === 'AbortError')
    return failed('FAILED', EXIT.killed, `Step stopped: the run was cancelled${why}`, { durationMs, extra });
  return failed('TIMEOUT', EXIT.timeout, `Step stopped: the run reached its time limit${why}`, { durationMs, extra });
}
