/**
 * Calls to the tool gateway (spec 7: JSON-RPC 2.0 over `POST /mcp/<server path>` with the
 * runtime token). A JSON-RPC error is thrown as an ApiFailure with its code and message; a
 * tool's own failure (`isError`) too, with the text it returned.
 */
import { api, ApiFailure, unwrap } from './api.ts';

interface RpcAnswer {
  result?: {
    structuredContent?: unknown;
    content?: { type: string; text?: string }[];
    isError?: boolean;
    tools?: unknown;
  };
  error?: { code: number; message: string; data?: { error?: string } };
}

let nextId = 1;

async function rpc(serverPath: string, method: string, params: Record<string, unknown>): Promise<RpcAnswer['result']> {
  const answer = (await unwrap(
    api.POST('/mcp/{serverPath}', {
      params: { path: { serverPath } },
      headers: { Accept: 'application/json' },
      // `params` is an object without declared properties in the bundle (JsonRpcMessage), which
      // openapi-typescript types as an object that holds nothing.
      body: { jsonrpc: '2.0', id: nextId++, method, params: params as Record<string, never> },
    }),
  )) as RpcAnswer;
  if (answer.error) {
    const e = answer.error;
    throw new ApiFailure(200, e.data?.error ?? `jsonrpc_${e.code}`, `${e.message} (JSON-RPC ${e.code})`);
  }
  return answer.result;
}

export interface McpTool {
  name: string;
  description?: string;
  inputSchema?: unknown;
}

export async function listTools(serverPath: string): Promise<McpTool[]> {
  const result = await rpc(serverPath, 'tools/list', {});
  return (result?.tools as McpTool[] | undefined) ?? [];
}

/** A tool's structured result, or the JSON of its first text content. */
export async function callTool<T>(serverPath: string, name: string, args: Record<string, unknown>): Promise<T> {
  const result = await rpc(serverPath, 'tools/call', { name, arguments: args });
  const text = result?.content?.find((c) => c.type === 'text')?.text;
  if (result?.isError) throw new ApiFailure(200, 'tool_error', text ?? `The tool ${name} failed`);
  if (result?.structuredContent !== undefined) return result.structuredContent as T;
  return JSON.parse(text ?? 'null') as T;
}
