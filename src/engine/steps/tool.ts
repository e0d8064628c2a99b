/**
 * `tool` steps (schema toolStep; src/engine/README.md: "an MCP tool through the gateway"): the step's
 * `arguments` and `PCID` are templated against {inputs, steps}, then the tool is called
 * in-process through the gateway as the run's organisation — the same catalogue, PCID rules
 * and upstream sessions as `{mcp_url}/<server>`.
 * - structuredContent → json result; otherwise the text blocks joined → plaintext.
 * - A tool's own failure (`isError`) → FAILED, exit code 1, with its text.
 * - A gateway error (unknown server or tool, invalid arguments, PCID problems, upstream
 *   timeout) → FAILED, exit code 1, `Tool call failed: <message> (JSON-RPC <code>)`.
 */
import type { WorkflowStep } from '../definition.js';
import { renderTemplates, TemplateError } from '../template.js';
import { templateData } from './context.js';
import { EXIT, failed, stoppedByRun, type ExecutedStep, type StepDeps, type StepRunContext } from './types.js';

const MAX_RESULT_BYTES = 1024 * 1024;

function textOf(content: Array<{ type: string; [k: string]: unknown }>): string {
  return content
    .filter((c) => c.type === 'text' && typeof c.text === 'string')
    .map((c) => c.text as string)
    .join('\n');
}

function bounded(text: string): string {
  return Buffer.byteLength(text) > MAX_RESULT_BYTES
    ? `${Buffer.from(text).subarray(0, MAX_RESULT_BYTES).toString('utf8')}…`
    : text;
}

export async function runToolStep(step: WorkflowStep, ctx: StepRunContext, deps: StepDeps): Promise<ExecutedStep> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  if (!deps.callTool || !ctx.orgId)
    return failed(
      'FAILED',
      EXIT.invalid,
      'Invalid step: tool steps need the gateway, which this worker was started without',
      { durationMs: 0 },
    );
  const def = step as WorkflowStep & {
    server: string;
    tool: string;
    arguments?: Record<string, unknown>;
    PCID?: string;
  };
  let args: Record<string, unknown>;
  try {
    args = (await renderTemplates(def.arguments ?? {}, templateData(ctx))) as Record<string, unknown>;
    if (def.PCID !== undefined) args = { ...args, PCID: await renderTemplates(def.PCID, templateData(ctx)) };
  } catch (err) {
    if (err instanceof TemplateError)
      return failed('FAILED', EXIT.invalid, `Invalid step: ${err.message}`, { durationMs: elapsed() });
    throw err;
  }
  try {
    const result = await deps.callTool({
      orgId: ctx.orgId,
      server: def.server,
      tool: def.tool,
      arguments: args,
      signal: deps.signal,
    });
    if (deps.signal?.aborted) return stoppedByRun(deps.signal, elapsed());
    if (result.isError)
      return failed(
        'FAILED',
        EXIT.error,
        bounded(textOf(result.content) || JSON.stringify(result.structuredContent ?? {})),
        { durationMs: elapsed() },
      );
    const base = { status: 'COMPLETE' as const, exitCode: EXIT.ok, durationMs: elapsed(), files: [], logs: [] };
    if (result.structuredContent)
      return { ...base, resultType: 'json', result: bounded(JSON.stringify(result.structuredContent)) };
    return { ...base, resultType: 'plaintext', result: bounded(textOf(result.content)) };
  } catch (err) {
    if (deps.signal?.aborted) return stoppedByRun(deps.signal, elapsed());
    const code = (err as { code?: unknown }).code;
    const suffix = typeof code === 'number' ? ` (JSON-RPC ${code})` : '';
    return failed('FAILED', EXIT.error, `Tool call failed: ${(err as Error).message}${suffix}`, {
      durationMs: elapsed(),
    });
  }
}
