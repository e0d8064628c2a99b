/**
 * src/console: the listener that serves the console's built files (a folder laid out as Vite
 * builds it), on a node:http server on loopback, and the folder it serves from.
 */
import http, { type Server } from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { expect } from 'chai';
import { CONSOLE_CSP, consoleDir, consoleListener } from '../../../src/console/index.js';
import { createLogger } from '../../../src/config/logger.js';

const log = createLogger('silent');

async function serve(dir: string): Promise<{ base: string; server: Server }> {
  const listener = consoleListener(log, dir);
  const server = http.createServer(listener);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('console: serving the built files (src/console)', () => {
  let root: string;
  let built: string;
  const script = `console.log(${JSON.stringify('x'.repeat(2000))});`;

  before(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'switchyard-console-'));
    built = path.join(root, 'built');
    mkdirSync(path.join(built, 'assets'), { recursive: true });
    writeFileSync(
      path.join(built, 'index.html'),
      '<!doctype html><title>c</title><script type="module" crossorigin src="./assets/index-abc123.js"></script>' +
        '<link rel="stylesheet" href="./assets/index-abc123.js"><div id="app"></div>',
    );
    writeFileSync(path.join(built, 'assets', 'index-abc123.js'), script);
    writeFileSync(path.join(built, 'BUILD'), '{}');
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('answers index.html for app routes, hashed assets cached for a year, gzip when accepted', async () => {
    const { base, server } = await serve(built);
    try {
      for (const route of ['/console', '/console/', '/console/runs/wf_1/run_2?x=1']) {
        const res = await fetch(`${base}${route}`);
        expect(res.status, route).to.equal(200);
        expect(res.headers.get('content-type')).to.match(/^text\/html/);
        expect(res.headers.get('cache-control')).to.equal('no-cache');
        expect(res.headers.get('content-security-policy')).to.equal(CONSOLE_CSP);
        expect(res.headers.get('x-frame-options')).to.equal('DENY');
        expect(await res.text()).to.include('<div id="app">');
      }
      const raw = await new Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
        http
          .get(`${base}/console/assets/index-abc123.js`, { headers: { 'accept-encoding': 'gzip' } }, (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
          })
          .on('error', reject);
      });
      expect(raw.headers['content-encoding']).to.equal('gzip');
      expect(raw.headers['cache-control']).to.equal('public, max-age=31536000, immutable');
      expect(raw.headers['content-type']).to.match(/javascript/);
      expect(gunzipSync(raw.body).toString()).to.equal(script);
      const head = await fetch(`${base}/console/assets/index-abc123.js`, { method: 'HEAD' });
      expect(head.status).to.equal(200);
      expect(await head.text()).to.equal('');
    } finally {
      server.close();
    }
  });

  it("roots index.html's asset references at the console's path, under a host's mount prefix too", async () => {
    const listener = consoleListener(log, built);
    // As express mounts a handler: `originalUrl` keeps the path asked for, `req.url` loses the prefix.
    const server = http.createServer((req, res) => {
      const asked = req.url!;
      const mount = ['/host/switchyard', '//evil.example', '/q"x<y', '/\\evil.example'].find((m) =>
        asked.startsWith(`${m}/`),
      );
      if (mount) Object.assign(req, { originalUrl: asked, url: asked.slice(mount.length) });
      listener(req, res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // Sent as written: node:http passes quotes, brackets and backslashes on, as a client may send them.
    const refs = (route: string) =>
      new Promise<string[]>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port: new URL(base).port, path: route }, (res) => {
            expect(res.statusCode, route).to.equal(200);
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => (body += c));
            res.on('end', () => resolve([...body.matchAll(/(?:src|href)="([^"]*)"/g)].map((m) => m[1]!)));
          })
          .on('error', reject);
      });
    try {
      expect(await refs('/console/runs/wf_1/run_2')).to.deep.equal([
        '/console/assets/index-abc123.js',
        '/console/assets/index-abc123.js',
      ]);
      expect(await refs('/host/switchyard/console/runs')).to.deep.equal([
        '/host/switchyard/console/assets/index-abc123.js',
        '/host/switchyard/console/assets/index-abc123.js',
      ]);
      // Neither repeated slashes nor a backslash (which browsers read as `/`) make a reference to
      // another host; anything but a path character is percent-escaped, so nothing leaves the attribute.
      const twice = (ref: string) => [ref, ref];
      expect(await refs('//evil.example/console/')).to.deep.equal(
        twice('/evil.example/console/assets/index-abc123.js'),
      );
      expect(await refs('/\\evil.example/console/')).to.deep.equal(
        twice('/%5Cevil.example/console/assets/index-abc123.js'),
      );
      expect(await refs('/q"x<y/console/')).to.deep.equal(twice('/q%22x%3Cy/console/assets/index-abc123.js'));
    } finally {
      server.close();
    }
  });

  it('answers errors in the Error object: a missing asset or file, another method', async () => {
    const { base, server } = await serve(built);
    try {
      for (const p of ['/console/assets/gone.js', '/console/favicon.ico', '/console/assets/']) {
        const res = await fetch(`${base}${p}`);
        expect(res.status, p).to.equal(404);
        expect(await res.json()).to.deep.equal({ error: 'not_found', message: 'No such endpoint' });
        expect(res.headers.get('content-security-policy')).to.equal(CONSOLE_CSP);
      }
      // The build stamp is not served: the path is an app route like any other.
      expect(await (await fetch(`${base}/console/BUILD`)).text()).to.include('<div id="app">');
      const post = await fetch(`${base}/console/runs`, { method: 'POST', body: '{}' });
      expect(post.status).to.equal(405);
      expect(post.headers.get('allow')).to.equal('GET, HEAD');
      expect(((await post.json()) as { error: string }).error).to.equal('method_not_allowed');
    } finally {
      server.close();
    }
  });

  it('answers 503 console_not_built when the build has no console', async () => {
    const { base, server } = await serve(path.join(root, 'nothing-here'));
    try {
      const res = await fetch(`${base}/console/`);
      expect(res.status).to.equal(503);
      const body = (await res.json()) as { error: string; message: string };
      expect(body.error).to.equal('console_not_built');
      expect(body.message).to.include('npm run build');
    } finally {
      server.close();
    }
  });

  it("serves from the running build's folder, or from source from the build dist/BUILD names", () => {
    expect(consoleDir('/pkg', 'dist/b-1234')).to.equal(path.join('/pkg', 'dist/b-1234', 'console'));
    mkdirSync(path.join(root, 'dist'), { recursive: true });
    writeFileSync(path.join(root, 'dist', 'BUILD'), JSON.stringify({ sources: 'feed' }));
    expect(consoleDir(root, undefined)).to.equal(path.join(root, 'dist', 'b-feed', 'console'));
    expect(consoleDir(path.join(root, 'elsewhere'), undefined)).to.equal(
      path.join(root, 'elsewhere', 'dist', 'console'),
    );
  });
});
