/**
 * GET /v1/runs (openapi/management.yaml `listRuns`): newest first, filters by workflow,
 * trigger, status and creation time, cursor paging, bad filters, and organisation scoping.
 */
import { expect } from 'chai';
import { storeKinds } from '../../helpers/store.js';
import { startTestServer, createTestOrg, call, type TestServer, type TestOrg } from '../../helpers/server.js';
import { deploy, code, type Deployed } from '../../helpers/runs.js';

const kinds = await storeKinds();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const kind of kinds) {
  describe(`HTTP: the runs list (${kind})`, function () {
    this.timeout(60_000);
    let server: TestServer;
    let org: TestOrg;
    let other: TestOrg;
    let ok: Deployed;
    let failing: Deployed;
    /** Run ids in the order they were started. */
    const started: string[] = [];
    let between = '';

    const list = (qs = '', token = org.token) => call(server.baseUrl, 'GET', `/v1/runs${qs}`, { token });
    const run = async (url: string, headers: Record<string, string>) => {
      const res = await call(server.baseUrl, 'POST', url, { headers: { 'x-api-wait': 'true', ...headers }, body: {} });
      expect(res.status, res.text).to.equal(200);
      started.push(res.headers.get('x-pf-run-id')!);
    };

    before(async () => {
      server = await startTestServer(kind);
      org = await createTestOrg(server, 'Runs org');
      other = await createTestOrg(server, 'Other org');
      ok = await deploy(server, org, { name: 'Fine', steps: [code('One', 'return "1";')] });
      failing = await deploy(server, org, { name: 'Broken', steps: [code('Boom', 'throw new Error("boom");')] });
      await run(`/ext/triggers/${ok.apiTriggerId}`, { 'x-api-key': org.apiKey });
      await run(`/ext/triggers/${ok.apiTriggerId}`, { 'x-api-key': org.apiKey });
      await sleep(20);
      between = new Date().toISOString();
      await sleep(20);
      await run(`/ext/webhook/${org.apiKey}/triggers/${ok.webhookTriggerId}`, {});
      await run(`/ext/triggers/${failing.apiTriggerId}`, { 'x-api-key': org.apiKey });
      // The other organisation's run must never show up in this one's list.
      const theirs = await deploy(server, other, { name: 'Theirs', steps: [code('One', 'return "1";')] });
      await call(server.baseUrl, 'POST', `/ext/triggers/${theirs.apiTriggerId}`, {
        headers: { 'x-api-key': other.apiKey, 'x-api-wait': 'true' },
        body: {},
      });
    });
    after(async () => server.close());
    afterEach(() => server.assertResponsesValid());

    it("op:listRuns lists the organisation's runs newest first with their summaries", async () => {
      const res = await list();
      expect(res.status, res.text).to.equal(200);
      expect(res.body.items.map((r: any) => r.runId)).to.deep.equal([...started].reverse());
      expect(res.body.nextCursor).to.equal(null);
      const [broken, hook, , first] = res.body.items;
      expect(broken).to.deep.include({
        automationId: failing.automationId,
        automationVersion: 1,
        triggerId: failing.apiTriggerId,
        status: 'FAILED',
        startedBy: 'api_trigger',
      });
      expect(broken.error).to.be.a('string').and.match(/boom/);
      expect(hook).to.deep.include({
        triggerId: ok.webhookTriggerId,
        status: 'COMPLETE',
        startedBy: 'webhook_trigger',
        error: null,
      });
      expect(first).to.deep.include({ automationId: ok.automationId, triggerId: ok.apiTriggerId, status: 'COMPLETE' });
      expect(Date.parse(first.createdAt)).to.be.at.most(Date.parse(first.startedAt));
      expect(Date.parse(first.startedAt)).to.be.at.most(Date.parse(first.finishedAt));
    });

    it('op:listRuns filters by workflow, trigger, status and time, and the filters combine', async () => {
      const ids = async (qs: string) => {
        const res = await list(qs);
        expect(res.status, res.text).to.equal(200);
        return res.body.items.map((r: any) => r.runId) as string[];
      };
      const [a1, a2, hook, broken] = started as [string, string, string, string];
      expect(await ids(`?automationId=${ok.automationId}`)).to.deep.equal([hook, a2, a1]);
      expect(await ids(`?triggerId=${ok.webhookTriggerId}`)).to.deep.equal([hook]);
      expect(await ids('?status=FAILED')).to.deep.equal([broken]);
      expect(await ids(`?createdAfter=${encodeURIComponent(between)}`)).to.deep.equal([broken, hook]);
      expect(await ids(`?createdBefore=${encodeURIComponent(between)}`)).to.deep.equal([a2, a1]);
      expect(await ids(`?automationId=${ok.automationId}&createdAfter=${encodeURIComponent(between)}`)).to.deep.equal([
        hook,
      ]);
      // A time zone offset names the same instant.
      const offset = new Date(Date.parse(between) + 2 * 3600_000).toISOString().replace('Z', '+02:00');
      expect(await ids(`?createdAfter=${encodeURIComponent(offset)}`)).to.deep.equal([broken, hook]);
      // Unknown ids and empty or reversed windows match nothing.
      expect(await ids('?automationId=wf_unknown')).to.deep.equal([]);
      expect(
        await ids(`?createdAfter=${encodeURIComponent(between)}&createdBefore=2000-01-01T00:00:00Z`),
      ).to.deep.equal([]);
    });

    it('op:listRuns pages with a cursor: no run twice, none missed, filters kept', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res = await list(`?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
        expect(res.status, res.text).to.equal(200);
        expect(res.body.items).to.have.length.at.most(1);
        seen.push(...res.body.items.map((r: any) => r.runId));
        cursor = res.body.nextCursor;
        pages++;
      } while (cursor && pages < 10);
      expect(seen).to.deep.equal([...started].reverse());
      const page1 = await list(`?automationId=${ok.automationId}&limit=2`);
      const page2 = await list(`?automationId=${ok.automationId}&limit=2&cursor=${page1.body.nextCursor}`);
      expect(page2.body.items.map((r: any) => r.runId)).to.deep.equal([started[0]]);
    });

    it('op:listRuns rejects bad filters and foreign cursors with 400 and scopes to the organisation', async () => {
      for (const qs of [
        '?status=DONE',
        '?createdAfter=yesterday',
        '?limit=0',
        '?limit=201',
        '?cursor=bm90LWEtY3Vyc29y',
        '?automationId=',
      ]) {
        const res = await list(qs);
        expect(res.status, `${qs}: ${res.text}`).to.equal(400);
      }
      const collections = await call(server.baseUrl, 'POST', '/v1/collections', {
        token: org.token,
        body: { name: 'C1', type: 'structured_datastore' },
      });
      await call(server.baseUrl, 'POST', '/v1/collections', {
        token: org.token,
        body: { name: 'C2', type: 'structured_datastore' },
      });
      expect(collections.status).to.equal(201);
      const foreign = (await call(server.baseUrl, 'GET', '/v1/collections?limit=1', { token: org.token })).body
        .nextCursor as string;
      const res = await list(`?cursor=${foreign}`);
      expect([res.status, res.body.error]).to.deep.equal([400, 'invalid_cursor']);
      const theirs = await list('', other.token);
      expect(theirs.body.items).to.have.length(1);
      expect(theirs.body.items.map((r: any) => r.runId)).to.not.include.members(started);
      expect((await call(server.baseUrl, 'GET', '/v1/runs')).status).to.equal(401);
    });
  });
}
