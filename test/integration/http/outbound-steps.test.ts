/**
 * Workflow `http` steps go through the outbound policy (OUTBOUND_ALLOWLIST,
 * src/kernel/outbound.ts), as event calls do: with an empty allow-list, a loopback address, by
 * literal or by name, fails the step with the reason and nothing is sent; the service's own
 * URLs stay reachable; an allow-listed range is called. A listener on one of the machine's own
 * non-loopback interface addresses is refused as "an address of this machine" unless
 * OUTBOUND_ALLOWLIST names that address.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { storeKinds } from '../../helpers/store.js';
import { startTestServer, createTestOrg, call, type TestServer, type TestOrg } from '../../helpers/server.js';
import { deploy } from '../../helpers/runs.js';
import { requireOwnAddresses, urlHost } from '../../helpers/own-address.js';

const [kind] = await storeKinds();

describe('HTTP: workflow http steps and the outbound policy', function () {
  this.timeout(60_000);
  let guarded: TestServer;
  let open: TestServer;
  let receiver: http.Server;
  let target = '';
  let hits = 0;

  before(async () => {
    receiver = http.createServer((_req, res) => {
      hits++;
      res.setHeader('content-type', 'application/json');
      res.end('{"reached":true}');
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    target = `127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    guarded = await startTestServer(kind!, { OUTBOUND_ALLOWLIST: '' });
    open = await startTestServer(kind!, { OUTBOUND_ALLOWLIST: '127.0.0.0/8' });
  });
  after(async () => {
    await guarded.close();
    await open.close();
    receiver.closeAllConnections();
    await new Promise((r) => receiver.close(r));
  });
  afterEach(() => {
    guarded.assertResponsesValid();
    open.assertResponsesValid();
  });

  const runStep = async (server: TestServer, org: TestOrg, url: string) => {
    const wf = await deploy(server, org, {
      name: 'Fetch',
      steps: [{ type: 'http', name: 'Fetch', request: { method: 'GET', url } }],
    });
    const res = await call(server.baseUrl, 'POST', `/ext/triggers/${wf.apiTriggerId}`, {
      headers: { 'x-api-key': org.apiKey, 'x-api-wait': 'true' },
      body: {},
    });
    expect(res.status, res.text).to.equal(200);
    return res.body as { status: string; results: Array<{ result: { result: string } }> };
  };

  it('refuses loopback by literal and by name, and nothing reaches the receiver', async () => {
    const org = await createTestOrg(guarded);
    hits = 0;
    for (const url of [`http://${target}/x`, `http://${target.replace('127.0.0.1', 'localhost')}/x`]) {
      const out = await runStep(guarded, org, url);
      expect(out.status, url).to.equal('FAILED');
      expect(out.results[0]!.result.result, url).to.match(
        /not sent: Outbound request to (127\.0\.0\.1|::1) refused: loopback address \(RFC (1122|4291)\) \(allow it with OUTBOUND_ALLOWLIST\)/,
      );
    }
    const metadata = await runStep(guarded, org, 'http://169.254.169.254/latest/meta-data/');
    expect(metadata.results[0]!.result.result).to.match(/cloud metadata/);
    expect(hits).to.equal(0);
  });

  it("reaches the service's own URLs without configuration", async () => {
    const org = await createTestOrg(guarded);
    const out = await runStep(guarded, org, `${guarded.baseUrl}/healthz`);
    expect(out.status, JSON.stringify(out)).to.equal('COMPLETE');
  });

  it('calls an allow-listed range', async () => {
    const org = await createTestOrg(open);
    hits = 0;
    const out = await runStep(open, org, `http://${target}/x`);
    expect(out.status, JSON.stringify(out)).to.equal('COMPLETE');
    expect(JSON.parse(out.results[0]!.result.result)).to.deep.equal({ reached: true });
    expect(hits).to.equal(1);
  });

  it("refuses a listener on the machine's own interface address, unless OUTBOUND_ALLOWLIST names it", async function () {
    const [own] = requireOwnAddresses(this);
    let ownHits = 0;
    const listener = http.createServer((_req, res) => {
      ownHits++;
      res.setHeader('content-type', 'application/json');
      res.end('{"own":true}');
    });
    await new Promise<void>((r) => listener.listen(0, own!.address, r));
    const url = `http://${urlHost(own!.address)}:${(listener.address() as AddressInfo).port}/x`;
    const naming = await startTestServer(kind!, { OUTBOUND_ALLOWLIST: own!.address });
    try {
      for (const server of [guarded, open]) {
        const out = await runStep(server, await createTestOrg(server), url);
        expect(out.status, url).to.equal('FAILED');
        expect(out.results[0]!.result.result).to.match(
          /not sent: Outbound request to \S+ refused: an address of this machine \(allow it with OUTBOUND_ALLOWLIST\)/,
        );
      }
      expect(ownHits).to.equal(0);
      const out = await runStep(naming, await createTestOrg(naming), url);
      expect(out.status, JSON.stringify(out)).to.equal('COMPLETE');
      expect(JSON.parse(out.results[0]!.result.result)).to.deep.equal({ own: true });
      expect(ownHits).to.equal(1);
    } finally {
      await naming.close();
      listener.closeAllConnections();
      await new Promise((r) => listener.close(r));
    }
  });
});
