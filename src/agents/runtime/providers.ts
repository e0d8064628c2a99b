/**
 * Model providers through the Vercel AI SDK: an agent's
 * model is `provider/model`; `DEFAULT_MODEL` serves agents that name none. Providers:
 * - `openai-compatible/<id>`: any OpenAI-compatible Chat Completions API by base URL (Ollama,
 *   vLLM, LM Studio, llama.cpp …): OPENAI_COMPATIBLE_BASE_URL (+ OPENAI_COMPATIBLE_API_KEY);
 * - `openai/<id>`: OPENAI_API_KEY (OPENAI_BASE_URL optional);
 * - `anthropic/<id>`: ANTHROPIC_API_KEY (ANTHROPIC_BASE_URL optional);
 * - `google/<id>`: GOOGLE_GENERATIVE_AI_API_KEY (or GEMINI_API_KEY).
 * A missing setting is a clear error naming it: never an invented answer.
 *
 * Structured output (an agent's `outputSchema`, runtime/turn.ts) goes natively as the request's
 * response format with `openai-compatible` (`response_format: {type: "json_schema"}`; off with
 * OPENAI_COMPATIBLE_STRUCTURED_OUTPUTS=false for a server that rejects or ignores it) and
 * `openai`. `anthropic` and `google` get the prompt instruction only: their JSON modes do not
 * combine reliably with the agent's own tool calls (Anthropic's falls back to a forced tool on
 * most models; Gemini models refuse a JSON response type next to function calling).
 */
import { wrapLanguageModel, type LanguageModel, type LanguageModelMiddleware } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import type { ModelConfig } from '../../config/index.js';
import { AppError } from '../../errors/index.js';
import { children, modelDuration, secondsSince } from '../../kernel/metrics.js';
import { tracedFetch } from '../../kernel/tracing.js';
import { OrgMemo } from '../../kernel/org-memo.js';

/** Model requests carry the trace context (traceparent) when tracing is on. */
const modelFetch = tracedFetch((input, init) => fetch(input, init));

const HOW_TO =
  'Set DEFAULT_MODEL (e.g. openai-compatible/llama3.1 with OPENAI_COMPATIBLE_BASE_URL=http://localhost:11434/v1 for Ollama, or openai/gpt-4o-mini with OPENAI_API_KEY) and restart; see the README "Agents" section';

function notConfigured(message: string): AppError {
  return new AppError('ERR_AGENT_MODEL_NOT_CONFIGURED', { message: `${message}. ${HOW_TO}.` });
}

/** How an agent's output schema reaches the model (runtime/turn.ts). */
export type StructuredOutputMode = 'native' | 'prompt';

export interface ResolvedModel {
  model: LanguageModel;
  modelId: string;
  structuredOutput: StructuredOutputMode;
}

/**
 * Provider instances per configuration, organisation and model name (they are stateless;
 * building them costs a little). Per organisation: a model name is the organisation's own
 * input, and a shared instance would let another organisation tell by timing which names are
 * in use. Bounded: any number of names can be asked for.
 */
const cache = new WeakMap<ModelConfig, OrgMemo<Omit<ResolvedModel, 'modelId'>>>();
const MODELS_PER_CONFIG = 1000;

function build(config: ModelConfig, provider: string, id: string): Omit<ResolvedModel, 'modelId'> {
  switch (provider) {
    case 'openai-compatible': {
      if (!config.openaiCompatibleBaseUrl)
        throw notConfigured(`The model "${provider}/${id}" needs OPENAI_COMPATIBLE_BASE_URL, which is not set`);
      const native = config.openaiCompatibleStructuredOutputs;
      const model = createOpenAICompatible({
        name: 'openai-compatible',
        baseURL: config.openaiCompatibleBaseUrl,
        fetch: modelFetch,
        ...(config.keys.openaiCompatible ? { apiKey: config.keys.openaiCompatible } : {}),
        includeUsage: true,
        // Without it the SDK would turn a response format with a schema into `json_object`.
        supportsStructuredOutputs: native,
      }).chatModel(id);
      return { model, structuredOutput: native ? 'native' : 'prompt' };
    }
    case 'openai':
      if (!config.keys.openai)
        throw notConfigured(`The model "${provider}/${id}" needs OPENAI_API_KEY, which is not set`);
      return {
        model: createOpenAI({
          apiKey: config.keys.openai,
          fetch: modelFetch,
          ...(config.openaiBaseUrl ? { baseURL: config.openaiBaseUrl } : {}),
        })(id),
        structuredOutput: 'native',
      };
    case 'anthropic':
      if (!config.keys.anthropic)
        throw notConfigured(`The model "${provider}/${id}" needs ANTHROPIC_API_KEY, which is not set`);
      return {
        model: createAnthropic({
          apiKey: config.keys.anthropic,
          fetch: modelFetch,
          ...(config.anthropicBaseUrl ? { baseURL: config.anthropicBaseUrl } : {}),
        })(id),
        structuredOutput: 'prompt',
      };
    case 'google':
      if (!config.keys.google)
        throw notConfigured(`The model "${provider}/${id}" needs GOOGLE_GENERATIVE_AI_API_KEY, which is not set`);
      return {
        model: createGoogleGenerativeAI({ apiKey: config.keys.google, fetch: modelFetch })(id),
        structuredOutput: 'prompt',
      };
    default:
      throw notConfigured(`Unknown model provider "${provider}" (use openai-compatible, openai, anthropic or google)`);
  }
}

const durationOf = children((provider, outcome) => modelDuration.labels(provider, outcome));
type StreamResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware['wrapStream']>>>;
type StreamPart = StreamResult['stream'] extends ReadableStream<infer P> ? P : never;

/**
 * The model with each provider request timed (`switchyard_agent_model_request_duration_seconds`,
 * labelled by provider: model names are the agents' choice). A streamed request is timed to the
 * end of its stream; one given up by its caller is not counted.
 */
function timed(model: LanguageModel, provider: string): LanguageModel {
  if (typeof model === 'string') return model;
  const observe = (outcome: string, started: number) => durationOf(provider, outcome).observe(secondsSince(started));
  const middleware: LanguageModelMiddleware = {
    specificationVersion: 'v3',
    async wrapGenerate({ doGenerate }) {
      const started = performance.now();
      try {
        const result = await doGenerate();
        observe('ok', started);
        return result;
      } catch (err) {
        observe('error', started);
        throw err;
      }
    },
    async wrapStream({ doStream }) {
      const started = performance.now();
      let result: StreamResult;
      try {
        result = await doStream();
      } catch (err) {
        observe('error', started);
        throw err;
      }
      let outcome = 'ok';
      const stream = result.stream.pipeThrough(
        new TransformStream<StreamPart, StreamPart>({
          transform(part, controller) {
            if (part.type === 'error') outcome = 'error';
            controller.enqueue(part);
          },
          flush: () => observe(outcome, started),
        }),
      );
      return { ...result, stream };
    },
  };
  return wrapLanguageModel({ model: model as Parameters<typeof wrapLanguageModel>[0]['model'], middleware });
}

/** The model an organisation's agent runs: its own `model`, else DEFAULT_MODEL. */
export function resolveModel(config: ModelConfig, orgId: string, agentModel: string | null): ResolvedModel {
  const modelId = agentModel ?? config.defaultModel;
  if (!modelId) throw notConfigured('This agent names no model and DEFAULT_MODEL is not set');
  const slash = modelId.indexOf('/');
  const provider = slash > 0 ? modelId.slice(0, slash) : '';
  const id = slash > 0 ? modelId.slice(slash + 1) : '';
  if (!provider || !id) throw notConfigured(`The model "${modelId}" is not provider/model`);
  let models = cache.get(config);
  if (!models) cache.set(config, (models = new OrgMemo(MODELS_PER_CONFIG)));
  const built = models.get(orgId, modelId, () => {
    const made = build(config, provider, id);
    return { ...made, model: timed(made.model, provider) };
  });
  return { ...built, modelId };
}
