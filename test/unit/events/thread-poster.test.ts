/**
 * The delivery thread (src/events/outbound.ts threadPoster): event calls made on a worker
 * thread with the same outbound policy as in-process calls; many calls in one tick travel as one
 * batch; calls pending when the thread ends fail (recorded as failed), and the next call starts a
 * new thread.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { eventCalls, threadPoster } from '../../../src/events/outbound.js';
import { recorder } from '../../helpers/connection-recorder.js';

describe('events: the delivery thread', function () {
  this.timeout(20_000);
  let server: http.Server;
  let url: string;
  let hold = false;
  const held: http.ServerResponse[] = [];
  const bodies: string[] = [];

  before(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        bodies.push(body);
        if (hold) {
          held.push(res);
          return;
        }
        res.writeHead(202, { 'x-pf-run-id': 'run-1', 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  after(async () => {
    for (const res of held) res.destroy();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('delivers a batch of calls and reports status, run id and duration for each', async () => {
    const t = threadPoster({
      outboundAllowlist: ['127.0.0.0/8'],
      baseUrls: { triggers: 'http://switchyard.invalid' } as never,
      host: '0.0.0.0',
      port: 0,
    });
    try {
      bodies.length = 0;
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          t.post({ orgId: 'org_a', url, body: JSON.stringify({ i }), headers: { 'content-type': 'application/json' } }),
        ),
      );
      expect(results.map((r) => r.status)).to.deep.equal(Array(20).fill(202));
      expect(results[0]!.headers['x-pf-run-id']).to.equal('run-1');
      expect(results.every((r) => r.durationMs >= 0)).to.equal(true);
      expect(bodies.map((b) => (JSON.parse(b) as { i: number }).i).sort((a, b) => a - b)).to.deep.equal([
        ...Array(20).keys(),
      ]);
    } finally {
      await t.close();
    }
  });

  it('applies the outbound policy on the thread: loopback is refused without the allow-list', async () => {
    const t = threadPoster({
      outboundAllowlist: [],
      baseUrls: { triggers: 'http://switchyard.invalid' } as never,
      // Port 0: no loopback origin is the service itself.
      host: '0.0.0.0',
      port: 0,
    });
    try {
      bodies.length = 0;
      const err = await t.post({ orgId: 'org_a', url, body: '{}', headers: {} }).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(err?.message).to.match(/refused/i);
      expect(bodies).to.have.length(0);
    } finally {
      await t.close();
    }
  });

  it('fails the calls pending when the thread ends, and starts a new thread for the next call', async () => {
    const t = threadPoster({
      outboundAllowlist: ['127.0.0.0/8'],
      baseUrls: { triggers: 'http://switchyard.invalid' } as never,
      host: '0.0.0.0',
      port: 0,
    });
    try {
      hold = true;
      const pending = t.post({ orgId: 'org_a', url, body: '{}', headers: {} }).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      while (held.length === 0) await new Promise((r) => setTimeout(r, 10));
      await t.close();
      expect((await pending)?.message).to.match(/delivery thread exited/);
      hold = false;
      const again = await t.post({ orgId: 'org_a', url, body: '{}', headers: {} });
      expect(again.status).to.equal(202);
    } finally {
      hold = false;
      await t.close();
    }
  });

  it("keeps each organisation's connections apart, on the thread and in process", async () => {
    const config = {
      outboundAllowlist: ['127.0.0.0/8'],
      baseUrls: { triggers: 'http://switchyard.invalid' } as never,
      host: '0.0.0.0',
      port: 0,
    };
    for (const [name, poster] of [
      ['thread', threadPoster(config)],
      ['in process', { ...eventCalls(config), close: async () => undefined }],
    ] as const) {
      const target = await recorder();
      try {
        for (const orgId of ['org_a', 'org_a', 'org_b', 'org_a', 'org_b']) {
          const res = await poster.post({ orgId, url: target.url, body: '{}', headers: { 'x-org': orgId } });
          expect(res.status).to.equal(200);
        }
        expect(
          target.carried.map((orgs) => [...orgs]),
          name,
        ).to.deep.equal([['org_a'], ['org_b']]);
      } finally {
        await poster.close();
        await target.close();
      }
    }
  });
});
