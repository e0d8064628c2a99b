/**
 * The browsers' only way out (src/browser/README.md "Network"): a forward proxy on loopback that
 * applies the outbound policy of event calls and `http` steps (src/kernel/outbound.ts) to every
 * connection a page makes. Chromium is started with `--proxy-server` pointing here and
 * `--proxy-bypass-list=<-loopback>`, so loopback URLs go through it too, and it sends host
 * names, not addresses: the proxy resolves them and checks the address it actually connects
 * to. A refused plain-HTTP request answers 403 with the reason, which the page shows. A refused
 * CONNECT (https, wss) answers 403, which the page reports as a failed tunnel.
 *
 * With an upstream (BROWSER_PROXY_URL, for operator tasks with `proxies: true`) an allowed
 * connection goes on through that HTTP proxy instead of directly: the guard resolves the host
 * and checks its addresses first, then asks the upstream for it by name (CONNECT, or the
 * absolute URL for plain HTTP) with the upstream's credentials. The service's own origins still
 * go directly.
 */
import { chmodSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { OutboundRefusedError, type OutboundPolicy } from '../kernel/outbound.js';

/** `host:port` of a CONNECT request (IPv6 in brackets), or undefined when malformed. */
function target(authority: string | undefined): { host: string; port: number } | undefined {
  const m = /^(?:\[([0-9a-f:.]+)\]|([^:[\]/]+)):(\d{1,5})$/i.exec(authority ?? '');
  if (!m) return undefined;
  const port = Number(m[3]);
  return port > 0 && port < 65536 ? { host: (m[1] ?? m[2])!, port } : undefined;
}

const HOP_BY_HOP = new Set([
  'proxy-connection',
  'proxy-authorization',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
]);

export class GuardedProxy {
  private server: http.Server | undefined;
  private readonly sockets = new Set<net.Socket | Duplex>();

  private readonly upstreamAuth: string | undefined;

  constructor(
    private readonly policy: OutboundPolicy,
    private readonly upstream?: URL,
  ) {
    this.upstreamAuth =
      upstream && upstream.username
        ? `Basic ${Buffer.from(`${decodeURIComponent(upstream.username)}:${decodeURIComponent(upstream.password)}`).toString('base64')}`
        : undefined;
  }

  /** Resolves `host` through the policy's lookup (throws OutboundRefusedError for a refused address). */
  private checkName(host: string): Promise<void> {
    if (net.isIP(host)) {
      this.policy.check(host);
      return Promise.resolve();
    }
    const lookup = this.policy.lookup() as unknown as (h: string, o: object, cb: (err: Error | null) => void) => void;
    return new Promise((resolve, reject) => lookup(host, { all: true }, (err) => (err ? reject(err) : resolve())));
  }

  /** A socket to `host:port` through the upstream proxy (CONNECT), ready to carry the client's bytes. */
  private viaUpstream(host: string, port: number): Promise<net.Socket> {
    const up = this.upstream!;
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: up.hostname.replace(/^\[|\]$/g, ''), port: Number(up.port || 80) });
      const authority = `${net.isIPv6(host) ? `[${host}]` : host}:${port}`;
      let buffered = Buffer.alloc(0);
      const fail = (err: Error) => {
        socket.destroy();
        reject(err);
      };
      socket.once('error', fail);
      socket.once('connect', () => {
        socket.write(
          `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${this.upstreamAuth ? `Proxy-Authorization: ${this.upstreamAuth}\r\n` : ''}\r\n`,
        );
      });
      const onData = (chunk: Buffer) => {
        buffered = Buffer.concat([buffered, chunk]);
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) {
          if (buffered.length > 16_384) fail(new Error('the upstream proxy sent an oversized answer'));
          return;
        }
        socket.off('data', onData);
        socket.off('error', fail);
        const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(buffered.subarray(0, end).toString('latin1'))?.[1] ?? 0);
        if (status !== 200) {
          fail(
            new Error(`the upstream proxy answered ${status || 'something that is not HTTP'} to CONNECT ${authority}`),
          );
          return;
        }
        const rest = buffered.subarray(end + 4);
        if (rest.length > 0) socket.unshift(rest);
        resolve(socket);
      };
      socket.on('data', onData);
    });
  }

  /**
   * Starts listening on 127.0.0.1 (a free port) and, with `socketDir`, on a Unix socket there
   * named `<port>.sock` (mode 0666: browser boxes without a network of their own reach the proxy
   * through it, each under a user of its own); answers `http://127.0.0.1:<port>`.
   */
  async start(socketDir?: string): Promise<string> {
    const server = http.createServer((req, res) => this.forward(req, res));
    server.on('clientError', (_err, socket) => socket.destroy());
    server.on('connect', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => this.tunnel(req, socket, head));
    server.on('connection', (s: net.Socket) => {
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    this.server = server;
    const port = (server.address() as net.AddressInfo).port;
    if (socketDir) {
      const file = path.join(socketDir, `${port}.sock`);
      const unix = net.createServer((s) => server.emit('connection', s));
      await new Promise<void>((resolve, reject) => {
        unix.once('error', reject);
        unix.listen(file, () => resolve());
      });
      chmodSync(file, 0o666);
      this.unix = unix;
      this.socket = file;
    }
    return `http://127.0.0.1:${port}`;
  }

  /** The Unix socket the proxy also listens on, once started with a socket folder. */
  socket: string | undefined;
  private unix: net.Server | undefined;

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    if (this.unix) await new Promise<void>((resolve) => this.unix!.close(() => resolve()));
    if (this.server) await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }

  /** Trusted without an address check: the service's own origins and allow-listed host names. */
  private trusted(host: string, port: number, scheme: 'http' | 'https'): boolean {
    try {
      return this.policy.allowsOrigin(new URL(`${scheme}://${net.isIPv6(host) ? `[${host}]` : host}:${port}`));
    } catch {
      return false;
    }
  }

  private tunnel(req: http.IncomingMessage, client: Duplex, head: Buffer): void {
    client.on('error', () => undefined);
    const t = target(req.url);
    if (!t) {
      client.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    const refuse = (why: string) => {
      client.end(
        `HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(why)}\r\n\r\n${why}`,
      );
    };
    const trusted = this.trusted(t.host, t.port, 'https') || this.trusted(t.host, t.port, 'http');
    try {
      if (!trusted && net.isIP(t.host)) this.policy.check(t.host);
    } catch (err) {
      refuse((err as Error).message);
      return;
    }
    // Direct, or through the upstream proxy by name after the guard checked the name's addresses.
    const opened =
      this.upstream && !trusted
        ? this.checkName(t.host).then(() => this.viaUpstream(t.host, t.port))
        : new Promise<net.Socket>((resolve, reject) => {
            const socket = net.connect({
              host: t.host,
              port: t.port,
              ...(trusted ? {} : { lookup: this.policy.lookup() }),
            });
            socket.once('connect', () => {
              socket.off('error', reject);
              resolve(socket);
            });
            socket.once('error', reject);
          });
    opened.then(
      (upstream) => {
        this.sockets.add(upstream);
        upstream.once('close', () => this.sockets.delete(upstream));
        upstream.on('error', () => client.destroy());
        client.once('close', () => upstream.destroy());
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length > 0) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      },
      (err: Error) => {
        if (err instanceof OutboundRefusedError) refuse(err.message);
        else client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n');
      },
    );
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse): void {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
      if (url.protocol !== 'http:') throw new Error('not http');
    } catch {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('This proxy takes absolute http:// URLs only');
      return;
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const port = Number(url.port || 80);
    const trusted = this.trusted(host, port, 'http');
    const refuse = (why: string) => {
      if (!res.headersSent) res.writeHead(403, { 'content-type': 'text/plain; charset=utf-8' }).end(why);
      else res.destroy();
    };
    try {
      if (!trusted && net.isIP(host)) this.policy.check(host);
    } catch (err) {
      refuse((err as Error).message);
      req.resume();
      return;
    }
    const headers: http.OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(k)) headers[k] = v;
    if (this.upstream && !trusted) {
      // Through the upstream proxy: the guard checks the name's addresses, the upstream fetches the absolute URL.
      this.checkName(host).then(
        () =>
          this.send(req, res, {
            upstream: http.request({
              host: this.upstream!.hostname.replace(/^\[|\]$/g, ''),
              port: Number(this.upstream!.port || 80),
              method: req.method,
              path: url.href,
              headers: {
                ...headers,
                host: url.host,
                ...(this.upstreamAuth ? { 'proxy-authorization': this.upstreamAuth } : {}),
              },
            }),
            url,
            refuse,
          }),
        (err: Error) => {
          if (err instanceof OutboundRefusedError) refuse(err.message);
          else if (!res.headersSent)
            res.writeHead(502, { 'content-type': 'text/plain' }).end(`The proxy could not reach ${url.host}`);
          req.resume();
        },
      );
      return;
    }
    this.send(req, res, {
      // A connection of its own, closed after the answer: the proxy serves every organisation's
      // browsers and cannot tell them apart, so a kept connection could carry one organisation's
      // request on a connection another's opened (README "Caches": its timing would show that).
      upstream: http.request(url, {
        method: req.method,
        headers,
        agent: false,
        ...(trusted ? {} : { lookup: this.policy.lookup() }),
      }),
      url,
      refuse,
    });
  }

  /** Pipes the browser's request to `upstream` and the answer back, hop-by-hop headers dropped. */
  private send(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    { upstream, url, refuse }: { upstream: http.ClientRequest; url: URL; refuse: (why: string) => void },
  ): void {
    upstream.on('response', (up) => {
      const out: http.OutgoingHttpHeaders = {};
      for (const [k, v] of Object.entries(up.headers)) if (!HOP_BY_HOP.has(k)) out[k] = v;
      res.writeHead(up.statusCode ?? 502, out);
      up.pipe(res);
    });
    upstream.on('error', (err: Error) => {
      if (err instanceof OutboundRefusedError) refuse(err.message);
      else if (!res.headersSent)
        res.writeHead(502, { 'content-type': 'text/plain' }).end(`The proxy could not reach ${url.host}`);
      else res.destroy();
    });
    req.pipe(upstream);
    res.on('close', () => upstream.destroy());
  }
}
