/**
 * Executes one step of a run (src/engine/README.md) and reports its outcome in the shape the run
 * worker records: status, resultType, result text, exitCode, duration, files and log lines.
 * Never throws: every failure, including an unexpected one, is a FAILED outcome.
 */
import type { WorkflowStep } from './definition.js';
import { runCodeStep } from './steps/code.js';
import { runHttpStep } from './steps/http.js';
import { runToolStep } from './steps/tool.js';
import { runAgentStep } from './steps/agent.js';
import { EXIT, failed, type ExecutedStep, type StepDeps, type StepRunContext } from './steps/types.js';

export type {
  PriorStep,
  StepRunContext,
  ProducedFile,
  ExecutedStep,
  StepDeps,
  StepStatus,
  ResultType,
  ToolCaller,
  ToolCall,
  AgentInvoker,
} from './steps/types.js';
export type { SandboxPool } from './sandbox/pool.js';

export async function executeStep(step: WorkflowStep, ctx: StepRunContext, deps: StepDeps): Promise<ExecutedStep> {
  const started = performance.now();
  try {
    switch (step.type) {
      case 'code':
        return await runCodeStep(step, ctx, deps);
      case 'http':
        return await runHttpStep(step, ctx, deps);
      case 'tool':
        return await runToolStep(step, ctx, deps);
      case 'agent':
        return await runAgentStep(step, ctx, deps);
      default:
        return failed(
          'FAILED',
          EXIT.invalid,
          `Invalid step: unknown step type ${JSON.stringify((step as { type?: unknown }).type)}`,
          { durationMs: 0 },
        );
    }
  } catch (err) {
    deps.log.error({ err, runId: ctx.runId, stepIndex: ctx.stepIndex }, 'step executor failed unexpectedly');
    return failed('FAILED', EXIT.error, `Internal error while running the step: ${(err as Error).message}`, {
      durationMs: Math.round(performance.now() - started),
    });
  }
}
