/**
 * Tool calls counted in `switchyard_gateway_tool_calls_total` (src/kernel/metrics.ts): every
 * server the catalogue hands out is wrapped once, so calls from the MCP endpoint, workflow
 * `tool` steps, agent turns and gateway_invoke are all counted where they reach a server.
 * The `server` label is the built-in server's path, or `application` for every proxied
 * application server (their paths are chosen by tenants).
 */
import { gatewayToolCalls } from '../kernel/metrics.js';
import type { ToolServer } from './types.js';

export function metered(server: ToolServer, label: string): ToolServer {
  const ok = gatewayToolCalls.labels(label, 'ok');
  const toolError = gatewayToolCalls.labels(label, 'tool_error');
  const error = gatewayToolCalls.labels(label, 'error');
  for (const series of [ok, toolError, error]) series.inc(0);
  // Everything else of the server is inherited as it is (a class instance keeps its methods).
  const wrapped = Object.create(server) as ToolServer;
  wrapped.callTool = async (ctx, name, args) => {
    try {
      const result = await server.callTool(ctx, name, args);
      (result.isError ? toolError : ok).inc();
      return result;
    } catch (err) {
      error.inc();
      throw err;
    }
  };
  return wrapped;
}
