/**
 * GET /v1/browser-tasks and GET /v1/browser-tasks/{sessionId} (openapi/management.yaml
 * `listBrowserTasks`, `getBrowserTask`) on both stores: task records written through the
 * browser context's own task store (a real Chromium task runs in
 * test/integration/console/console-runs-browser.test.ts), newest first with cursor paging, one
 * task with its log and a downloadable file, a stale RUNNING task failed on read, and
 * organisation scoping.
 */
import { expect } from 'chai';
import { storeKinds } from '../../helpers/store.js';
import { startTestServer, createTestOrg, call, type TestServer, type TestOrg } from '../../helpers/server.js';
import { insertTask, finishTask } from '../../../src/browser/tasks.js';
import { addFile, createCollection } from '../../../src/events/index.js';
import { newId } from '../../../src/kernel/ids.js';

const kinds = await storeKinds();

for (const kind of kinds) {
  describe(`HTTP: browser tasks (${kind})`, function () {
    this.timeout(60_000);
    let server: TestServer;
    let org: TestOrg;
    let other: TestOrg;
    /** Session ids in start order. */
    const ids: string[] = [];

    const get = (url: string, token = org.token) => call(server.baseUrl, 'GET', url, { token });

    async function task(opts: { orgId: string; deadlineAt?: string }): Promise<{ id: string; collectionId: string }> {
      const id = newId('ses');
      const collection = await createCollection(server.app.services.db, opts.orgId, {
        name: `Browser task ${id}`,
        type: 'filestore',
      });
      await insertTask(server.app.services.db, {
        id,
        orgId: opts.orgId,
        kind: 'script',
        buildId: 'bld_test',
        collectionId: collection.id,
        logFileName: `browser-task-${id}.log`,
        message: 'Task started.',
        deadlineAt: opts.deadlineAt ?? new Date(Date.now() + 60_000).toISOString(),
      });
      return { id, collectionId: collection.id };
    }

    before(async () => {
      server = await startTestServer(kind);
      org = await createTestOrg(server, 'Tasks org');
      other = await createTestOrg(server, 'Other org');
      const done = await task({ orgId: org.orgId });
      const collection = (await server.app.services.events.collection(org.orgId, done.collectionId))!;
      const saved = await addFile(server.app.services.events.deps, collection, {
        filename: 'note.txt',
        mimeType: 'text/plain',
        data: Buffer.from('hello'),
      });
      await finishTask(server.app.services.db, done.id, {
        status: 'completed',
        message: 'Task completed.',
        result: 'Saved note.txt',
        files: [{ fileId: saved.id, fileName: 'note.txt', mimeType: 'text/plain', size: 5, source: 'script' }],
        log: 'line one\nline two\n',
      });
      ids.push(done.id);
      ids.push((await task({ orgId: org.orgId })).id);
      await task({ orgId: other.orgId });
    });
    after(async () => server.close());
    afterEach(() => server.assertResponsesValid());

    it("op:listBrowserTasks lists the organisation's tasks newest first and pages with a cursor", async () => {
      const res = await get('/v1/browser-tasks');
      expect(res.status, res.text).to.equal(200);
      expect(res.body.items.map((t: any) => t.sessionId)).to.deep.equal([...ids].reverse());
      expect(res.body.items[1]).to.deep.include({ kind: 'script', status: 'completed', fileCount: 1 });
      expect(res.body.items[0]).to.deep.include({ status: 'RUNNING', fileCount: 0, finishedAt: null });
      const page1 = await get('/v1/browser-tasks?limit=1');
      expect(page1.body.items).to.have.length(1);
      const page2 = await get(`/v1/browser-tasks?limit=1&cursor=${page1.body.nextCursor}`);
      expect(page2.body.items.map((t: any) => t.sessionId)).to.deep.equal([ids[0]]);
      expect(page2.body.nextCursor).to.equal(null);
      const foreign = await get('/v1/browser-tasks?cursor=eyJsIjoicnVucyIsImEiOiJ4In0');
      expect(foreign.status).to.equal(400);
      expect(foreign.body.error).to.equal('invalid_cursor');
    });

    it('op:getBrowserTask shows a task with its result, log and a signed file URL', async () => {
      const res = await get(`/v1/browser-tasks/${ids[0]}`);
      expect(res.status, res.text).to.equal(200);
      expect(res.headers.get('cache-control')).to.equal('no-store');
      expect(res.body).to.deep.include({
        sessionId: ids[0],
        status: 'completed',
        result: 'Saved note.txt',
        log: 'line one\nline two\n',
        buildId: 'bld_test',
      });
      expect(res.body.files).to.have.length(1);
      expect(res.body.files[0]).to.include({ fileName: 'note.txt', mimeType: 'text/plain', size: 5, source: 'script' });
      const file = await fetch(res.body.files[0].url);
      expect(file.status).to.equal(200);
      expect(await file.text()).to.equal('hello');
    });

    it('op:getBrowserTask fails a RUNNING task past its deadline, as a poll does', async () => {
      const late = await task({ orgId: org.orgId, deadlineAt: new Date(Date.now() - 60_000).toISOString() });
      const res = await get(`/v1/browser-tasks/${late.id}`);
      expect(res.status, res.text).to.equal(200);
      expect(res.body.status).to.equal('failed');
      expect(res.body.result).to.match(/stopped without finishing/);
    });

    it("op:getBrowserTask answers 404 not_found for another organisation's task or an unknown id", async () => {
      const theirs = await get(`/v1/browser-tasks/${ids[0]}`, other.token);
      expect(theirs.status).to.equal(404);
      expect(theirs.body.error).to.equal('not_found');
      const unknown = await get('/v1/browser-tasks/ses_00000000000000000000000000000000');
      expect(unknown.status).to.equal(404);
      const anonymous = await call(server.baseUrl, 'GET', '/v1/browser-tasks');
      expect(anonymous.status).to.equal(401);
    });
  });
}
