/**
 * Embedded server `gateway` (spec section 9): the fixed three-tool set for agents that cannot
 * add endpoints — `capabilities_discover` and `capability_details` (served by the discovery
 * server) and `gateway_invoke {server, tool, arguments}`, which reaches every tool of every
 * server. `arguments` may be a JSON string, parsed as real JSON (a string that is not the
 * JSON of an object is a -32000 validation error). PCID rules of application servers apply
 * unchanged, including injection of the only connected connection.
 */
import {
  GatewayError,
  RPC,
  jsonResult,
  type CallResult,
  type GatewayContext,
  type ToolCallObserver,
  type ToolServer,
  embeddedServer,
} from '../../gateway/index.js';
import type { ToolAnswer, ToolTypes } from '../../../generated/tools/servers.js';

type Tools = ToolTypes['gateway'];
type InvokeOutput = Tools['gateway_invoke']['output'];

/** The discovery tools whose copies the gateway serves (the discovery engine of svc-sidekick). */
export interface DiscoveryTools {
  discover(
    ctx: GatewayContext,
    args: Tools['capabilities_discover']['input'],
  ): Promise<Tools['capabilities_discover']['output']>;
  details(
    ctx: GatewayContext,
    args: Tools['capability_details']['input'],
  ): Promise<Tools['capability_details']['output']>;
}

export interface ServerResolver {
  /** The server at `path` for the caller's organisation; unknown → GatewayError -32000. */
  require(ctx: GatewayContext, path: string): Promise<ToolServer>;
}

/** `arguments` as validated (an object or the JSON text of one; absent is `{}`). */
function parseArguments(raw: Tools['gateway_invoke']['input']['arguments']): Record<string, unknown> {
  if (raw === undefined) return {};
  if (typeof raw !== 'string') return raw;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw new GatewayError(RPC.SERVER, `arguments is a string but not valid JSON: ${(err as Error).message}`, {
      error: 'invalid_arguments',
    });
  }
  if (!isObject(parsed)) {
    throw new GatewayError(RPC.SERVER, 'arguments must be a JSON object (or the JSON text of one)', {
      error: 'invalid_arguments',
    });
  }
  return parsed;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The object gateway_invoke answers for a result (schemas/tools/gateway/gateway_invoke.output). */
function outputOf(result: CallResult): InvokeOutput {
  if (result.structuredContent) return result.structuredContent;
  const first = result.content[0];
  if (first?.type === 'text' && typeof first.text === 'string') {
    try {
      const parsed: unknown = JSON.parse(first.text);
      if (isObject(parsed)) return parsed;
    } catch {
      // plain text: wrapped below
    }
  }
  return { content: result.content };
}

/** gateway_invoke's output is always an object; the target's failure stays its failure. */
function asInvokeResult(result: CallResult): ToolAnswer<InvokeOutput> {
  const { isError, ...rest } = result;
  const structuredContent = outputOf(result);
  if (isError) return { ...rest, structuredContent, isError };
  return { ...rest, structuredContent, ...(isError === false ? { isError } : {}) };
}

/** `observer` hears of gateway_invoke's inner call as a call of its target (discovery learns from it). */
export function createGatewayServer(
  discovery: DiscoveryTools,
  servers: ServerResolver,
  observer?: ToolCallObserver,
): ToolServer {
  return embeddedServer('gateway', {
    capabilities_discover: async (args, ctx) => jsonResult(await discovery.discover(ctx, args)),
    capability_details: async (args, ctx) => jsonResult(await discovery.details(ctx, args)),
    async gateway_invoke(args, ctx) {
      const { server: path, tool: name } = args;
      if (path === 'gateway' && name === 'gateway_invoke') {
        throw new GatewayError(RPC.SERVER, 'gateway_invoke cannot invoke itself', { error: 'invalid_arguments' });
      }
      const target = await servers.require(ctx, path);
      const result = await target.callTool(ctx, name, parseArguments(args.arguments));
      observer?.toolCalled(ctx, { server: path, tool: name, ok: !result.isError });
      return asInvokeResult(result);
    },
  });
}
