// @ts-check
'use strict';
/**
 * One organisation's browser, inside its box (src/browser/README.md "Pool"): plain JavaScript,
 * started by src/browser/box.ts, where the operating-system layer is in force, inside bubblewrap
 * with no network of its own (a loopback of its own namespace and nothing else), its own PID,
 * IPC and UTS namespaces, a read-only view of the system, Node, this file, the runners' shared
 * module and playwright-core, and a private /tmp (a tmpfs with a size) that holds Chromium's
 * profile, downloads and temporary files.
 *
 * It runs playwright-core's browser server: Chromium is its child, driven over a pipe, and the
 * Playwright protocol is served on a Unix socket in the one host folder bound into the view
 * (`socket` of its start options), where the service's relay and operator connect. Whatever that
 * server does on behalf of a client — record a video or a HAR file, write a trace, keep a
 * download, make an API request — it does here, as this box's user, in this box's view.
 *
 * Chromium's only way out is the guarded proxy of the service. With no network namespace of the
 * host, the proxy is reached through its Unix socket, bound into the view read-only (`proxies`:
 * the port each proxy has on the host's loopback, and its socket): this program listens on the
 * same port of the namespace's own loopback and forwards each connection to the socket, so the
 * proxy address the service names (`http://127.0.0.1:<port>`) means the same proxy on both sides.
 *
 * Messages (version 1 of the box protocol, in the shared `{v, t}` envelope of runner-common.cjs):
 * child → parent `{v, t: 'ready', wsEndpoint}` once the server listens, or `{v, t: 'failed',
 * error}` when Chromium cannot start. The parent sends nothing; it checks the user of every
 * process of the box from outside, watches its resources and kills the whole tree when done.
 */
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const common = require('../containment/runner-common.cjs');

const OPTIONS = common.startOptions();
/** The box protocol's version (runner-common.cjs PROTOCOL, read by src/browser/box.ts too). */
const PROTOCOL = common.PROTOCOL.box;

// playwright-core asks for the home folder when it loads; the view has no /etc/passwd.
os.homedir = () => process.env.HOME || '/tmp';
const { chromium } = require(OPTIONS.playwright);
common.becomeUser(OPTIONS.uid);
common.ignoreStrayRejections();

const ipc = common.channel(PROTOCOL, {}, () => process.exit(common.EXIT.protocol));

/** Pipes every connection to 127.0.0.1:`port` of this namespace to the Unix socket `socket`. */
/**
 * @param {number} port
 * @param {string} socket
 * @returns {Promise<void>}
 */
function forward(port, socket) {
  return new Promise((resolve, reject) => {
    const server = net.createServer((inside) => {
      const outside = net.connect(socket);
      const end = () => {
        inside.destroy();
        outside.destroy();
      };
      inside.on('error', end).on('close', end);
      outside.on('error', end).on('close', end);
      inside.pipe(outside);
      outside.pipe(inside);
    });
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
}

async function main() {
  // Made before any download, so the service's watch on it (src/browser/watchdog.ts) is in place
  // when the first one starts.
  fs.mkdirSync(OPTIONS.downloads, { recursive: true, mode: 0o700 });
  for (const p of OPTIONS.proxies) await forward(p.port, p.socket);
  let server;
  try {
    server = await chromium.launchServer({
      executablePath: OPTIONS.executable,
      headless: true,
      args: OPTIONS.args,
      env: { HOME: process.env.HOME, TMPDIR: process.env.TMPDIR, PATH: process.env.PATH },
      downloadsPath: OPTIONS.downloads,
      // A Unix socket: playwright-core's server listens on a pipe address and names its endpoint
      // `<socket><path>`.
      port: OPTIONS.socket,
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
    });
  } catch (err) {
    ipc.send(common.MESSAGE.failed, { error: common.messageOf(err).slice(0, 2000) });
    process.exit(1);
  }
  const endpoint = server.wsEndpoint();
  if (!endpoint.startsWith(`${OPTIONS.socket}/`)) {
    ipc.send(common.MESSAGE.failed, { error: `the browser server listens at ${endpoint}, not on ${OPTIONS.socket}` });
    process.exit(1);
  }
  // Chromium gone: so is the box.
  server.on('close', () => process.exit(0));
  ipc.send(common.MESSAGE.ready, { wsPath: endpoint.slice(OPTIONS.socket.length) });
}

main().catch((err) => {
  ipc.send(common.MESSAGE.failed, { error: common.messageOf(err).slice(0, 2000) });
  process.exit(1);
});
