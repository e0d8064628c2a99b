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
 * Every message from a runner is read on the way:
 * - whatever would give a context or an API request context a network path of its own is
 *   rewritten to the guarded proxy (a `proxy` parameter of any call, a CDP
 *   `Target.createBrowserContext`), so no script can route around the outbound policy;
 * - calls that would act on the service's own machine rather than the browser (an artifact
 *   saved to a path, temporary upload files, a recorder, a server started by the browser
 *   object, file paths for an upload, a trace name with a path in it) are refused;
 * - navigations, new targets, request rewrites and any other `url` parameter that is not
 *   http(s) or about:blank are refused (src/browser/urls.ts), as are CDP calls that would get
 *   around that (a DevTools protocol handed to a page, messages wrapped for another target,
 *   local files put into a page, the download folder changed).
 * A refused call is answered with an error the script sees (its `page.goto` throws, say). A
 * message that is not JSON closes the runner's connection.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import WebSocket, { WebSocketServer } from 'ws';
import type { Logger } from '../config/logger.js';
import { navigationRefusal } from './urls.js';

/** Where an organisation's socket folder appears in its script runners' view. */
export const RELAY_DIR_IN_SANDBOX = '/run/relay';
const SOCKET_NAME = 'relay.sock';
const MAX_PAYLOAD = 256 * 1024 * 1024;

/** Protocol calls that make a browser context or an API request context. */
const MAKES_CONTEXT = new Set(['newContext', 'newPersistentContext', 'newContextForReuse', 'newRequest']);

/**
 * Protocol calls that act on the machine of the Playwright server (the service's own process)
 * instead of the browser: `saveAs` copies an artifact to a path there, `createTempFiles` writes
 * files there, the recorder and `startServer` start programs and listeners there, and the
 * launch calls start programs. Scripts read downloads as streams and upload file contents.
 */
const HOST_CALLS = new Set([
  'saveAs',
  'createTempFiles',
  'startServer',
  'stopServer',
  'showRecorder',
  'startRecording',
  'stopRecording',
  'pause',
  'launch',
  'launchPersistentContext',
  'launchServer',
  'connectOverCDP',
  'connectToWorker',
]);

/**
 * Calls whose `name` becomes a file name on the service's machine (playwright-core's tracing
 * writes `<traces folder>/<name>.trace`): a name with a path in it would write elsewhere.
 */
const NAMES_A_FILE = new Set(['tracingStart', 'tracingStartChunk']);
const PLAIN_NAME = /^[\w-][\w.-]{0,199}$/;

/** CDP commands a script may not send through a CDP session, and why. */
const CDP_REFUSED: ReadonlyMap<string, string> = new Map([
  ['Target.exposeDevToolsProtocol', 'it would hand the DevTools protocol to a page'],
  ['Target.sendMessageToTarget', 'it wraps messages the relay cannot check (open a CDP session on the page instead)'],
  [
    'DOM.setFileInputFiles',
    "it puts files of the browser's machine into a page (use setInputFiles with file contents)",
  ],
  ['Page.setDownloadBehavior', 'downloads are captured for the task'],
  ['Browser.setDownloadBehavior', 'downloads are captured for the task'],
]);

type Msg = Record<string, unknown>;

const isObject = (v: unknown): v is Msg => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Rewrites one runner → browser message so that whatever it creates uses `proxy`; exported for the unit test. */
export function guardMessage(msg: Msg, proxy: string): Msg {
  const p = msg.params;
  if (!isObject(p)) return msg;
  if (MAKES_CONTEXT.has(String(msg.method)) || 'proxy' in p) {
    return { ...msg, params: { ...p, proxy: { server: proxy } } };
  }
  if (msg.method === 'send' && p.method === 'Target.createBrowserContext') {
    const inner = isObject(p.params) ? p.params : {};
    return { ...msg, params: { ...p, params: { ...inner, proxyServer: proxy, proxyBypassList: '<-loopback>' } } };
  }
  return msg;
}

/** The first `url` value (a string under a key named url, at most `depth` levels down) that may not be opened. */
function refusedUrl(value: unknown, depth: number): string | undefined {
  if (depth < 0) return undefined;
  if (Array.isArray(value)) {
    for (const v of value) {
      const found = refusedUrl(v, depth - 1);
      if (found) return found;
    }
    return undefined;
  }
  if (!isObject(value)) return undefined;
  for (const [k, v] of Object.entries(value)) {
    if (k.toLowerCase() === 'url' && typeof v === 'string') {
      const why = navigationRefusal(v);
      if (why) return why;
    } else {
      const found = refusedUrl(v, depth - 1);
      if (found) return found;
    }
  }
  return undefined;
}

function cdpRefusal(cdp: Msg): string | undefined {
  const method = String(cdp.method);
  const why = CDP_REFUSED.get(method);
  if (why) return `The CDP command ${method} is refused: ${why}.`;
  const data = isObject(cdp.params) ? cdp.params.data : undefined;
  if (method === 'Input.dispatchDragEvent' && isObject(data) && Array.isArray(data.files) && data.files.length > 0) {
    return "The CDP command Input.dispatchDragEvent with files is refused: it puts files of the browser's machine into a page.";
  }
  return undefined;
}

/**
 * Why a runner → browser message is refused, or undefined when it may pass (after
 * guardMessage). `schemes: false` lets every URL through (a test-only switch); the calls that
 * act on the service's machine are refused regardless. Exported for the unit test.
 */
export function refusal(msg: Msg, opts: { schemes: boolean }): string | undefined {
  const method = String(msg.method);
  if (HOST_CALLS.has(method))
    return `The call ${method} is not available to browser scripts: it would act on the service's machine, not the browser.`;
  const p = isObject(msg.params) ? msg.params : {};
  if ('localPaths' in p || 'localDirectory' in p)
    return 'Files are uploaded by their contents here ({name, mimeType, buffer}), not by paths.';
  if (NAMES_A_FILE.has(method) && p.name !== undefined && (typeof p.name !== 'string' || !PLAIN_NAME.test(p.name))) {
    return 'A trace name is a plain file name here (letters, digits, dots, dashes and underscores; no folders).';
  }
  if (method === 'send' && typeof p.method === 'string') {
    const why = cdpRefusal(p);
    if (why) return why;
  }
  return opts.schemes ? refusedUrl(p, 4) : undefined;
}

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
  /** Refuse URLs that are not http(s) or about:blank (off only under the test-only switch). */
  refuseSchemes: boolean;
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

  constructor(private readonly opts: RelayOptions) {}

  /** A relay endpoint for one browser server's endpoint (kept until `forget`). */
  async endpointFor(orgId: string, target: string): Promise<RelayEndpoint> {
    const secret = this.routeFor(orgId, target);
    if (this.opts.transport === 'tcp') return { url: `${await this.startTcp()}/${secret}` };
    const socketDir = await this.listenFor(orgId);
    return { url: `ws+unix://${RELAY_DIR_IN_SANDBOX}/${SOCKET_NAME}:/${secret}`, socketDir };
  }

  /** The browser is gone: its path no longer leads anywhere; an organisation with no browser left stops listening. */
  forget(target: string): void {
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
    const proxy = await this.opts.proxyUrl();
    const upstream = new WebSocket(route.target, { maxPayload: MAX_PAYLOAD });
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
      if (!isObject(msg)) {
        client.close(4000, 'protocol messages are JSON objects');
        return;
      }
      const why = refusal(msg, { schemes: this.opts.refuseSchemes });
      if (why) {
        this.opts.log.info(
          { orgId: route.orgId, method: String(msg.method).slice(0, 100) },
          'browser relay: refused a call of a script',
        );
        if (msg.id !== undefined && client.readyState === WebSocket.OPEN)
          client.send(JSON.stringify({ id: msg.id, error: { error: { name: 'Error', message: why, stack: '' } } }));
        return;
      }
      toUpstream(JSON.stringify(guardMessage(msg, proxy)));
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
