/**
 * `agent` steps (schemas/workflow agentStep): the templated `message` goes to the agent in a
 * new chat (one per run and step), through the same turn runtime as the agent API channel and
 * agent_invoke (src/agents). The reply is the step result: the structured output as json when
 * the agent has an output schema, else the reply text as markdown. The turn itself is kept as
 * the step file `agent-turn.json` (chat id, turn id and every message, tool call and tool
 * result), so a run's agent turns are visible in its results.
 * - The agent cannot answer (unknown agent, no model configured) → FAILED, exit code 2.
 * - The turn fails (model error, step limit, invalid output, turn time limit) → FAILED, exit 1.
 */
import type { WorkflowStep } from '../definition.js';
import { renderTemplates, TemplateError } from '../template.js';
import { templateData } from './context.js';
import { EXIT, failed, stoppedByRun, type ExecutedStep, type StepDeps, type StepRunContext } from './types.js';

const MAX_RESULT_BYTES = 1024 * 1024;

export async function runAgentStep(step: WorkflowStep, ctx: StepRunContext, deps: StepDeps): Promise<ExecutedStep> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  if (!deps.invokeAgent || !ctx.orgId)
    return failed(
      'FAILED',
      EXIT.invalid,
      'Invalid step: agent steps need the agents runtime, which this worker was started without',
      { durationMs: 0 },
    );
  const def = step as WorkflowStep & { agentId: string; message: string };
  let message: unknown;
  try {
    message = await renderTemplates(def.message, templateData(ctx));
  } catch (err) {
    if (err instanceof TemplateError)
      return failed('FAILED', EXIT.invalid, `Invalid step: ${err.message}`, { durationMs: elapsed() });
    throw err;
  }
  const text = typeof message === 'string' ? message : JSON.stringify(message);
  if (!text)
    return failed('FAILED', EXIT.invalid, 'Invalid step: the message is empty after templating', {
      durationMs: elapsed(),
    });
  const outcome = await deps.invokeAgent({
    orgId: ctx.orgId,
    agentId: def.agentId,
    message: text,
    signal: deps.signal,
  });
  if (deps.signal?.aborted) return stoppedByRun(deps.signal, elapsed());
  if (outcome.kind === 'refused')
    return failed('FAILED', EXIT.invalid, `Agent step cannot run: ${outcome.message}`, { durationMs: elapsed() });
  const transcript = {
    agentId: def.agentId,
    chatId: outcome.chatId,
    turnId: outcome.turnId,
    ok: outcome.kind === 'ok',
    messages: outcome.messages,
  };
  const files = [
    {
      fileName: 'agent-turn.json',
      mimeType: 'application/json',
      data: Buffer.from(JSON.stringify(transcript, null, 2)),
    },
  ];
  if (outcome.kind === 'failed')
    return failed('FAILED', EXIT.error, `Agent turn failed (${outcome.error}): ${outcome.message}`, {
      durationMs: elapsed(),
      extra: {
        files,
      },
    });
  const base = { status: 'COMPLETE' as const, exitCode: EXIT.ok, durationMs: elapsed(), files, logs: [] };
  const result = outcome.output ? JSON.stringify(outcome.output) : outcome.reply;
  if (Buffer.byteLength(result) > MAX_RESULT_BYTES)
    return failed('FAILED', EXIT.error, `The agent reply is larger than ${MAX_RESULT_BYTES} bytes`, {
      durationMs: elapsed(),
      extra: {
        files,
      },
    });
  return { ...base, resultType: outcome.output ? 'json' : 'markdown', result };
}
