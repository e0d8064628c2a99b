/**
 * Tool tables of the embedded servers, built once from the generated schemas
 * (schemas/tools → generated/tools/servers.ts), and argument validation with the generated
 * standalone validators. Invalid arguments are a validation error: JSON-RPC -32000
 * (spec Errors, "Tool gateway | validation").
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import { toolServers } from '../../generated/tools/servers.js';
import * as validators from '../../generated/validators/schemas.js';
import {
  GatewayError,
  RPC,
  type CallResult,
  type GatewayContext,
  type JsonSchemaObject,
  type ToolDef,
  type ToolServer,
} from './types.js';

export interface EmbeddedTool {
  def: ToolDef;
  validate: ValidateFunction;
}

type Descriptor = (typeof toolServers)[number];

const byTitle = validators as unknown as Record<string, ValidateFunction | undefined>;

/** Tool tables are shared by every call (no copy per tools/list): frozen so no caller can change them. */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

function toolOf(t: Descriptor['tools'][number]): EmbeddedTool {
  const validate = byTitle[t.inputTitle];
  if (!validate) throw new Error(`no generated validator for ${t.inputTitle}`);
  const def: ToolDef = {
    name: t.name,
    description: t.description,
    // Spec "Tool server and tool": inputSchema has type, properties and required — always.
    inputSchema: {
      ...(t.inputSchema as unknown as JsonSchemaObject),
      properties: (t.inputSchema as { properties?: Record<string, unknown> }).properties ?? {},
      required: [...((t.inputSchema as { required?: readonly string[] }).required ?? [])],
    },
    outputSchema: t.outputSchema as unknown as JsonSchemaObject,
  };
  if ('title' in t && typeof t.title === 'string') def.title = t.title;
  if ('annotations' in t) def.annotations = t.annotations as Record<string, unknown>;
  return { def: deepFreeze(def), validate };
}

/** The generated descriptor of one schemas/tools server. */
export function describedServer(path: string): {
  name: string;
  description: string;
  embedded: boolean;
  tools: Map<string, EmbeddedTool>;
  defs: ToolDef[];
} {
  const d = toolServers.find((s) => s.path === path);
  if (!d) throw new Error(`schemas/tools has no server ${path}`);
  const tools = new Map(d.tools.map((t) => [t.name, toolOf(t)]));
  return {
    name: d.name,
    description: d.description,
    embedded: d.embedded,
    tools,
    defs: [...tools.values()].map((t) => t.def),
  };
}

/** `/types/0` → `types[0]`; the root is `arguments`. */
function fieldOf(e: ErrorObject): string {
  const parts = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (e.keyword === 'required') parts.push(String((e.params as { missingProperty: string }).missingProperty));
  if (e.keyword === 'additionalProperties')
    parts.push(String((e.params as { additionalProperty: string }).additionalProperty));
  if (parts.length === 0) return 'arguments';
  return parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
}

function messageOf(e: ErrorObject): string {
  switch (e.keyword) {
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return 'is not a known argument';
    case 'enum':
      return `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
    default:
      return e.message ?? 'is invalid';
  }
}

/** Validates a tool's arguments or throws GatewayError(-32000) listing every problem, field first. */
export function checkWith<T>(validate: ValidateFunction, tool: string, args: unknown): T {
  if (validate(args)) return args as T;
  const errors = (validate.errors ?? []).map((e) => ({ field: fieldOf(e), message: messageOf(e) }));
  const unique = [...new Map(errors.map((e) => [`${e.field} ${e.message}`, e])).values()];
  const text = unique.map((e) => `\`${e.field}\` ${e.message}`).join('; ') || 'arguments are invalid';
  throw new GatewayError(RPC.SERVER, `Invalid arguments for ${tool}: ${text}`, {
    error: 'invalid_arguments',
    errors: unique,
  });
}

/** Checks a tool's arguments against its input schema. */
export function checkArguments(tool: EmbeddedTool, args: Record<string, unknown>): void {
  checkWith(tool.validate, tool.def.name, args);
}

/** The tool definitions of a described server (shared, read-only objects). */
export function toolDefsOf(path: string): ToolDef[] {
  return describedServer(path).defs;
}

/** A tool name the server does not have: -32602, as the MCP specification prescribes. */
export function unknownTool(path: string, name: string): GatewayError {
  return new GatewayError(RPC.INVALID_PARAMS, `Unknown tool "${name}" on server "${path}"`, { error: 'unknown_tool' });
}

/**
 * An embedded server from its schemas/tools descriptor: tools/list serves the prepared table,
 * an unknown tool is -32602, and arguments are validated (-32000) before `run` sees them.
 */
export function embeddedServer(
  path: string,
  run: (ctx: GatewayContext, tool: ToolDef, args: Record<string, unknown>) => Promise<CallResult>,
): ToolServer {
  const described = describedServer(path);
  return {
    path,
    name: described.name,
    description: described.description,
    embedded: true,
    listTools: () => Promise.resolve(described.defs),
    async callTool(ctx, name, args) {
      const tool = described.tools.get(name);
      if (!tool) throw unknownTool(path, name);
      checkArguments(tool, args);
      return run(ctx, tool.def, args);
    },
  };
}
