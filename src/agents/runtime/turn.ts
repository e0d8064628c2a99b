/**
 * One agent turn: the model reads the instructions, the chat history and the new message,
 * calls the agent's tools as it needs (each result fed back), and answers. Bounded by a step
 * limit (model calls per turn) and a time limit. With an output schema the final answer must
 * be a JSON object valid against it (ajv): an invalid answer is sent back once with the
 * validation errors, then the turn fails with a clear error.
 *
 * The schema reaches the model in the system prompt always, and also as the request's native
 * response format where the provider takes one (providers.ts StructuredOutputMode): the prompt
 * keeps a server that ignores `response_format` answering JSON all the same.
 */
import {
  generateText,
  jsonSchema,
  Output,
  stepCountIs,
  streamText,
  type LanguageModel,
  type ModelMessage,
  type ToolSet,
} from 'ai';
import type { ErrorObject } from 'ajv';
import type { AgentConfig } from '../agents.js';
import { outputValidator } from '../validate.js';
import type { StructuredOutputMode } from './providers.js';
import { activeSpanRecording, withSpan } from '../../kernel/tracing.js';

export type TurnFailureCode = 'step_limit' | 'model_error' | 'invalid_output' | 'turn_timeout' | 'turn_cancelled';

export class TurnFailure extends Error {
  constructor(
    readonly code: TurnFailureCode,
    message: string,
    readonly messages: ModelMessage[] = [],
  ) {
    super(message);
    this.name = 'TurnFailure';
  }
}

export interface TurnInput {
  /** The organisation whose agent runs (its output schema's validator is memoised per organisation). */
  orgId: string;
  model: LanguageModel;
  config: AgentConfig;
  history: ModelMessage[];
  message: string;
  /** The channel caller's metadata (spec "Agent API channel": `sourceMetadata`). */
  sourceMetadata?: Record<string, unknown> | undefined;
  tools: ToolSet;
  /** How the output schema reaches the model: also as the native response format, or by the prompt only. */
  structuredOutput: StructuredOutputMode;
  maxSteps: number;
  /** Aborted by the turn's time limit (reason name TimeoutError) or by a cancellation. */
  signal: AbortSignal;
  onTextDelta?: ((delta: string) => void) | undefined;
}

export interface TurnResult {
  reply: string;
  output: Record<string, unknown> | null;
  /** The messages this turn adds to the history: the user message, then the model's and the tools'. */
  messages: ModelMessage[];
  steps: number;
}

function systemPrompt(config: AgentConfig, sourceMetadata: Record<string, unknown> | undefined): string {
  const parts = [config.instructions];
  if (config.outputSchema) {
    parts.push(
      `Answer with only a JSON object (no prose, no code fence) that is valid against this JSON Schema:\n${JSON.stringify(config.outputSchema)}`,
    );
  }
  if (sourceMetadata && Object.keys(sourceMetadata).length) {
    parts.push(`The caller sent this metadata with the message (sourceMetadata):\n${JSON.stringify(sourceMetadata)}`);
  }
  return parts.join('\n\n');
}

/** `json_schema.name` of the response format (OpenAI: 1 to 64 of a-z, A-Z, 0-9, _ and -). */
const OUTPUT_NAME = 'output';

type ProviderOptions = NonNullable<Parameters<typeof generateText>[0]['providerOptions']>;

/**
 * Non-strict: an output schema is any JSON Schema 2020-12 with an object root (optional
 * properties, patterns, formats), which strict mode refuses for most schemas; validity comes
 * from runTurn's own check and retry.
 */
const NOT_STRICT: ProviderOptions = {
  openaiCompatible: { strictJsonSchema: false },
  openai: { strictJsonSchema: false },
};

/**
 * The native structured-output request: every model call of the exchange carries the schema as
 * its response format (`response_format: {type: "json_schema", …}` on Chat Completions). The
 * answer is still read as plain text: the SDK's object output would fail the exchange on a
 * fenced or invalid answer instead of letting runTurn correct it, and would hold back streamed
 * text until it parses as JSON.
 */
function structured(input: TurnInput): { output?: ReturnType<typeof Output.text>; providerOptions?: ProviderOptions } {
  const schema = input.config.outputSchema;
  if (!schema || input.structuredOutput !== 'native') return {};
  const { $schema: _dialect, ...rest } = schema;
  const { responseFormat } = Output.object({ schema: jsonSchema(rest), name: OUTPUT_NAME });
  return { output: { ...Output.text(), responseFormat }, providerOptions: NOT_STRICT };
}

/** The JSON object of a structured answer; models sometimes wrap it in a code fence. */
function parseObject(text: string): unknown {
  const fenced = /^\s*```(?:json)?\s*([\s\S]*?)\s*```\s*$/i.exec(text);
  try {
    return JSON.parse(fenced ? fenced[1]! : text);
  } catch {
    return undefined;
  }
}

function describe(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? [])
    .slice(0, 10)
    .map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`)
    .join('; ');
}

function stopReason(signal: AbortSignal, steps: ModelMessage[]): TurnFailure {
  const reason = signal.reason as { name?: string } | undefined;
  if (reason?.name === 'TimeoutError')
    return new TurnFailure(
      'turn_timeout',
      'The agent turn reached its time limit (AGENT_TURN_TIMEOUT_MS) before the agent answered',
      steps,
    );
  return new TurnFailure('turn_cancelled', 'The agent turn was cancelled', steps);
}

function modelFailure(err: unknown, produced: ModelMessage[]): TurnFailure {
  const message = err instanceof Error ? err.message : String(err);
  return new TurnFailure('model_error', `The model call failed: ${message.slice(0, 500)}`, produced);
}

function stepLimit(input: TurnInput, produced: ModelMessage[]): TurnFailure {
  return new TurnFailure(
    'step_limit',
    `The agent reached its step limit (${input.maxSteps} model calls) while still calling tools, without a final answer (AGENT_MAX_STEPS)`,
    produced,
  );
}

/**
 * One model exchange (possibly several steps with tool calls). Streamed only when someone
 * reads the text as it comes (SSE); otherwise one JSON completion per step, which costs the
 * process far less than the stream machinery (bench/channel.ts).
 */
async function exchange(
  input: TurnInput,
  system: string,
  messages: ModelMessage[],
): Promise<{ text: string; messages: ModelMessage[]; steps: number }> {
  return input.onTextDelta ? streamed(input, system, messages) : whole(input, system, messages);
}

/**
 * The AI SDK's own spans (model calls, tool calls) under the turn's span when tracing is on;
 * prompts and answers are not recorded (tenant data).
 */
function telemetry(): { isEnabled: boolean; recordInputs: false; recordOutputs: false } {
  return { isEnabled: activeSpanRecording(), recordInputs: false, recordOutputs: false };
}

async function whole(
  input: TurnInput,
  system: string,
  messages: ModelMessage[],
): Promise<{ text: string; messages: ModelMessage[]; steps: number }> {
  let produced: ModelMessage[] = [];
  let result: Awaited<ReturnType<typeof generateText>>;
  try {
    result = await generateText({
      model: input.model,
      system,
      messages,
      tools: input.tools,
      ...structured(input),
      experimental_telemetry: telemetry(),
      stopWhen: stepCountIs(input.maxSteps),
      abortSignal: input.signal,
      maxRetries: 1,
      onStepFinish: (step) => {
        produced = step.response.messages as ModelMessage[];
      },
    });
  } catch (err) {
    if (input.signal.aborted) throw stopReason(input.signal, produced);
    throw modelFailure(err, produced);
  }
  const response = result.response.messages as ModelMessage[];
  if (result.finishReason === 'tool-calls') throw stepLimit(input, response);
  return { text: result.text, messages: response, steps: result.steps.length };
}

async function streamed(
  input: TurnInput,
  system: string,
  messages: ModelMessage[],
): Promise<{ text: string; messages: ModelMessage[]; steps: number }> {
  let produced: ModelMessage[] = [];
  let failure: unknown;
  const result = streamText({
    model: input.model,
    system,
    messages,
    tools: input.tools,
    ...structured(input),
    experimental_telemetry: telemetry(),
    stopWhen: stepCountIs(input.maxSteps),
    abortSignal: input.signal,
    maxRetries: 1,
    onStepFinish: (step) => {
      produced = step.response.messages as ModelMessage[];
    },
    onError: ({ error }) => {
      failure ??= error;
    },
  });
  try {
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta') input.onTextDelta?.(part.text);
      else if (part.type === 'error') failure ??= part.error;
    }
  } catch (err) {
    failure ??= err;
  }
  if (input.signal.aborted) throw stopReason(input.signal, produced);
  if (failure !== undefined) throw modelFailure(failure, produced);
  const steps = (await result.steps).length;
  const finish = await result.finishReason;
  const response = (await result.response).messages as ModelMessage[];
  if (finish === 'tool-calls') throw stepLimit(input, response);
  return { text: await result.text, messages: response, steps };
}

export function runTurn(input: TurnInput): Promise<TurnResult> {
  return withSpan('agent turn', {}, async (span) => {
    const result = await turn(input);
    if (span.isRecording()) span.setAttribute('switchyard.agent.steps', result.steps);
    return result;
  });
}

async function turn(input: TurnInput): Promise<TurnResult> {
  const system = systemPrompt(input.config, input.sourceMetadata);
  const user: ModelMessage = { role: 'user', content: input.message };
  const first = await exchange(input, system, [...input.history, user]).catch((err: unknown) => {
    if (err instanceof TurnFailure) throw new TurnFailure(err.code, err.message, [user, ...err.messages]);
    throw err;
  });
  const added: ModelMessage[] = [user, ...first.messages];
  if (!input.config.outputSchema) return { reply: first.text, output: null, messages: added, steps: first.steps };

  const validate = outputValidator(input.orgId, input.config.outputSchema);
  let text = first.text;
  let steps = first.steps;
  for (let attempt = 0; ; attempt++) {
    const parsed = parseObject(text);
    const ok = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) && validate(parsed);
    if (ok) return { reply: JSON.stringify(parsed), output: parsed as Record<string, unknown>, messages: added, steps };
    const problem = parsed === undefined ? 'it is not JSON' : describe(validate.errors) || 'it is not a JSON object';
    if (attempt >= 1)
      throw new TurnFailure(
        'invalid_output',
        `The agent's answer does not match its output schema after one retry: ${problem}`,
        added,
      );
    const correction: ModelMessage = {
      role: 'user',
      content: `Your answer is not valid against the output schema (${problem}). Answer again with only the JSON object.`,
    };
    added.push(correction);
    const again = await exchange(input, system, [...input.history, ...added]).catch((err: unknown) => {
      if (err instanceof TurnFailure) throw new TurnFailure(err.code, err.message, [...added, ...err.messages]);
      throw err;
    });
    added.push(...again.messages);
    text = again.text;
    steps += again.steps;
  }
}
