/**
 * A fast local upstream MCP server for the proxy benchmark: the MCP SDK's Streamable HTTP
 * transport in stateful mode (one server per session, JSON responses), with a trivial `echo`
 * tool. Prints its URL on the first stdout line.
 *
 * Memory stays flat however many calls a session takes: see releaseAnsweredJsonStreams.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

const sessions = new Map<string, StreamableHTTPServerTransport>();
const SESSION_NOT_FOUND = JSON.stringify({
  jsonrpc: '2.0',
  error: { code: -32001, message: 'Session not found' },
  id: null,
});

function build(): McpServer {
  const server = new McpServer({ name: 'bench-upstream', version: '1.0.0' });
  server.registerTool(
    'echo',
    { description: 'Echoes a message.', inputSchema: { message: z.string() } },
    async ({ message }) => ({
      content: [{ type: 'text', text: JSON.stringify({ echo: message }) }],
      structuredContent: { echo: message },
    }),
  );
  return server;
}

/** One pending POST of the SDK transport in JSON response mode (its private `_streamMapping` values). */
interface JsonStream {
  resolveJson?: (response: unknown) => void;
  cleanup?: () => void;
}

/**
 * Works around an SDK 1.x bug (modelcontextprotocol/typescript-sdk#2559; the v1.x fix, PR
 * #2747, is not released as of 1.32.2): in JSON response mode, send() answers a POST through
 * its stream mapping's resolveJson but never runs the mapping's cleanup, so each call leaves
 * one `_streamMapping` entry (a fresh UUID per POST) behind for the life of the session, and
 * its closures keep the request's context alive: about 5 KB of heap per call (0.5 GB after
 * 100k calls, with throughput falling). Here resolveJson also runs cleanup, as the SDK's main
 * branch does. A transport without that map (the SDK changed) is left alone, with a warning.
 */
function releaseAnsweredJsonStreams(transport: StreamableHTTPServerTransport): void {
  const inner = (transport as unknown as { _webStandardTransport?: { _streamMapping?: unknown } })
    ._webStandardTransport;
  const streams = inner?._streamMapping;
  if (!(streams instanceof Map)) {
    console.error('mcp-upstream: the SDK transport has no _streamMapping; its per-call memory is not released here');
    return;
  }
  const set = streams.set.bind(streams) as (id: string, stream: JsonStream) => Map<string, JsonStream>;
  streams.set = (id: string, stream: JsonStream) => {
    const { resolveJson, cleanup } = stream;
    if (resolveJson && cleanup) {
      stream.resolveJson = (response) => {
        resolveJson(response);
        cleanup();
      };
    }
    return set(id, stream);
  };
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
        onsessioninitialized: (id) => {
          sessions.set(id, transport);
        },
      });
      releaseAnsweredJsonStreams(transport);
      // A session ended by DELETE (or otherwise closed) lets go of its transport and server.
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await build().connect(transport);
      return transport.handleRequest(req, res, body);
    }
    if (typeof sid !== 'string') return void res.writeHead(400).end();
    // An unknown or ended session: 404 with what the SDK transport answers once closed.
    res.writeHead(404, { 'content-type': 'application/json' }).end(SESSION_NOT_FOUND);
  })().catch(() => {
    if (!res.headersSent) res.writeHead(500);
    res.end();
  });
});
httpServer.listen(0, '127.0.0.1', () => {
  const { port } = httpServer.address() as { port: number };
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${port}/mcp` }) + '\n');
});
process.on('SIGTERM', () => httpServer.close(() => process.exit(0)));
