/**
 * An HTTP server on loopback that records, per TCP connection in the order they were opened,
 * which organisations its requests named (`?org=`, or an `x-org` header): tests of the
 * per-organisation keep-alive pools (src/kernel/org-pools.ts) check that no connection carried
 * two organisations' calls.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface ConnectionRecorder {
  url: string;
  /** Per connection, the organisations its requests named. */
  carried: Array<Set<string>>;
  close(): Promise<void>;
}

export async function recorder(): Promise<ConnectionRecorder> {
  const carried: Array<Set<string>> = [];
  const index = new WeakMap<Socket, number>();
  const server = http.createServer((req, res) => {
    let i = index.get(req.socket);
    if (i === undefined) index.set(req.socket, (i = carried.push(new Set()) - 1));
    const org = new URL(req.url ?? '/', 'http://x').searchParams.get('org') ?? req.headers['x-org'] ?? '';
    carried[i]!.add(String(org));
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    carried,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
