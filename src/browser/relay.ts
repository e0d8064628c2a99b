/**
 * The filtering relay between script runners and the browsers (src/browser/README.md
 * "Network"). Runners never learn a browser server's own endpoint: they connect here, by a path
 * that is a random secret per browser, and the relay forwards the Playwright protocol to the
 * organisation's browser server, one WebSocket each way.
 *
 * Where runners are contained (no network at all), each organisation has a Unix socket of its
 * own, in a folder of its own that is bound into that organisation's runners only
 * (RELAY_DIR_IN_SANDBOX); a path of another organisation's browser is refused on it. Where
 * they are not, runners reach one listener on 127.0.0.1.
 *
 * Every message from a runner is read on the way (relay-filter.ts): the relay lets through only
 * what it knows. Each call goes to an object whose interface the relay learned from the server's
 * own messages (relay-objects.ts); the method must be on the allow-list of that interface
 * (protocol-allowlist.ts), with the parameters that name something on the service's machine
 * refused or dropped and a context's proxy set to the guarded proxy; a CDP command must be on the
 * CDP allow-list (cdp-allowlist.ts); every url that is not http(s) or about:blank is refused. A
 * refused call is answered with an error the script sees (its `page.goto` throws, say). A
 * message that is not JSON closes the runner's connection.
 *
 * Apart from the filter, the relay counts the live pages and browser contexts of each browser
 * (every runner connection to it together); past a limit it tells its owner and stops that
 * browser's traffic. A test-only switch (`filter: false`) forwards every message unchanged; the
 * counting goes on.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import WebSocket, { WebSocketServer } from 'ws';
import type { Logger } from '../config/logger.js';
import { isObject, screenCall } from './relay-filter.js';
import { ObjectTable, UsageCounter, type Limits } from './relay-objects.js';

/** Where an organisation's socket folder appears in its script runners' view. */
export const RELAY_DIR_IN_SANDBOX = '/run/relay';
const SOCKET_NAME = 'relay.sock';
const MAX_PAYLOAD = 256 * 1024 * 1024;

export interface RelayEndpoint {
  /** What the runner connects to: `ws://127.0.0.1:<port>/<secret>` or `ws+unix://<socket in its view>:/<secret>`. */
  url: string;
  /** The host folder of the organisation's socket, to bind at RELAY_DIR_IN_SANDBOX (Unix sockets only). */
  socketDir?: string | undefined;
}

export interface RelayOptions {
  /** The guarded proxy every context is put on (started on first use). */
  proxyUrl: () => Promise<string>;
  /** `unix`: a socket per organisation, for runners without a network; `tcp`: one listener on 127.0.0.1. */
  transport: 'unix' | 'tcp';
  /** Refuse URLs that are not http(s) or about:blank (off only when a test assumes a breach, src/app.ts AssumedBreach). */
  refuseSchemes: boolean;
  /**
   * Apply the allow-list and its rewrites. False only when a test assumes a breach (src/app.ts
   * AssumedBreach.relayOpen): every message passes unchanged (the counting goes on).
   */
  filter: boolean;
  /** Live pages and browser contexts per browser (its runner connections together) before onLimit. */
  limits?: Limits | undefined;
  /** Told once per browser when a count goes above its limit; the relay then ends that browser's runner connections. */
  onLimit?: ((target: string, reason: string, kind: 'pages' | 'contexts') => void) | undefined;
  log: Logger;
}

interface Route {
  target: string;
  orgId: string;
}

export class BrowserRelay {
  private tcp: { server: WebSocketServer; base: string } | undefined;
  private tcpStarting: Promise<string> | undefined;
  private socketRoot: string | undefined;
  /** Each organisation's socket folder, kept for the relay's life: runners bind it once, at their start. */
  private readonly folders = new Map<string, string>();
  /** The listening socket of each organisation that has a browser. */
  private readonly sockets = new Map<string, { server: http.Server; wss: WebSocketServer; ready: Promise<void> }>();
  private readonly routes = new Map<string, Route>();
  private readonly usage: UsageCounter;

  constructor(private readonly opts: RelayOptions) {
    this.usage = new UsageCounter(opts.limits, (target, reason, kind) => {
      opts.log.warn({ reason }, 'browser relay: a browser went over its limit; its scripts are cut off');
      opts.onLimit?.(target, reason, kind);
    });
  }

  /** The live pages and browser contexts of a browser, over every runner connection to it. */
  counts(target: string): { pages: number; contexts: number } {
    return this.usage.counts(target);
  }

  /** A relay endpoint for one browser server's endpoint (kept until `forget`). */
  async endpointFor(orgId: string, target: string): Promise<RelayEndpoint> {
    const secret = this.routeFor(orgId, target);
    if (this.opts.transport === 'tcp') return { url: `${await this.startTcp()}/${secret}` };
    const socketDir = await this.listenFor(orgId);
    return { url: `ws+unix://${RELAY_DIR_IN_SANDBOX}/${SOCKET_NAME}:/${secret}`, socketDir };
  }

  /** The browser is gone: its path no longer leads anywhere; an organisation with no browser left stops listening. */
  forget(target: string): void {
    this.usage.forget(target);
    const orgs = new Set<string>();
    for (const [secret, r] of this.routes) {
      if (r.target !== target) continue;
      this.routes.delete(secret);
      orgs.add(r.orgId);
    }
    for (const orgId of orgs) {
      if ([...this.routes.values()].some((r) => r.orgId === orgId)) continue;
      this.closeSocket(orgId);
    }
  }

  async close(): Promise<void> {
    for (const orgId of [...this.sockets.keys()]) this.closeSocket(orgId);
    if (this.socketRoot) rmSync(this.socketRoot, { recursive: true, force: true });
    const tcp = this.tcp;
    this.tcp = undefined;
    if (!tcp) return;
    for (const c of tcp.server.clients) c.terminate();
    await new Promise<void>((resolve) => tcp.server.close(() => resolve()));
  }

  private routeFor(orgId: string, target: string): string {
    for (const [secret, r] of this.routes) if (r.target === target && r.orgId === orgId) return secret;
    const secret = randomBytes(24).toString('hex');
    this.routes.set(secret, { target, orgId });
    return secret;
  }

  private startTcp(): Promise<string> {
    this.tcpStarting ??= (async () => {
      const server = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: MAX_PAYLOAD });
      await new Promise<void>((resolve, reject) => {
        server.once('listening', () => resolve());
        server.once('error', reject);
      });
      server.on('connection', (client, req) => void this.bridge(client, req.url ?? '', undefined));
      const base = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
      this.tcp = { server, base };
      return base;
    })();
    return this.tcpStarting;
  }

  /**
   * The organisation's socket: `<root>/<random>/relay.sock`. The root (mode 0700) keeps every
   * other user of the machine out; the organisation's folder (0711) and socket (0666) let its
   * runners, each under a user of its own, connect once the folder is bound into their view.
   */
  private async listenFor(orgId: string): Promise<string> {
    this.socketRoot ??= mkdtempSync(path.join(os.tmpdir(), 'sy-relay-'));
    let dir = this.folders.get(orgId);
    if (!dir) {
      dir = path.join(this.socketRoot, randomBytes(8).toString('hex'));
      mkdirSync(dir, { mode: 0o711 });
      chmodSync(dir, 0o711);
      this.folders.set(orgId, dir);
    }
    const open = this.sockets.get(orgId);
    if (open) {
      await open.ready;
      return dir;
    }
    const file = path.join(dir, SOCKET_NAME);
    rmSync(file, { force: true });
    const server = http.createServer((_req, res) => res.writeHead(426).end());
    const wss = new WebSocketServer({ server, maxPayload: MAX_PAYLOAD });
    wss.on('connection', (client, req) => void this.bridge(client, req.url ?? '', orgId));
    const ready = new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(file, () => {
        chmodSync(file, 0o666);
        resolve();
      });
    });
    this.sockets.set(orgId, { server, wss, ready });
    await ready;
    return dir;
  }

  private closeSocket(orgId: string): void {
    const s = this.sockets.get(orgId);
    if (!s) return;
    this.sockets.delete(orgId);
    for (const c of s.wss.clients) c.terminate();
    s.wss.close();
    s.server.close();
  }

  /**
   * Forwards one runner connection; `orgId` is the organisation whose socket it came in on
   * (undefined: the TCP listener).
   */
  private async bridge(client: WebSocket, url: string, orgId: string | undefined): Promise<void> {
    const route = this.routes.get(url.replace(/^\//, ''));
    if (!route || (orgId !== undefined && route.orgId !== orgId)) {
      client.close(4004, 'unknown endpoint');
      return;
    }
    if (this.usage.limited(route.target)) {
      client.close(4008, 'the browser went over its limit');
      return;
    }
    const proxy = await this.opts.proxyUrl();
    const upstream = new WebSocket(route.target, { maxPayload: MAX_PAYLOAD });
    const pending: Array<{ data: string | Buffer; binary: boolean }> = [];
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      client.terminate();
      upstream.terminate();
      objects.clear();
      leave();
    };
    const { count, limited, leave } = this.usage.join(route.target, end);
    const objects = new ObjectTable(count);
    const toUpstream = (frame: { data: string | Buffer; binary: boolean }) => {
      if (upstream.readyState === WebSocket.OPEN) upstream.send(frame.data, { binary: frame.binary });
      else pending.push(frame);
    };
    client.on('message', (data: Buffer, isBinary) => {
      if (ended || limited()) return;
      if (!this.opts.filter) {
        toUpstream({ data, binary: isBinary });
        return;
      }
      let msg: unknown;
      try {
        msg = isBinary ? undefined : JSON.parse(data.toString());
      } catch {
        msg = undefined;
      }
      if (!isObject(msg)) {
        client.close(4000, 'protocol messages are JSON objects');
        return;
      }
      const screened = screenCall(msg, objects.typeOf(msg.guid), { proxy, schemes: this.opts.refuseSchemes });
      if (screened.ok) {
        toUpstream({ data: screened.changed ? JSON.stringify(screened.msg) : data, binary: false });
        return;
      }
      this.opts.log.info(
        {
          orgId: route.orgId,
          type: objects.typeOf(msg.guid),
          method: String(msg.method).slice(0, 100),
          reason: screened.message.slice(0, 300),
        },
        'browser relay: refused a call of a script',
      );
      // `__waitInfo__` carries an id but gets no answer: the client would take one as a broken connection.
      if (msg.id !== undefined && msg.method !== '__waitInfo__' && client.readyState === WebSocket.OPEN)
        client.send(
          JSON.stringify({
            id: msg.id,
            error: { error: { name: screened.name, message: screened.message, stack: '' } },
          }),
        );
    });
    upstream.on('open', () => {
      for (const { data, binary } of pending.splice(0)) upstream.send(data, { binary });
    });
    upstream.on('message', (data: Buffer, isBinary) => {
      if (ended) return;
      if (!isBinary) objects.observe(data);
      if (limited()) return;
      if (client.readyState === WebSocket.OPEN) client.send(data, { binary: isBinary });
    });
    client.on('close', end);
    client.on('error', end);
    upstream.on('close', end);
    upstream.on('error', end);
  }
}
