/**
 * Shared set-up of the gateway tests: a real server on loopback, an organisation with a
 * runtime token, JSON-RPC over fetch, and the MCP SDK client on a server path.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { call, type JsonResponse, type TestOrg, type TestServer } from '../../helpers/server.js';

export const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

let nextId = 1;

/** One JSON-RPC request to `{mcp_url}/<path>`. */
export function rpc(
  server: TestServer,
  token: string | undefined,
  path: string,
  method: string,
  params?: unknown,
  headers: Record<string, string> = {},
): Promise<JsonResponse<any>> {
  return call(server.baseUrl, 'POST', `/mcp/${path}`, {
    token,
    headers: { ...JSON_HEADERS, ...headers },
    raw: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }),
  });
}

/** tools/call; answers the JSON-RPC `result` or `error` object. */
export async function callTool(
  server: TestServer,
  token: string,
  path: string,
  name: string,
  args: unknown,
  headers: Record<string, string> = {},
): Promise<any> {
  const res = await rpc(server, token, path, 'tools/call', { name, arguments: args }, headers);
  return res.body.result ?? res.body.error;
}

/** The MCP SDK client (Streamable HTTP) connected to one server path with the org's token. */
export async function sdkClient(
  server: TestServer,
  org: TestOrg,
  path: string,
  headers: Record<string, string> = {},
): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${server.baseUrl}/mcp/${path}`), {
    requestInit: { headers: { authorization: `Bearer ${org.token}`, ...headers } },
  });
  const client = new Client({ name: 'switchyard-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

/** Registers an application server through the management API. */
export async function registerServer(server: TestServer, org: TestOrg, body: Record<string, unknown>): Promise<any> {
  const res = await call(server.baseUrl, 'POST', '/v1/servers', { token: org.token, body });
  if (res.status !== 201) throw new Error(`register server: ${res.status} ${res.text}`);
  return res.body;
}

/** Creates a connection (PCID) through the management API. */
export async function createConnection(
  server: TestServer,
  org: TestOrg,
  body: Record<string, unknown>,
): Promise<string> {
  const res = await call<{ id: string }>(server.baseUrl, 'POST', '/v1/connections', {
    token: org.token,
    body: { secret: 'sekret', ...body },
  });
  if (res.status !== 201) throw new Error(`create connection: ${res.status} ${res.text}`);
  return res.body.id;
}
