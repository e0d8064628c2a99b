/** Shared set-up of the engine step tests: a silent logger and a code-step runner. */
import { createLogger } from '../../../src/config/logger.js';
import { executeStep, type ExecutedStep, type PriorStep, type StepDeps } from '../../../src/engine/execute-step.js';
import type { SandboxPool } from '../../../src/engine/sandbox/pool.js';
import type { WorkflowStep } from '../../../src/engine/definition.js';

export const silentLog = createLogger('silent');

export interface RunOptions {
  inputs?: Record<string, unknown>;
  steps?: PriorStep[];
  signal?: AbortSignal;
  step?: Partial<WorkflowStep>;
}

/** Runs `code` as a code step through executeStep (the run worker's entry point). */
export function runCode(pool: SandboxPool, code: string, opts: RunOptions = {}): Promise<ExecutedStep> {
  const step: WorkflowStep = { type: 'code', name: 'test', code, ...opts.step };
  const deps: StepDeps = { sandbox: pool, log: silentLog, signal: opts.signal };
  return executeStep(step, { inputs: opts.inputs ?? {}, steps: opts.steps ?? [], runId: 'run_test', automationId: 'wf_test', stepIndex: 0 }, deps);
}

/** True while a process with this id exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits until the process is gone (a SIGKILLed child lingers until it is reaped). */
export async function waitGone(pid: number, ms = 3000): Promise<boolean> {
  const until = Date.now() + ms;
  while (alive(pid)) {
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}
