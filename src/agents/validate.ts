/**
 * Checks of an agent's configuration that its JSON Schema cannot express (schemas/tools/
 * agent-management): every server path exists for the organisation, allow-listed tools exist
 * on embedded servers, the model names a known provider, and the output schema compiles with
 * an object root (openapi/triggers.yaml AgentChannelJsonOutput: always a JSON object).
 * Application servers' tool names are not checked here: that would contact the upstream on
 * every save; an unknown name simply never matches (the turn's tool list shows what matched).
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import type { GatewayCatalog, GatewayContext, GatewayServices } from '../gateway/index.js';
import type { ServerRef } from './agents.js';

export const MODEL_PATTERN = /^(openai-compatible|openai|anthropic|google)\/.+$/;

export class AgentConfigError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = 'AgentConfigError';
  }
}

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats.default(ajv);
const compiled = new Map<string, ValidateFunction>();

/** Compiles (and memoises by text) an agent's output schema; throws AgentConfigError when unusable. */
export function outputValidator(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  let fn = compiled.get(key);
  if (!fn) {
    const { $schema: _ignored, ...rest } = schema;
    try {
      fn = ajv.compile(rest);
    } catch (err) {
      throw new AgentConfigError('outputSchema', `outputSchema is not a valid JSON Schema: ${(err as Error).message}`);
    }
    if (compiled.size > 500) compiled.clear();
    compiled.set(key, fn);
  }
  return fn;
}

export function checkOutputSchema(schema: Record<string, unknown> | null | undefined): void {
  if (schema === null || schema === undefined) return;
  if (schema.type !== 'object')
    throw new AgentConfigError('outputSchema', 'outputSchema must describe a JSON object (type: "object" at its root)');
  outputValidator(schema);
}

export function checkModel(model: string | null | undefined): void {
  if (model === null || model === undefined) return;
  if (!MODEL_PATTERN.test(model))
    throw new AgentConfigError(
      'model',
      `model must be provider/model with provider openai-compatible, openai, anthropic or google, got "${model}"`,
    );
}

/** A gateway call's services, with the catalogue the server paths are looked up in. */
export interface AgentConfigCheckDeps extends GatewayServices {
  gateway: { catalog: Pick<GatewayCatalog, 'resolve'> };
}

export async function checkServers(
  services: AgentConfigCheckDeps,
  orgId: string,
  servers: ServerRef[] | undefined,
): Promise<void> {
  if (!servers) return;
  const seen = new Set<string>();
  const { db, config, log } = services;
  const ctx: GatewayContext = {
    services: { db, config, log },
    log,
    orgId,
    forwardedHeaders: {},
    signal: new AbortController().signal,
  };
  for (const [i, ref] of servers.entries()) {
    if (seen.has(ref.server))
      throw new AgentConfigError(`servers[${i}].server`, `server "${ref.server}" is listed twice`);
    seen.add(ref.server);
    const server = await services.gateway.catalog.resolve(ctx, ref.server);
    if (!server)
      throw new AgentConfigError(`servers[${i}].server`, `unknown server "${ref.server}": use a path from listServers`);
    if (!server.embedded || !ref.tools) continue;
    const names = new Set((await server.listTools(ctx)).map((t) => t.name));
    const missing = ref.tools.filter((t) => !names.has(t));
    if (missing.length)
      throw new AgentConfigError(
        `servers[${i}].tools`,
        `server "${ref.server}" has no tool ${missing.map((m) => `"${m}"`).join(', ')}`,
      );
  }
}

/** Every check of a create or a patch (fields absent from a patch are not checked). */
export async function checkAgentConfig(
  services: AgentConfigCheckDeps,
  orgId: string,
  input: {
    servers?: ServerRef[] | undefined;
    model?: string | null | undefined;
    outputSchema?: Record<string, unknown> | null | undefined;
  },
): Promise<void> {
  checkModel(input.model);
  checkOutputSchema(input.outputSchema);
  await checkServers(services, orgId, input.servers);
}
