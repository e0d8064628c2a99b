/**
 * End to end (spec section 14 with endpoints 1-4): an item edit in a datastore and a filestore
 * upload start a workflow through its own API trigger URL (this service's origin: allowed
 * without OUTBOUND_ALLOWLIST), the run receives the event payload as its inputs, and the
 * delivery log names the run.
 */
import { lookup } from 'node:dns/promises';
import os from 'node:os';
import { expect } from 'chai';
import { call, createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { storeKinds } from '../../helpers/store.js';
import { code, deploy, waitTerminal, type Deployed } from '../../helpers/runs.js';

const kinds = await storeKinds();

for (const kind of kinds) {
  describe(`resource events start workflow runs (${kind})`, () => {
    let server: TestServer;
    let org: TestOrg;
    let wf: Deployed;
    const api = <T = any>(method: string, path: string, body?: unknown) =>
      call<T>(server.baseUrl, method, path, { token: org.token, body });

    /** The run the delivery of `eventFilter` started, with what its step saw. */
    const runOf = async (collectionId: string, event: string) => {
      const deadline = Date.now() + 15_000;
      for (;;) {
        const log = (await api('GET', `/v1/collections/${collectionId}/deliveries?event=${event}`)).body.items as any[];
        const sent = log.find((d) => d.status !== 'pending');
        if (sent) {
          expect(sent, JSON.stringify(sent)).to.deep.include({ status: 'sent', httpStatus: 200 });
          expect((await waitTerminal(server, org.apiKey, wf.automationId, sent.runId)).status).to.equal('COMPLETE');
          const results = await call(
            server.baseUrl,
            'GET',
            `/ext/webhook/${org.apiKey}/runs/${wf.automationId}/${sent.runId}/results`,
          );
          const url = results.body.results[0].resultUrls['result.json'].url as string;
          return { delivery: sent, seen: (await (await fetch(url)).json()) as Record<string, any> };
        }
        if (Date.now() > deadline) throw new Error('no delivery');
        await new Promise((r) => setTimeout(r, 50));
      }
    };

    before(async () => {
      server = await startTestServer(kind, { OUTBOUND_ALLOWLIST: '' });
      org = await createTestOrg(server);
      wf = await deploy(server, org, {
        name: 'Event receiver',
        steps: [code('Echo the event', 'return JSON.stringify(ctx.inputs);', { resultType: 'json' })],
      });
    });
    after(async () => server.close());
    afterEach(() => server.assertResponsesValid());

    it('an item edit runs the workflow with the onEdit payload', async () => {
      const trigger = { event: 'onEdit', url: `${server.baseUrl}/ext/triggers/${wf.apiTriggerId}`, apiKey: org.apiKey };
      const ds = (
        await api('POST', '/v1/collections', { name: 'Leads', type: 'structured_datastore', triggerUrls: [trigger] })
      ).body.collectionId as string;
      const item = (
        await api('POST', `/memory/items?collectionId=${ds}`, { key: 'lead-7', content: { stage: 'lead' } })
      ).body;
      expect(
        (await api('PATCH', `/memory/items/${item.id}?collectionId=${ds}`, { content: { stage: 'won' } })).status,
      ).to.equal(200);
      const { delivery, seen } = await runOf(ds, 'onEdit');
      expect(seen).to.deep.include({
        event: 'onEdit',
        eventId: delivery.eventId,
        itemId: item.id,
        key: 'lead-7',
        content: { stage: 'won' },
        changed: { content: { stage: 'lead' }, metadata: {} },
      });
    });

    it('a filestore upload runs the workflow with a downloadable signedUrl', async () => {
      const trigger = {
        event: 'onCreate',
        url: `${server.baseUrl}/ext/triggers/${wf.apiTriggerId}`,
        apiKey: org.apiKey,
      };
      const fs = (
        await api('POST', '/v1/collections', { name: 'Contracts', type: 'filestore', triggerUrls: [trigger] })
      ).body.collectionId as string;
      const form = new FormData();
      form.append('file', new Blob(['%PDF-1.4 pretend'], { type: 'application/pdf' }), 'contract.pdf');
      const up = await fetch(`${server.baseUrl}/filestorage/items/upload?collectionId=${fs}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${org.token}` },
        body: form,
      });
      expect(up.status).to.equal(201);
      const { seen } = await runOf(fs, 'onCreate');
      expect(seen).to.deep.include({
        event: 'onCreate',
        collectionType: 'filestorage',
        filename: 'contract.pdf',
        mimeType: 'application/pdf',
      });
      const download = await fetch(seen.signedUrl as string);
      expect([download.status, await download.text()]).to.deep.equal([200, '%PDF-1.4 pretend']);
    });

    it('a host name that resolves to a private address is refused when called (after DNS)', async () => {
      // `localhost` and IP literals are refused when saved; a name is checked on the address it resolves to.
      const { address } = await lookup(os.hostname());
      const ds = (await api('POST', '/v1/collections', { name: 'Guarded', type: 'structured_datastore' })).body
        .collectionId as string;
      const saved = await api('PATCH', `/datacollection/${ds}`, {
        triggerUrls: [{ event: 'onCreate', url: `http://${os.hostname()}:9/hook`, apiKey: 'k' }],
      });
      expect(saved.status, saved.text).to.equal(200);
      await api('POST', `/memory/items?collectionId=${ds}`, { key: 'x', content: {} });
      const deadline = Date.now() + 10_000;
      let d: any;
      while (Date.now() < deadline) {
        d = (await api('GET', `/v1/collections/${ds}/deliveries`)).body.items[0];
        if (d && d.status !== 'pending') break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(d).to.deep.include({ status: 'failed', httpStatus: null });
      expect(d.error).to.include(`Outbound request to ${address} refused`);
    });
  });
}
