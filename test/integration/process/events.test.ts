/**
 * Resource events across processes (spec "Events", "Limits"; README "Collections and resource
 * events"):
 * - kill -9 between the commit of a change and its delivery: the event row is in the outbox,
 *   so the next start delivers it, once;
 * - two processes editing one item share the onEdit window (the store's, or Redis's with
 *   REDIS_URL): exactly 2 deliveries per window in all.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { freePort, call } from '../../helpers/server.js';
import { startReceiver, type Receiver } from '../../helpers/receiver.js';
import { startServer as start, waitReady as ready, bootstrapToken as tokenFor } from '../../helpers/process.js';

describe('process: resource events across restarts and processes', function () {
  this.timeout(120_000);
  let dataDir: string;
  let children: ChildProcess[] = [];
  let rx: Receiver;
  beforeEach(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-events-'));
    rx = await startReceiver();
  });
  afterEach(async () => {
    for (const c of children) c.kill('SIGKILL');
    children = [];
    await rx.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('kill -9 after the commit, before the delivery: the next start delivers the event once', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    // RUN_CONCURRENCY=0: an HTTP-only process records event calls and never delivers them, so
    // the kill lands exactly between the commit and the delivery.
    const first = start(dataDir, port, { RUN_CONCURRENCY: '0' });
    children.push(first);
    await ready(base);
    const { token, b } = await tokenFor(base, dataDir);
    const ds = b.demo.datastoreId as string;
    const set = await call(base, 'PATCH', `/datacollection/${ds}`, {
      token,
      body: { triggerUrls: [{ event: 'onCreate', url: `${rx.url}/created`, apiKey: 'k-1234' }] },
    });
    expect(set.status, set.text).to.equal(200);
    const created = await call(base, 'POST', `/memory/items?collectionId=${ds}`, {
      token,
      body: { key: 'survivor', content: { n: 1 } },
    });
    expect(created.status, created.text).to.equal(201);
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    expect(rx.calls).to.deep.equal([]);

    const second = start(dataDir, port);
    children.push(second);
    await ready(base);
    const [got] = await rx.waitFor(1, 15_000);
    expect(got!.body).to.deep.include({ event: 'onCreate', itemId: created.body.id, key: 'survivor' });
    await new Promise((r) => setTimeout(r, 1500));
    expect(rx.calls).to.have.length(1);
    const log = await call(base, 'GET', `/v1/collections/${ds}/deliveries`, { token });
    expect(log.body.items.map((d: any) => [d.eventId, d.status])).to.deep.equal([[got!.body.eventId, 'sent']]);
  });

  for (const backend of ['store', 'redis'] as const) {
    it(`two processes editing one item share the onEdit window (${backend})`, async () => {
      const env: Record<string, string> =
        backend === 'redis'
          ? { REDIS_URL: 'redis://127.0.0.1:6379', REDIS_PREFIX: `sy-ev-${process.pid}-${Date.now()}` }
          : {};
      const ports = [await freePort(), await freePort()];
      const bases = ports.map((p) => `http://127.0.0.1:${p}`);
      const a = start(dataDir, ports[0]!, env);
      children.push(a);
      await ready(bases[0]!);
      const b2 = start(dataDir, ports[1]!, env);
      children.push(b2);
      await ready(bases[1]!);
      const { token, b } = await tokenFor(bases[0]!, dataDir);
      // Each process issues tokens for its own PUBLIC_URL.
      const tokens = [token, (await tokenFor(bases[1]!, dataDir)).token];
      const ds = b.demo.datastoreId as string;
      await call(bases[0]!, 'PATCH', `/datacollection/${ds}`, {
        token,
        body: { triggerUrls: [{ event: 'onEdit', url: `${rx.url}/edit`, apiKey: 'k-1234' }] },
      });
      const created = await call(bases[0]!, 'POST', `/memory/items?collectionId=${ds}`, {
        token,
        body: { key: 'shared', content: { n: 0 } },
      });
      const edits = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          call(bases[i % 2]!, 'PATCH', `/memory/items/${created.body.id}?collectionId=${ds}`, {
            token: tokens[i % 2]!,
            body: { content: { n: i + 1 } },
          }),
        ),
      );
      expect(
        edits.every((r) => r.status === 200),
        edits.find((r) => r.status !== 200)?.text,
      ).to.equal(true);
      await rx.waitFor(2, 15_000);
      const deadline = Date.now() + 15_000;
      let items: any[] = [];
      while (Date.now() < deadline) {
        items = (await call(bases[1]!, 'GET', `/v1/collections/${ds}/deliveries?limit=200`, { token: tokens[1]! })).body
          .items;
        if (items.length === 40 && items.every((d) => d.status !== 'pending')) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(items.filter((d) => d.status === 'sent').length).to.equal(2);
      expect(items.filter((d) => d.status === 'dropped').length).to.equal(38);
      await new Promise((r) => setTimeout(r, 500));
      expect(rx.calls).to.have.length(2);
    });
  }
});
