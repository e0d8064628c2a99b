/**
 * /readyz and /healthz (openapi/health.yaml): readiness reports each check (store, blobs, code
 * isolation, Redis when configured) and the draining state; liveness stays 200 whatever they
 * say. Redis is reached through a loopback TCP proxy that the test cuts and restores.
 */
import net from 'node:net';
import { expect } from 'chai';
import { startTestServer, call, freePort, type TestServer } from '../../helpers/server.js';
import { dropRedisKeys } from '../../helpers/store.js';

const REDIS = new URL(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');

/** A TCP proxy to Redis on `port`: `cut` drops every connection and refuses new ones until `restore`. */
async function redisProxy(port: number) {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(REDIS.port || 6379), REDIS.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  const listen = () => new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  await listen();
  return {
    async cut() {
      const closed = new Promise<void>((r) => server.close(() => r()));
      for (const s of sockets) s.destroy();
      await closed;
    },
    restore: listen,
    close: () => new Promise<void>((r) => (server.listening ? server.close(() => r()) : r())),
  };
}

describe('health probes: readiness checks and draining (sqlite + Redis)', function () {
  this.timeout(30_000);
  const prefix = `sy-ready-${process.pid}-${Date.now()}`;
  let srv: TestServer | undefined;
  let proxy: Awaited<ReturnType<typeof redisProxy>> | undefined;

  before(async () => {
    const port = await freePort();
    proxy = await redisProxy(port);
    srv = await startTestServer('sqlite', {
      REDIS_URL: `redis://127.0.0.1:${port}`,
      REDIS_PREFIX: prefix,
      RUN_CONCURRENCY: '0',
    });
  });

  after(async () => {
    await srv?.close();
    await proxy?.close();
    await dropRedisKeys(REDIS.href, prefix);
  });

  afterEach(() => srv?.assertResponsesValid());

  it('reports store, blobs, isolation and Redis, and that it is not draining', async () => {
    const ready = await call(srv!.baseUrl, 'GET', '/readyz');
    expect(ready.status).to.equal(200);
    expect(ready.body).to.deep.include({
      status: 'ready',
      draining: false,
      checks: { store: 'ok', blobs: 'ok', isolation: 'ok', redis: 'ok' },
    });
    expect(ready.body.details.isolation).to.deep.equal(srv!.app.services.isolation);
  });

  it('Redis unreachable: 503 with redis error, liveness still 200; ready again once Redis answers', async () => {
    await proxy!.cut();
    const down = await call(srv!.baseUrl, 'GET', '/readyz');
    expect(down.status).to.equal(503);
    expect(down.body).to.deep.include({
      status: 'not_ready',
      draining: false,
      checks: { store: 'ok', blobs: 'ok', isolation: 'ok', redis: 'error' },
    });
    expect((await call(srv!.baseUrl, 'GET', '/healthz')).status).to.equal(200);
    await proxy!.restore();
    const deadline = Date.now() + 10_000;
    let status = 0;
    while (Date.now() < deadline && status !== 200) {
      status = (await call(srv!.baseUrl, 'GET', '/readyz')).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status, 'ready again').to.equal(200);
  });

  it('draining: 503 with draining true whatever the checks say, liveness still 200', async () => {
    await srv!.app.drain();
    const ready = await call(srv!.baseUrl, 'GET', '/readyz');
    expect(ready.status).to.equal(503);
    expect(ready.body).to.deep.include({
      status: 'not_ready',
      draining: true,
      checks: { store: 'ok', blobs: 'ok', isolation: 'ok', redis: 'ok' },
    });
    const live = await call(srv!.baseUrl, 'GET', '/healthz');
    expect([live.status, live.body]).to.deep.equal([200, { status: 'ok' }]);
  });
});
