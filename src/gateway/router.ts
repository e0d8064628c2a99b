/**
 * JSON-RPC 2.0 router of the tool gateway (spec section 7). Parsed messages go straight to a
 * prepared table of ToolServers — no McpServer is built per request, so a call pays for its tool,
 * not for setting up a server (bench/gateway.ts); the MCP SDK provides the protocol versions and
 * the upstream client.
 * Methods: initialize, ping, tools/list, tools/call; notifications are accepted and need no
 * answer. Codes: validation/timeout -32000, internal -32603, plus -32700/-32600/-32601/-32602.
 */
import { JSONRPCErrorException, JSONRPCServer, createJSONRPCErrorResponse, type JSONRPCID } from 'json-rpc-2.0';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { isAppError } from '../errors/index.js';
import type { Logger } from '../config/logger.js';
import { GatewayError, RPC, type GatewayContext, type ToolCallObserver, type ToolServer } from './types.js';
import { tracedToolCall } from './traced.js';

export interface RpcCall {
  ctx: GatewayContext;
  server: ToolServer;
}

const VERSION = '0.1.0';
/** Requests per batch (openapi/gateway.yaml): a bigger batch is refused whole with -32600. */
export const MAX_BATCH = 100;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function initialize(params: unknown, { server }: RpcCall): Record<string, unknown> {
  const requested = isObject(params) && typeof params.protocolVersion === 'string' ? params.protocolVersion : undefined;
  return {
    protocolVersion: requested && SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION,
    capabilities: { tools: { listChanged: false } },
    serverInfo: { name: `switchyard/${server.path}`, title: server.name, version: VERSION },
    instructions: server.description,
  };
}

async function callTool(params: unknown, { ctx, server }: RpcCall, observer?: ToolCallObserver): Promise<unknown> {
  if (!isObject(params) || typeof params.name !== 'string' || params.name === '') {
    throw new GatewayError(RPC.INVALID_PARAMS, 'tools/call needs params.name (the tool name)', {
      error: 'invalid_params',
    });
  }
  const args = params.arguments ?? {};
  if (!isObject(args))
    throw new GatewayError(RPC.INVALID_PARAMS, 'tools/call params.arguments must be an object', {
      error: 'invalid_params',
    });
  const result = await tracedToolCall(server, ctx, { tool: params.name, args });
  observer?.toolCalled(ctx, { server: server.path, tool: params.name, ok: !result.isError });
  return result;
}

export class GatewayRouter {
  private readonly rpc: JSONRPCServer<RpcCall>;

  /** `observer` hears of each tools/call that returned (discovery's learning from use). */
  constructor(
    private readonly log: Logger,
    observer?: ToolCallObserver,
  ) {
    this.rpc = new JSONRPCServer<RpcCall>({ errorListener: () => undefined });
    this.rpc.mapErrorToJSONRPCErrorResponse = (id, error) => this.toErrorResponse(id, error);
    this.rpc.addMethod('initialize', initialize);
    this.rpc.addMethod('ping', () => ({}));
    this.rpc.addMethod('tools/list', async (_params: unknown, { ctx, server }: RpcCall) => ({
      tools: await server.listTools(ctx),
    }));
    this.rpc.addMethod('tools/call', (params: unknown, call: RpcCall) => callTool(params, call, observer));
  }

  /**
   * Answers one message or a batch; null when nothing needs an answer (notifications only).
   * Notifications of any name are accepted (`notifications/initialized`, `…/cancelled`).
   */
  async handle(payload: unknown, call: RpcCall): Promise<unknown> {
    const messages = Array.isArray(payload) ? payload : [payload];
    if (messages.length > 0 && messages.every(isNotificationOrResponse)) return null;
    if (Array.isArray(payload)) {
      if (payload.length === 0)
        return createJSONRPCErrorResponse(null, RPC.INVALID_REQUEST, 'An empty batch is not a valid request');
      if (payload.length > MAX_BATCH)
        return createJSONRPCErrorResponse(null, RPC.INVALID_REQUEST, `A batch holds at most ${MAX_BATCH} messages`);
      const answers = await this.rpc.receive(payload.filter((m) => !isNotificationOrResponse(m)) as never[], call);
      return answers;
    }
    return this.rpc.receive(payload as never, call);
  }

  private toErrorResponse(id: JSONRPCID, error: unknown) {
    if (error instanceof GatewayError) return createJSONRPCErrorResponse(id, error.code, error.message, error.data);
    if (isAppError(error) && error.status < 500)
      return createJSONRPCErrorResponse(id, error.rpc, error.message, { error: error.code });
    if (error instanceof JSONRPCErrorException)
      return createJSONRPCErrorResponse(id, error.code, error.message, error.data);
    this.log.error({ err: error }, 'gateway call failed');
    return createJSONRPCErrorResponse(id, RPC.INTERNAL, 'Internal error', { error: 'internal_error' });
  }
}

/** A message without a method (a response) or without an id (a notification) gets no answer. */
function isNotificationOrResponse(m: unknown): boolean {
  if (!isObject(m) || m.jsonrpc !== '2.0') return false;
  if (typeof m.method === 'string') return !('id' in m);
  return 'result' in m || 'error' in m;
}
