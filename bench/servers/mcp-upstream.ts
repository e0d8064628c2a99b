/**
 * A fast local upstream MCP server for the proxy benchmark: the MCP SDK's Streamable HTTP
 * transport in stateful mode (one server per session, JSON responses), with a trivial `echo`
 * tool. Prints its URL on the first stdout line.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

const sessions = new Map<string, StreamableHTTPServerTransport>();

function build(): McpServer {
  const server = new McpServer({ name: 'bench-upstream', version: '1.0.0' });
  server.registerTool('echo', { description: 'Echoes a message.', inputSchema: { message: z.string() } }, async ({ message }) => ({
    content: [{ type: 'text', text: JSON.stringify({ echo: message }) }],
    structuredContent: { echo: message },
  }));
  return server;
}

async function readBody(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
}

const httpServer = http.createServer((req, res) => {
  void (async () => {
    const body = req.method === 'POST' ? await readBody(req) : undefined;
    const sid = req.headers['mcp-session-id'];
    const existing = typeof sid === 'string' ? sessions.get(sid) : undefined;
    if (existing) return existing.handleRequest(req, res, body);
    if (req.method === 'POST' && isInitializeRequest(body)) {
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (id) => { sessions.set(id, transport); },
      });
      await build().connect(transport);
      return transport.handleRequest(req, res, body);
    }
    res.writeHead(typeof sid === 'string' ? 404 : 400).end();
  })().catch(() => { if (!res.headersSent) res.writeHead(500); res.end(); });
});
httpServer.listen(0, '127.0.0.1', () => {
  const { port } = httpServer.address() as { port: number };
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${port}/mcp` }) + '\n');
});
process.on('SIGTERM', () => httpServer.close(() => process.exit(0)));
