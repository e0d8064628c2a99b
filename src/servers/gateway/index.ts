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
  type CallResult,
  type GatewayContext,
  type ToolCallObserver,
  type ToolServer,
  embeddedServer,
} from '../../gateway/index.js';

export interface ServerResolver {
  /** The server at `path` for the caller's organisation; unknown → GatewayError -32000. */
  require(ctx: GatewayContext, path: string): Promise<ToolServer>;
}

function parseArguments(raw: unknown): Record<string, unknown> {
  if (raw === undefined) return {};
  if (typeof raw !== 'string') return raw as Record<string, unknown>;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw new GatewayError(RPC.SERVER, `arguments is a string but not valid JSON: ${(err as Error).message}`, {
      error: 'invalid_arguments',
    });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new GatewayError(RPC.SERVER, 'arguments must be a JSON object (or the JSON text of one)', {
      error: 'invalid_arguments',
    });
  }
  return parsed as Record<string, unknown>;
}

/** gateway_invoke's output is always an object (schemas/tools/gateway/gateway_invoke.output). */
function asInvokeResult(result: CallResult): CallResult {
  if (result.structuredContent) return result;
  const first = result.content[0];
  if (first?.type === 'text' && typeof first.text === 'string') {
    try {
      const parsed: unknown = JSON.parse(first.text);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
        return { ...result, structuredContent: parsed as Record<string, unknown> };
    } catch {
      // plain text: wrapped below
    }
  }
  return { ...result, structuredContent: { content: result.content } };
}

/** `observer` hears of gateway_invoke's inner call as a call of its target (discovery learns from it). */
export function createGatewayServer(
  discovery: ToolServer,
  servers: ServerResolver,
  observer?: ToolCallObserver,
): ToolServer {
  return embeddedServer('gateway', async (ctx, tool, args) => {
    if (tool.name !== 'gateway_invoke') return discovery.callTool(ctx, tool.name, args);
    const { server: path, tool: name } = args as { server: string; tool: string };
    if (path === 'gateway' && name === 'gateway_invoke') {
      throw new GatewayError(RPC.SERVER, 'gateway_invoke cannot invoke itself', { error: 'invalid_arguments' });
    }
    const target = await servers.require(ctx, path);
    const result = await target.callTool(ctx, name, parseArguments(args.arguments));
    observer?.toolCalled(ctx, { server: path, tool: name, ok: !result.isError });
    return asInvokeResult(result);
  });
}
