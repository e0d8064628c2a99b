/**
 * Shared set-up of the upstream tests: a real sqlite store, config and silent logger, an
 * organisation, and GatewayContexts built from them (the shape the router passes).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { expect } from 'chai';
import { createOrganization } from '../../../src/auth/index.js';
import { loadConfig, type Config } from '../../../src/config/index.js';
import { createLogger } from '../../../src/config/logger.js';
import { createConnection, type ConnectionCreate } from '../../../src/connections/index.js';
// registry.ts directly: gateway/index.ts also loads the router and every embedded server.
import { createAppServer, type AppServer, type AppServerCreate } from '../../../src/gateway/registry.js';
import { GatewayError, type GatewayContext, type GatewayServices } from '../../../src/gateway/types.js';
import { OutboundPolicy, parseOutboundAllowlist } from '../../../src/kernel/outbound.js';
import { createTestStore, type TestStore } from '../../helpers/store.js';
import { freePort } from '../../helpers/server.js';

export { freePort };

/** The outbound policy of these tests' pools: their upstreams listen on loopback (as test servers allow it). */
export const LOOPBACK = new OutboundPolicy(parseOutboundAllowlist('127.0.0.0/8,::1/128'));

export interface Env {
  store: TestStore;
  config: Config;
  orgId: string;
  otherOrgId: string;
  ctx(extra?: Partial<GatewayContext>): GatewayContext;
  server(input: AppServerCreate): Promise<AppServer>;
  connection(input: Partial<ConnectionCreate> & { service_key: string }, orgId?: string): Promise<string>;
  close(): Promise<void>;
}

export async function setup(): Promise<Env> {
  const store = await createTestStore('sqlite');
  const config = loadConfig({ DATA_DIR: store.dataDir, LOG_LEVEL: 'silent' });
  const log = createLogger('silent');
  const services: GatewayServices = { db: store.db, config, log };
  const org = await createOrganization(store.db, { name: 'Acme' });
  const other = await createOrganization(store.db, { name: 'Other' });
  return {
    store,
    config,
    orgId: org.id,
    otherOrgId: other.id,
    ctx: (extra = {}) => ({
      services,
      log,
      orgId: org.id,
      forwardedHeaders: {},
      signal: new AbortController().signal,
      ...extra,
    }),
    server: (input) => createAppServer(store.db, org.id, input),
    async connection(input, orgId = org.id) {
      const c = await createConnection(store.db, orgId, { name: 'conn', secret: 'sekret', ...input }, config);
      return c.id;
    },
    close: () => store.close(),
  };
}

/**
 * A listener that counts connections and pipes them to `to` on 127.0.0.1 (or answers 500).
 * `sent` holds what each connection carried to it, in the order they were opened.
 */
export async function counter(
  host: string,
  to?: number,
): Promise<{ port: number; connections: number; sent: string[]; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const state = { connections: 0, sent: [] as string[] };
  const server = net.createServer((socket) => {
    state.connections++;
    sockets.add(socket);
    const i = state.sent.push('') - 1;
    socket.on('data', (chunk: Buffer) => (state.sent[i] += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    if (to === undefined) {
      socket.end('HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
      return;
    }
    const upstream = net.connect(to, '127.0.0.1');
    upstream.on('error', () => socket.destroy());
    socket.pipe(upstream).pipe(socket);
    socket.on('close', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return Object.assign(state, {
    port: (server.address() as AddressInfo).port,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  });
}

/** The GatewayError a promise rejects with (fails the test when it resolves). */
export async function gatewayError(p: Promise<unknown>, code = -32000): Promise<GatewayError> {
  try {
    await p;
  } catch (e) {
    expect(e, String(e)).to.be.instanceOf(GatewayError);
    expect((e as GatewayError).code).to.equal(code);
    return e as GatewayError;
  }
  expect.fail('expected a GatewayError');
}

async function waitForPort(port: number, child: ChildProcess, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`upstream exited with ${child.exitCode}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`upstream did not listen on ${port} within ${ms} ms`);
}

/** `@modelcontextprotocol/server-everything` over Streamable HTTP, as a child process. */
export async function startEverything(): Promise<{ url: string; close(): Promise<void> }> {
  const port = await freePort();
  const bin = path.resolve('node_modules/@modelcontextprotocol/server-everything/dist/index.js');
  const child = spawn(process.execPath, [bin, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: 'ignore',
  });
  await waitForPort(port, child, 20_000);
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
