/**
 * Checks of an agent's configuration that its JSON Schema cannot express (schemas/tools/
 * agent-management): every server path exists for the organisation, allow-listed tools exist
 * on embedded servers, the model names a known provider, and the output schema compiles with
 * an object root (openapi/triggers.yaml AgentChannelJsonOutput: always a JSON object).
 * Application servers' tool names are not checked here: that would contact the upstream on
 * every save; an unknown name simply never matches (the turn's tool list shows what matched).
 */
import type { ValidateFunction } from 'ajv';
import { OrgMemo } from '../kernel/org-memo.js';
import { compileOwnSchema } from '../kernel/own-schemas.js';
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

/**
 * Compiled output schemas per organisation and schema text: another organisation's identical
 * schema is compiled again, so no organisation can tell by a turn's timing what others use.
 */
const compiled = new OrgMemo<ValidateFunction>(500);

/** An output schema compiled alone (kernel/own-schemas.ts); throws AgentConfigError when unusable. */
function compileOutputSchema(schema: Record<string, unknown>): ValidateFunction {
  const { $schema: _ignored, ...rest } = schema;
  try {
    return compileOwnSchema(rest, { formats: true });
  } catch (err) {
    throw new AgentConfigError('outputSchema', `outputSchema is not a valid JSON Schema: ${(err as Error).message}`);
  }
}

/** The organisation's validator of an agent's output schema (memoised); throws AgentConfigError when unusable. */
export function outputValidator(orgId: string, schema: Record<string, unknown>): ValidateFunction {
  return compiled.get(orgId, JSON.stringify(schema), () => compileOutputSchema(schema));
}

/** A check on save (and in the CLI): the schema compiles; nothing is kept. */
export function checkOutputSchema(schema: Record<string, unknown> | null | undefined): void {
  if (schema === null || schema === undefined) return;
  if (schema.type !== 'object')
    throw new AgentConfigError('outputSchema', 'outputSchema must describe a JSON object (type: "object" at its root)');
  compileOutputSchema(schema);
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
