/**
 * Workflow `tool` steps call tools in-process, as the run's organisation, through the same
 * catalogue as `{mcp_url}/<server>` (PCID rules, upstream sessions and all). No headers are
 * forwarded: a workflow run has no caller whose `X-Pf-Forward-*` headers could apply.
 */
import type { ToolCaller } from '../engine/index.js';
import type { Services } from '../services.js';
import type { GatewayContext } from './types.js';

const NEVER = new AbortController().signal;

export function toolCaller(services: Services): ToolCaller {
  return async (call) => {
    const ctx: GatewayContext = {
      services,
      log: services.log,
      orgId: call.orgId,
      forwardedHeaders: {},
      signal: call.signal ?? NEVER,
    };
    const server = await services.gateway.catalog.require(ctx, call.server);
    return server.callTool(ctx, call.tool, call.arguments);
  };
}
