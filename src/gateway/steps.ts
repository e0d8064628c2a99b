/**
 * Workflow `tool` steps call tools in-process, as the run's organisation, through the same
 * catalogue as `{mcp_url}/<server>` (PCID rules, upstream sessions and all). No headers are
 * forwarded: a workflow run has no caller whose `X-Pf-Forward-*` headers could apply.
 */
import type { ToolCaller } from '../engine/index.js';
import type { GatewayCatalog } from './catalog.js';
import type { GatewayContext, GatewayServices } from './types.js';
import { tracedToolCall } from './traced.js';

const NEVER = new AbortController().signal;

/** A gateway call's services, and the catalogue the step's server is required from (unknown → a typed error). */
export interface ToolCallerDeps extends GatewayServices {
  gateway: { catalog: Pick<GatewayCatalog, 'require'> };
}

export function toolCaller(services: ToolCallerDeps): ToolCaller {
  return async (call) => {
    const { db, config, log } = services;
    const ctx: GatewayContext = {
      services: { db, config, log },
      log,
      orgId: call.orgId,
      forwardedHeaders: {},
      signal: call.signal ?? NEVER,
    };
    const server = await services.gateway.catalog.require(ctx, call.server);
    return tracedToolCall(server, ctx, { tool: call.tool, args: call.arguments });
  };
}
