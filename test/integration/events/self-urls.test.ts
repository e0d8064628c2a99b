/**
 * Trigger URLs on the service's own loopback names (openapi/resources.yaml, outbound policy):
 * without PUBLIC_URL, `127.0.0.1`, `[::1]` and `localhost` on the listening port are the
 * service itself, accepted when saved and delivered to its own trigger without
 * OUTBOUND_ALLOWLIST; with PUBLIC_URL naming another host they still are (the service listens
 * on loopback). Loopback on any other port stays refused.
 */
import { expect } from 'chai';
import { call, createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { storeKinds } from '../../helpers/store.js';
import { code, deploy, waitTerminal, type Deployed } from '../../helpers/runs.js';

const kinds = await storeKinds();

const setups: Array<{ name: string; env: Record<string, string | undefined> }> = [
  // Dual stack, so [::1] reaches the service too.
  { name: 'no PUBLIC_URL, listening on ::', env: { PUBLIC_URL: undefined, HOST: '::', OUTBOUND_ALLOWLIST: '' } },
  {
    name: 'PUBLIC_URL on another host, listening on ::',
    env: { PUBLIC_URL: 'https://switchyard.example', HOST: '::', OUTBOUND_ALLOWLIST: '' },
  },
];

for (const kind of kinds) {
  for (const setup of setups) {
    describe(`trigger URLs on the service's own loopback names (${setup.name}, ${kind})`, function () {
      // The first server of a process warms the code-step sandbox.
      this.timeout(60_000);
      let server: TestServer;
      let org: TestOrg;
      let wf: Deployed;
      let port: number;
      const api = <T = any>(method: string, path: string, body?: unknown) =>
        call<T>(server.baseUrl, method, path, { token: org.token, body });

      before(async () => {
        server = await startTestServer(kind, setup.env);
        port = Number(new URL(server.baseUrl).port);
        org = await createTestOrg(server);
        wf = await deploy(server, org, {
          name: 'Self receiver',
          steps: [code('Echo the event', 'return JSON.stringify(ctx.inputs);', { resultType: 'json' })],
        });
      });
      after(async () => server.close());
      afterEach(() => server.assertResponsesValid());

      it('accepts 127.0.0.1, [::1] and localhost on the service port and delivers them to the service', async () => {
        const path = `/ext/triggers/${wf.apiTriggerId}`;
        const urls = [
          `http://127.0.0.1:${port}${path}`,
          `http://[::1]:${port}${path}`,
          `http://localhost:${port}${path}`,
        ];
        const ds = (await api('POST', '/v1/collections', { name: 'Self', type: 'structured_datastore' })).body
          .collectionId as string;
        const saved = await api('PATCH', `/datacollection/${ds}`, {
          triggerUrls: urls.map((url) => ({ event: 'onCreate', url, apiKey: org.apiKey })),
        });
        expect(saved.status, saved.text).to.equal(200);

        expect(
          (await api('POST', `/memory/items?collectionId=${ds}`, { key: 'k1', content: { n: 1 } })).status,
        ).to.equal(201);
        const deadline = Date.now() + 15_000;
        let log: any[] = [];
        for (;;) {
          log = (await api('GET', `/v1/collections/${ds}/deliveries?event=onCreate`)).body.items as any[];
          if (log.length === urls.length && log.every((d) => d.status !== 'pending')) break;
          if (Date.now() > deadline) throw new Error(`deliveries: ${JSON.stringify(log)}`);
          await new Promise((r) => setTimeout(r, 50));
        }
        expect(log.map((d) => d.url).sort()).to.deep.equal([...urls].sort());
        for (const d of log) {
          expect(d, JSON.stringify(d)).to.deep.include({ status: 'sent', httpStatus: 200 });
          const run = await waitTerminal(server, org.apiKey, wf.automationId, d.runId as string);
          expect(run.status, d.url as string).to.equal('COMPLETE');
        }
      });

      it('refuses loopback on any other port without OUTBOUND_ALLOWLIST', async () => {
        const other = port === 65535 ? port - 1 : port + 1;
        const ds = (await api('POST', '/v1/collections', { name: 'Elsewhere', type: 'structured_datastore' })).body
          .collectionId as string;
        for (const host of ['127.0.0.1', '[::1]', 'localhost']) {
          const url = `http://${host}:${other}/ext/triggers/${wf.apiTriggerId}`;
          const saved = await api('PATCH', `/datacollection/${ds}`, {
            triggerUrls: [{ event: 'onCreate', url, apiKey: org.apiKey }],
          });
          expect(saved.status, url).to.equal(400);
          expect(saved.body.error, url).to.equal('invalid_trigger_url');
        }
      });
    });
  }
}
