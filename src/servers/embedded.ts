/**
 * Tool tables of the embedded servers, built once from the generated schemas
 * (schemas/tools → generated/tools/servers.ts), and argument validation with the generated
 * standalone validators. Invalid arguments are a validation error: JSON-RPC -32000
 * (spec Errors, "Tool gateway | validation").
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import { toolServers } from '../../generated/tools/servers.js';
import * as validators from '../../generated/validators/schemas.js';
import { GatewayError, RPC, type JsonSchemaObject, type ToolDef } from '../gateway/types.js';

export interface EmbeddedTool {
  def: ToolDef;
  validate: ValidateFunction;
}

type Descriptor = (typeof toolServers)[number];

const byTitle = validators as unknown as Record<string, ValidateFunction | undefined>;

function toolOf(t: Descriptor['tools'][number]): EmbeddedTool {
  const validate = byTitle[t.inputTitle];
  if (!validate) throw new Error(`no generated validator for ${t.inputTitle}`);
  const def: ToolDef = {
    name: t.name,
    description: t.description,
    inputSchema: t.inputSchema as unknown as JsonSchemaObject,
    outputSchema: t.outputSchema as unknown as JsonSchemaObject,
  };
  if ('title' in t && typeof t.title === 'string') def.title = t.title;
  if ('annotations' in t) def.annotations = t.annotations as Record<string, unknown>;
  return { def, validate };
}

/** The generated descriptor of one schemas/tools server. */
export function describedServer(path: string): { name: string; description: string; embedded: boolean; tools: Map<string, EmbeddedTool> } {
  const d = toolServers.find((s) => s.path === path);
  if (!d) throw new Error(`schemas/tools has no server ${path}`);
  return { name: d.name, description: d.description, embedded: d.embedded, tools: new Map(d.tools.map((t) => [t.name, toolOf(t)])) };
}

function describe(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? []).slice(0, 5).map((e) => {
    const at = e.instancePath || '/';
    if (e.keyword === 'additionalProperties') return `${at} has unknown field "${String((e.params as { additionalProperty?: unknown }).additionalProperty)}"`;
    if (e.keyword === 'required') return `${at} is missing "${String((e.params as { missingProperty?: unknown }).missingProperty)}"`;
    return `${at} ${e.message ?? 'is invalid'}`;
  }).join('; ');
}

/** Checks a tool's arguments against its input schema. */
export function checkArguments(tool: EmbeddedTool, args: Record<string, unknown>): void {
  if (!tool.validate(args)) {
    throw new GatewayError(RPC.SERVER, `Invalid arguments for ${tool.def.name}: ${describe(tool.validate.errors)}`, { error: 'invalid_arguments' });
  }
}

/** A tool name the server does not have: -32602, as the MCP specification prescribes. */
export function unknownTool(path: string, name: string): GatewayError {
  return new GatewayError(RPC.INVALID_PARAMS, `Unknown tool "${name}" on server "${path}"`, { error: 'unknown_tool' });
}
