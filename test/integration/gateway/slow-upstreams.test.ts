/**
 * One slow upstream must not stall everyone (issue 13 part 4; src/gateway/upstream/listings.ts):
 * a hanging upstream (accepts, never answers), a closed port, one that answers garbage and one
 * that dies mid-stream are registered beside a healthy one, with the default 30 s upstream
 * timeout. The first listServers waits at most the listing budget; after it, listServers and
 * capabilities_discover answer within 100 ms with the healthy server's tools, and every broken
 * server is marked stale with its reason. (Keeping the last good list of a server that breaks
 * later: test/unit/gateway/listings.test.ts.)
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { startTestServer, createTestOrg, type TestServer, type TestOrg } from '../../helpers/server.js';
import { startMcpFixture, type McpFixture } from '../../fixtures/upstreams/mcp-server.js';
import { callTool, createConnection, registerServer } from './helpers.js';

interface Broken {
  url: string;
  close(): void;
}

/** Accepts connections and reads requests, never answering. */
async function hanging(): Promise<Broken> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('data', () => undefined);
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/** A port nothing listens on. */
async function closedPort(): Promise<Broken> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return { url: `http://127.0.0.1:${port}/mcp`, close: () => undefined };
}

/** Answers every request with `respond`. */
async function httpServer(respond: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<Broken> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => respond(req, res));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

describe('gateway: one slow or broken upstream does not stall listServers or discovery', function () {
  this.timeout(60_000);
  let server: TestServer;
  let org: TestOrg;
  let healthy: McpFixture;
  const broken: Record<string, Broken> = {};

  before(async () => {
    healthy = await startMcpFixture();
    broken.hanging = await hanging();
    broken.closed = await closedPort();
    broken.garbage = await httpServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('this is not JSON-RPC {'),
    );
    broken.midstream = await httpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: message\ndata: {"jsonrpc":"2.0","id":');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    server = await startTestServer('sqlite');
    org = await createTestOrg(server, 'Slow upstreams org');
    const servers: Array<[string, string]> = [
      ['healthy', healthy.url],
      ...Object.entries(broken).map(([k, b]): [string, string] => [k, b.url]),
    ];
    for (const [name, url] of servers) {
      await registerServer(server, org, {
        path: name,
        name: `${name} server`,
        description: `The ${name} upstream.`,
        service_key: name,
        upstream: { type: 'mcp', url, transport: 'streamable-http' },
        auth: { scheme: 'none' },
      });
      await createConnection(server, org, { name: `${name} conn`, service_key: name });
    }
  });
  after(async () => {
    await server?.close();
    await healthy?.close();
    for (const b of Object.values(broken)) b.close();
  });

  const listServers = async () => {
    const t0 = performance.now();
    const res = await callTool(server, org.token, 'mcp', 'listServers', {});
    const ms = performance.now() - t0;
    const servers = res.structuredContent.servers as Array<{
      path: string;
      tools: string[];
      stale?: boolean;
      error?: string;
    }>;
    const byPath = Object.fromEntries(servers.map((s) => [s.path, s]));
    return { ms, byPath };
  };

  it('the first listServers waits at most the listing budget; then listServers and discovery answer within 100 ms with the healthy tools, the broken servers stale with their reasons', async () => {
    const first = await listServers();
    expect(first.ms, 'the first call waits at most the 1 s listing budget').to.be.below(2_500);
    expect(first.byPath.healthy!.tools).to.include('echo');
    expect(first.byPath.healthy!.stale).to.equal(undefined);
    for (const name of Object.keys(broken)) {
      expect(first.byPath[name]!.tools, name).to.deep.equal([]);
      expect(first.byPath[name]!.stale, name).to.equal(true);
      expect(first.byPath[name]!.error, name).to.be.a('string').and.not.equal('');
    }
    expect(first.byPath.hanging!.error).to.match(/has not listed its tools yet/);

    for (let i = 0; i < 3; i++) {
      const again = await listServers();
      expect(again.ms, `listServers call ${i + 2}`).to.be.below(100);
      expect(again.byPath.healthy!.tools).to.include('echo');
      expect(again.byPath.hanging!.stale).to.equal(true);
    }

    await callTool(server, org.token, 'svc-sidekick', 'capabilities_discover', { request: 'echo a message back' });
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const found = await callTool(server, org.token, 'svc-sidekick', 'capabilities_discover', {
        request: 'echo a message back',
      });
      const ms = performance.now() - t0;
      expect(ms, `capabilities_discover call ${i + 1}`).to.be.below(100);
      expect(
        found.structuredContent.tools.some(
          (t: { name: string; serverName: string }) => t.serverName === 'healthy' && t.name === 'echo',
        ),
      ).to.equal(true);
    }
    // capability_details says which servers' lists are stale, and why; the healthy one's tools carry nothing.
    const [healthyTool] = (
      await callTool(server, org.token, 'svc-sidekick', 'capability_details', { items: ['healthy/echo'] })
    ).structuredContent.items;
    expect(healthyTool).to.include({ name: 'echo', serverName: 'healthy' });
    expect(healthyTool).to.not.have.property('serverStale');
    server.assertResponsesValid();
  });
});
