/**
 * The guarded proxy in front of BROWSER_PROXY_URL (src/browser/proxy.ts with an upstream): an
 * allowed CONNECT tunnel and a plain-HTTP request go on through the upstream HTTP proxy, by
 * name and with its credentials; a destination the outbound policy refuses never reaches the
 * upstream; an upstream that refuses the tunnel is a 502 to the browser. Loopback sockets only.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { expect } from 'chai';
import { GuardedProxy } from '../../../src/browser/proxy.js';
import { OutboundPolicy, parseOutboundAllowlist } from '../../../src/kernel/outbound.js';

interface Upstream {
  url: string;
  seen: Array<{ method: string; target: string; auth: string | undefined }>;
  refuseConnect: boolean;
  close(): Promise<void>;
}

/** An HTTP proxy standing in for a residential provider: tunnels CONNECT, forwards absolute URLs, records both. */
function upstream(): Promise<Upstream> {
  const u: Upstream = { url: '', seen: [], refuseConnect: false, close: async () => undefined };
  const server = http.createServer((req, res) => {
    u.seen.push({ method: req.method ?? '', target: req.url ?? '', auth: req.headers['proxy-authorization'] });
    const { 'proxy-authorization': _auth, ...headers } = req.headers;
    const out = http.request(new URL(req.url ?? ''), { method: req.method, headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    out.on('error', () => res.writeHead(502).end());
    req.pipe(out);
  });
  server.on('connect', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    u.seen.push({ method: 'CONNECT', target: req.url ?? '', auth: req.headers['proxy-authorization'] });
    if (u.refuseConnect) {
      socket.end('HTTP/1.1 407 Proxy Authentication Required\r\n\r\n');
      return;
    }
    const [host, port] = (req.url ?? '').split(':');
    const target = net.connect(Number(port), host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) target.write(head);
      target.pipe(socket);
      socket.pipe(target);
    });
    target.on('error', () => socket.destroy());
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      u.url = `http://scout:pw%40x@127.0.0.1:${(server.address() as AddressInfo).port}`;
      u.close = () =>
        new Promise<void>((r) => {
          server.closeAllConnections();
          server.close(() => r());
        });
      resolve(u);
    }),
  );
}

/** Sends CONNECT through the proxy at `proxyPort`, then `payload` through the tunnel; answers the proxy's status line and what came back. */
function connectThrough(
  proxyPort: number,
  authority: string,
  payload: string,
): Promise<{ status: string; echoed: string }> {
  return new Promise((resolve, reject) => {
    const s = net.connect(proxyPort, '127.0.0.1', () =>
      s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`),
    );
    let data = '';
    let status = '';
    s.on('data', (c: Buffer) => {
      data += c.toString('latin1');
      if (!status && data.includes('\r\n\r\n')) {
        status = data.slice(0, data.indexOf('\r\n'));
        data = data.slice(data.indexOf('\r\n\r\n') + 4);
        if (status.includes(' 200 ')) s.write(payload);
        else s.end();
      }
      if (status.includes(' 200 ') && data.length >= payload.length) {
        s.end();
        resolve({ status, echoed: data });
      }
    });
    s.on('end', () => resolve({ status, echoed: data }));
    s.on('error', reject);
  });
}

describe('browser network: the guarded proxy in front of an upstream proxy (BROWSER_PROXY_URL)', () => {
  let up: Upstream;
  let echo: net.Server;
  let web: http.Server;
  let proxy: GuardedProxy;
  let proxyPort: number;
  let refusing: GuardedProxy;
  let refusingPort: number;

  before(async () => {
    up = await upstream();
    echo = net.createServer((s) => s.pipe(s));
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', () => r()));
    web = http.createServer((_req, res) => res.end('page through the upstream'));
    await new Promise<void>((r) => web.listen(0, '127.0.0.1', () => r()));
    proxy = new GuardedProxy(new OutboundPolicy(parseOutboundAllowlist('127.0.0.0/8'), []), new URL(up.url));
    proxyPort = Number(new URL(await proxy.start()).port);
    refusing = new GuardedProxy(new OutboundPolicy(parseOutboundAllowlist(''), []), new URL(up.url));
    refusingPort = Number(new URL(await refusing.start()).port);
  });
  after(async () => {
    await proxy?.close();
    await refusing?.close();
    await up?.close();
    echo?.close();
    web?.closeAllConnections();
    web?.close();
  });
  beforeEach(() => {
    up.seen.length = 0;
    up.refuseConnect = false;
  });

  it('tunnels an allowed CONNECT through the upstream by name, with its credentials', async () => {
    const authority = `localhost:${(echo.address() as AddressInfo).port}`;
    const { status, echoed } = await connectThrough(proxyPort, authority, 'hello through two proxies');
    expect(status).to.equal('HTTP/1.1 200 Connection Established');
    expect(echoed).to.equal('hello through two proxies');
    expect(up.seen).to.deep.equal([
      { method: 'CONNECT', target: authority, auth: `Basic ${Buffer.from('scout:pw@x').toString('base64')}` },
    ]);
  });

  it('sends a plain-HTTP request to the upstream as an absolute URL', async () => {
    const url = `http://127.0.0.1:${(web.address() as AddressInfo).port}/a?b=1`;
    const body = await new Promise<string>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port: proxyPort, path: url, headers: { host: new URL(url).host } }, (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve(`${res.statusCode} ${text}`));
        })
        .on('error', reject);
    });
    expect(body).to.equal('200 page through the upstream');
    expect(up.seen.map((s) => [s.method, s.target])).to.deep.equal([['GET', url]]);
  });

  it('a destination the policy refuses never reaches the upstream; an upstream that refuses the tunnel is a 502', async () => {
    const refused = await connectThrough(refusingPort, `localhost:${(echo.address() as AddressInfo).port}`, 'x');
    expect(refused.status).to.equal('HTTP/1.1 403 Forbidden');
    expect(up.seen).to.deep.equal([]);
    up.refuseConnect = true;
    const bad = await connectThrough(proxyPort, `localhost:${(echo.address() as AddressInfo).port}`, 'x');
    expect(bad.status).to.equal('HTTP/1.1 502 Bad Gateway');
  });
});
