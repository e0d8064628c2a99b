/** Shared set-up of the engine step tests: a silent logger, the machine's isolation and a code-step runner. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createLogger } from '../../../src/config/logger.js';
import { launchCommand, probeIsolation, type Isolation, type IsolationMode } from '../../../src/containment/index.js';
import { runnerCommand, runnerView } from '../../../src/engine/sandbox/flags.js';
import { DEFAULT_LIMITS } from '../../../src/engine/sandbox/limits.js';
import { executeStep, type ExecutedStep, type PriorStep, type StepDeps } from '../../../src/engine/execute-step.js';
import type { SandboxPool } from '../../../src/engine/sandbox/pool.js';
import type { WorkflowStep } from '../../../src/engine/definition.js';

export const silentLog = createLogger('silent');

/**
 * The isolation this machine gives (CODE_ISOLATION, default auto; CI sets strict, so a machine
 * without bubblewrap fails there instead of testing less).
 */
export function testIsolation(mode = (process.env.CODE_ISOLATION || 'auto') as IsolationMode): Promise<Isolation> {
  return probeIsolation({ mode });
}

export interface RunOptions {
  inputs?: Record<string, unknown>;
  steps?: PriorStep[];
  signal?: AbortSignal;
  step?: Partial<WorkflowStep>;
  orgId?: string;
}

/** Runs `code` as a code step through executeStep (the run worker's entry point). */
export function runCode(pool: SandboxPool, code: string, opts: RunOptions = {}): Promise<ExecutedStep> {
  const step: WorkflowStep = { type: 'code', name: 'test', code, ...opts.step };
  const deps: StepDeps = { sandbox: pool, log: silentLog, signal: opts.signal };
  return executeStep(
    step,
    {
      orgId: opts.orgId ?? 'org_test',
      inputs: opts.inputs ?? {},
      steps: opts.steps ?? [],
      runId: 'run_test',
      automationId: 'wf_test',
      stepIndex: 0,
    },
    deps,
  );
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

/** A runner process started as the pool starts one (contained, empty environment), for protocol tests. */
export async function startRunner(contexts: number): Promise<ChildProcess> {
  const isolation = await testIsolation();
  const argv = runnerCommand(
    { limits: DEFAULT_LIMITS, contexts, uid: isolation.users?.take(), warmMemoryMb: 64, breach: 'off' },
    { contained: isolation.plan.bwrap !== undefined },
  );
  const { file, args } = launchCommand(isolation.plan, runnerView(), argv);
  const child = spawn(file, args, {
    env: {},
    cwd: '/',
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`the runner exited with ${code}`)));
  });
  return child;
}
