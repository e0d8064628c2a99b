/**
 * Tool tables of the embedded servers, built once from the generated schemas
 * (schemas/tools → generated/tools/servers.ts), argument validation with the generated
 * standalone validators, and dispatch to a server's typed handler map (`ToolHandlers`, one
 * handler per tool, typed from the tool's schemas). Invalid arguments are a validation error:
 * JSON-RPC -32000 (spec Errors, "Tool gateway | validation"). The validators fill no defaults
 * (codegen/validators.ts `newAjv`): a property with a schema `default` is optional in the
 * handler's input type, and the handler applies the default.
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import { toolServers, type EmbeddedServerPath, type ToolHandlers } from '../../generated/tools/servers.js';
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

/** A handler as the dispatcher calls it, once the tool name and the arguments have been checked. */
type CheckedHandler = (args: Record<string, unknown>, ctx: GatewayContext) => Promise<CallResult>;

export interface EmbeddedServerOptions {
  /**
   * What a handler's thrown error stands for: the tool's own failure (a result with
   * `isError: true`, e.g. `toolError`), or a protocol error it throws instead; `undefined`
   * rethrows the error as it is.
   */
  onError?: ((err: unknown) => CallResult | undefined) | undefined;
}

/**
 * An embedded server from its schemas/tools descriptor and its handler map: tools/list serves
 * the prepared table, an unknown tool is -32602, and arguments are validated against the tool's
 * input schema (-32000) before its handler sees them. The map must have exactly the tools of the
 * descriptor (the type says so; a map that does not is refused here too).
 */
export function embeddedServer<P extends EmbeddedServerPath>(
  path: P,
  handlers: ToolHandlers<P, GatewayContext>,
  opts: EmbeddedServerOptions = {},
): ToolServer {
  const described = describedServer(path);
  const names = Object.keys(handlers);
  const missing = [...described.tools.keys()].filter((n) => !names.includes(n));
  const extra = names.filter((n) => !described.tools.has(n));
  if (missing.length || extra.length)
    throw new Error(`handlers of ${path} do not match schemas/tools/${path}: missing [${missing}], extra [${extra}]`);
  // The one place a handler loses its types: the dispatcher has checked the name against the
  // descriptor and the arguments against that tool's input schema, which is the handler's input type.
  const checked = handlers as unknown as Readonly<Record<string, CheckedHandler>>;
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
      try {
        return await checked[name]!(args, ctx);
      } catch (err) {
        const failure = opts.onError?.(err);
        if (failure) return failure;
        throw err;
      }
    },
  };
}
