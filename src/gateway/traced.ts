/**
 * A tool call in its span (`tools/call`), for MCP callers (router.ts) and workflow `tool` steps
 * (steps.ts) alike. The span names the server path and the tool, never the arguments.
 */
import { markSpanError, withSpan } from '../kernel/tracing.js';
import type { CallResult, GatewayContext, ToolServer } from './types.js';

export function tracedToolCall(
  server: ToolServer,
  ctx: GatewayContext,
  call: { tool: string; args: Record<string, unknown> },
): Promise<CallResult> {
  return withSpan('tools/call', {}, async (span) => {
    if (span.isRecording())
      span.setAttributes({
        'switchyard.org_id': ctx.orgId,
        'switchyard.gateway.server': server.path,
        'switchyard.gateway.tool': call.tool,
      });
    const result = await server.callTool(ctx, call.tool, call.args);
    if (result.isError) markSpanError(span, 'tool error');
    return result;
  });
}
