/**
 * The filtering relay between script runners and the browsers (src/browser/README.md
 * "Network"). Runners never learn a browser server's own endpoint: they connect to
 * `ws://127.0.0.1:<port>/<random>` here, and the relay forwards the Playwright protocol to the
 * organisation's browser server, one WebSocket each way. Every message from a runner is read
 * on the way. Whatever would give a context or an API request context a network path of its
 * own is rewritten to the guarded proxy, so no script can route around the outbound policy:
 * - a `proxy` parameter of any call (`newContext`, `newPersistentContext`, `newRequest`, …) is
 *   replaced by the guarded proxy, and one is added where a context or request context is made
 *   without it;
 * - a CDP `Target.createBrowserContext` sent through a CDP session gets the guarded proxy as
 *   its `proxyServer`.
 * A message that is not JSON closes the runner's connection.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';

/** Protocol calls that make a browser context or an API request context. */
const MAKES_CONTEXT = new Set(['newContext', 'newPersistentContext', 'newContextForReuse', 'newRequest']);

/** Rewrites one runner → browser message so that whatever it creates uses `proxy`; exported for the unit test. */
export function guardMessage(msg: Record<string, unknown>, proxy: string): Record<string, unknown> {
  const params = msg.params;
  if (!params || typeof params !== 'object' || Array.isArray(params)) return msg;
  const p = params as Record<string, unknown>;
  if (MAKES_CONTEXT.has(String(msg.method)) || 'proxy' in p) {
    return { ...msg, params: { ...p, proxy: { server: proxy } } };
  }
  if (msg.method === 'send' && p.method === 'Target.createBrowserContext') {
    const inner = p.params && typeof p.params === 'object' && !Array.isArray(p.params) ? (p.params as Record<string, unknown>) : {};
    return { ...msg, params: { ...p, params: { ...inner, proxyServer: proxy, proxyBypassList: '<-loopback>' } } };
  }
  return msg;
}

export class BrowserRelay {
  private server: WebSocketServer | undefined;
  private base: string | undefined;
  private readonly routes = new Map<string, string>();

  constructor(private readonly proxyUrl: () => Promise<string>) {}

  /** A relay endpoint for one browser server's endpoint (kept until `forget`). */
  async endpointFor(target: string): Promise<string> {
    const base = await this.start();
    for (const [path, t] of this.routes) if (t === target) return `${base}/${path}`;
    const path = randomBytes(24).toString('hex');
    this.routes.set(path, target);
    return `${base}/${path}`;
  }

  forget(target: string): void {
    for (const [path, t] of this.routes) if (t === target) this.routes.delete(path);
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    for (const c of server.clients) c.terminate();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async start(): Promise<string> {
    if (this.base) return this.base;
    const server = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: 256 * 1024 * 1024 });
    await new Promise<void>((resolve, reject) => {
      server.once('listening', () => resolve());
      server.once('error', reject);
    });
    server.on('connection', (client, req) => void this.bridge(client, (req.url ?? '').replace(/^\//, '')));
    this.server = server;
    this.base = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this.base;
  }

  private async bridge(client: WebSocket, path: string): Promise<void> {
    const target = this.routes.get(path);
    if (!target) {
      client.close(4004, 'unknown endpoint');
      return;
    }
    const proxy = await this.proxyUrl();
    const upstream = new WebSocket(target, { maxPayload: 256 * 1024 * 1024 });
    const pending: string[] = [];
    const toUpstream = (text: string) => {
      if (upstream.readyState === WebSocket.OPEN) upstream.send(text);
      else pending.push(text);
    };
    client.on('message', (data, isBinary) => {
      let msg: unknown;
      try {
        msg = isBinary ? undefined : JSON.parse(data.toString());
      } catch {
        msg = undefined;
      }
      if (!msg || typeof msg !== 'object' || Array.isArray(msg)) {
        client.close(4000, 'protocol messages are JSON objects');
        return;
      }
      toUpstream(JSON.stringify(guardMessage(msg as Record<string, unknown>, proxy)));
    });
    upstream.on('open', () => {
      for (const text of pending.splice(0)) upstream.send(text);
    });
    upstream.on('message', (data, isBinary) => {
      if (client.readyState === WebSocket.OPEN) client.send(data, { binary: isBinary });
    });
    const end = () => {
      client.terminate();
      upstream.terminate();
    };
    client.on('close', end);
    client.on('error', end);
    upstream.on('close', end);
    upstream.on('error', end);
  }
}
