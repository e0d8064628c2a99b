/**
 * A listener on one of this machine's own non-loopback interface addresses (found with
 * os.networkInterfaces(), one per family) is refused by every path through the outbound policy
 * (src/kernel/outbound.ts) while OUTBOUND_ALLOWLIST is unset, and reached once it names the
 * address: event calls and upload fetches (outboundRequest), workflow `http` steps and upstream
 * connections (policyFetch, here inside a real `http` step), trigger URLs and upstreams judged
 * at registration (eventCalls().addresses, registrationRefusal), and the browsers' guarded
 * proxy (plain HTTP and CONNECT).
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { GuardedProxy } from '../../../src/browser/proxy.js';
import { executeStep } from '../../../src/engine/execute-step.js';
import type { SandboxPool } from '../../../src/engine/sandbox/pool.js';
import { eventCalls } from '../../../src/events/outbound.js';
import {
  OutboundError,
  OutboundPolicy,
  outboundRequest,
  parseOutboundAllowlist,
  policyFetch,
} from '../../../src/kernel/outbound.js';
import { requireOwnAddresses, urlHost } from '../../helpers/own-address.js';
import { silentLog } from '../engine/sandbox-helpers.js';

const OWN = /refused: an address of this machine \(allow it with OUTBOUND_ALLOWLIST\)/;

describe("outbound policy: a listener on this machine's own interface address", function () {
  this.timeout(20_000);
  const targets: Array<{ address: string; origin: string; server: http.Server; hits: number }> = [];

  before(async function () {
    for (const { address } of requireOwnAddresses(this)) {
      const target = { address, origin: '', server: http.createServer(), hits: 0 };
      target.server.on('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
        target.hits++;
        res.setHeader('content-type', 'application/json');
        res.end('{"reached":true}');
      });
      await new Promise<void>((r) => target.server.listen(0, address, r));
      target.origin = `http://${urlHost(address)}:${(target.server.address() as AddressInfo).port}`;
      targets.push(target);
    }
  });
  after(async () => {
    for (const t of targets) {
      t.server.closeAllConnections();
      await new Promise((r) => t.server.close(r));
    }
  });
  beforeEach(() => {
    for (const t of targets) t.hits = 0;
  });

  const request = (url: string, policy: OutboundPolicy) =>
    outboundRequest(
      url,
      { orgId: 'org_1', method: 'GET', headers: {}, timeoutMs: 5_000, maxResponseBytes: 1024 },
      policy,
    );
  const httpStep = (url: string, policy: OutboundPolicy) =>
    executeStep(
      { type: 'http', name: 'call', request: { method: 'GET', url } },
      { inputs: {}, steps: [], runId: 'run_1', automationId: 'wf_1', stepIndex: 0 },
      { sandbox: {} as SandboxPool, log: silentLog, fetchImpl: policyFetch(policy) },
    );

  it('outboundRequest (event calls) and policyFetch inside an http step refuse it without OUTBOUND_ALLOWLIST, and reach it once OUTBOUND_ALLOWLIST names it', async () => {
    for (const t of targets) {
      const policy = new OutboundPolicy(parseOutboundAllowlist(''));
      const refused = await request(`${t.origin}/x`, policy).catch((e: unknown) => e);
      expect(refused, t.address).to.be.instanceOf(OutboundError).and.to.include({ kind: 'refused' });
      expect((refused as Error).message).to.equal(
        `Outbound request to ${t.address} refused: an address of this machine (allow it with OUTBOUND_ALLOWLIST)`,
      );
      const step = await httpStep(`${t.origin}/x`, policy);
      expect(step.status, t.address).to.equal('FAILED');
      expect(step.result).to.match(OWN);
      const fetched = await policyFetch(policy)(`${t.origin}/x`).catch((e: { cause?: Error }) => e.cause);
      expect((fetched as Error).message).to.match(OWN);
      // The loopback allow-list the tests use elsewhere does not name it either.
      const loopback = new OutboundPolicy(parseOutboundAllowlist('127.0.0.0/8,::1/128'));
      expect((await request(`${t.origin}/x`, loopback).catch((e: Error) => e)) as Error).to.include({
        kind: 'refused',
      });
      expect(t.hits, t.address).to.equal(0);
      const naming = new OutboundPolicy(parseOutboundAllowlist(t.address));
      const res = await request(`${t.origin}/x`, naming);
      expect([res.status, res.body.toString()]).to.deep.equal([200, '{"reached":true}']);
      const reached = await httpStep(`${t.origin}/x`, naming);
      expect(reached, t.address).to.include({ status: 'COMPLETE', resultType: 'json' });
      expect(t.hits).to.equal(2);
    }
  });

  it('trigger URLs and upstreams are refused at registration, and event calls when made', async () => {
    for (const t of targets) {
      const url = new URL(`${t.origin}/hook`);
      const config = {
        outboundAllowlist: [],
        baseUrls: { triggers: 'http://127.0.0.1:1' },
        host: '127.0.0.1',
        port: 1,
      };
      const calls = eventCalls(config as unknown as Parameters<typeof eventCalls>[0]);
      expect(calls.addresses.refusal(url), t.address).to.match(OWN);
      const posted = await calls
        .post({ orgId: 'org_1', url: url.href, body: '{}', headers: { 'content-type': 'application/json' } })
        .catch((e: Error) => e);
      expect((posted as Error).message).to.match(OWN);
      expect(await new OutboundPolicy(parseOutboundAllowlist('')).registrationRefusal(url)).to.equal(
        `${t.address} is an address the outbound policy refuses (an address of this machine; allow it with OUTBOUND_ALLOWLIST)`,
      );
      const allowing = eventCalls({ ...config, outboundAllowlist: [t.address] } as unknown as Parameters<
        typeof eventCalls
      >[0]);
      expect(allowing.addresses.refusal(url)).to.equal(undefined);
      expect((await allowing.post({ orgId: 'org_1', url: url.href, body: '{}', headers: {} })).status).to.equal(200);
      expect(await new OutboundPolicy(parseOutboundAllowlist(t.address)).registrationRefusal(url)).to.equal(undefined);
      expect(t.hits).to.equal(1);
    }
  });

  it("the browsers' guarded proxy answers 403 for it (plain HTTP and CONNECT), and forwards once allow-listed", async () => {
    for (const t of targets) {
      const refusing = new GuardedProxy(new OutboundPolicy(parseOutboundAllowlist(''), []));
      const allowing = new GuardedProxy(new OutboundPolicy(parseOutboundAllowlist(t.address), []));
      const refusingPort = Number(new URL(await refusing.start()).port);
      const allowingPort = Number(new URL(await allowing.start()).port);
      try {
        const refused = await viaProxy(refusingPort, `${t.origin}/page`);
        expect(refused.status, t.address).to.equal(403);
        expect(refused.body).to.match(OWN);
        const authority = new URL(t.origin).host;
        expect(await connectStatus(refusingPort, authority)).to.equal('HTTP/1.1 403 Forbidden');
        expect(t.hits).to.equal(0);
        expect(await viaProxy(allowingPort, `${t.origin}/page`)).to.deep.equal({
          status: 200,
          body: '{"reached":true}',
        });
        expect(await connectStatus(allowingPort, authority)).to.equal('HTTP/1.1 200 Connection Established');
      } finally {
        await refusing.close();
        await allowing.close();
      }
    }
  });
});

/** A plain-HTTP GET of `url` through the proxy on `port`. */
function viaProxy(port: number, url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: url, headers: { host: new URL(url).host } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

/** The status line the proxy on `port` answers to CONNECT `authority`. */
function connectStatus(port: number, authority: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () =>
      socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`),
    );
    let text = '';
    socket.on('data', (c: Buffer) => {
      text += c.toString('latin1');
      const end = text.indexOf('\r\n');
      if (end >= 0) {
        socket.destroy();
        resolve(text.slice(0, end));
      }
    });
    socket.on('error', reject);
  });
}
