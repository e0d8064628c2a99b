import { expect } from 'chai';
import { createWorkflow, deleteWorkflow, updateWorkflow } from '../../../src/engine/index.js';
import { createTrigger, deleteTrigger, getTrigger, listTriggers, updateTrigger } from '../../../src/triggers/index.js';
import { triggerHandlers as h } from '../../../src/triggers/handlers/index.js';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import { call, context, definition, expectAppError, ORG_A, ORG_B, request, seedOrgs } from '../engine/fixtures.js';

const kinds = await storeKinds();

for (const kind of kinds) {
  describe(`triggers service (${kind})`, () => {
    let store: TestStore;
    let wfId: string;
    beforeEach(async () => {
      store = await createTestStore(kind);
      await seedOrgs(store.db);
      wfId = (await createWorkflow(store.db, ORG_A, definition(2))).automationId;
    });
    afterEach(async () => store.close());

    it('creates api and webhook triggers with defaults', async () => {
      const api = await createTrigger(store.db, ORG_A, { automationId: wfId, kind: 'api' });
      expect(api.triggerId).to.match(/^trg_[0-9a-f]{32}$/);
      expect(api).to.include({
        automationId: wfId,
        kind: 'api',
        name: 'API trigger',
        enabled: true,
        designatedOutput: null,
        version: 1,
      });
      const hook = await createTrigger(store.db, ORG_A, {
        automationId: wfId,
        kind: 'webhook',
        name: 'Form',
        enabled: false,
      });
      expect(hook).to.include({ kind: 'webhook', name: 'Form', enabled: false });
      expect(await getTrigger(store.db, ORG_A, hook.triggerId)).to.deep.equal(hook);
    });

    it('accepts a designatedOutput naming a step of the current version, rejects one beyond it', async () => {
      const t = await createTrigger(store.db, ORG_A, {
        automationId: wfId,
        kind: 'api',
        designatedOutput: { stepIndex: 1, fileName: 'r.md' },
      });
      expect(t.designatedOutput).to.deep.equal({ stepIndex: 1, fileName: 'r.md' });
      const err = await expectAppError(
        createTrigger(store.db, ORG_A, {
          automationId: wfId,
          kind: 'api',
          designatedOutput: { stepIndex: 2, fileName: 'r.md' },
        }),
        'invalid_request',
        400,
      );
      expect(err.details).to.deep.include({ field: 'designatedOutput.stepIndex', stepCount: 2 });
      // The check follows the current version: after an update to one step, index 1 is gone.
      await updateWorkflow(store.db, ORG_A, wfId, { expectedVersion: 1, input: definition(1) });
      await expectAppError(
        updateTrigger(store.db, ORG_A, t.triggerId, {
          expectedVersion: 1,
          patch: { designatedOutput: { stepIndex: 1, fileName: 'x' } },
        }),
        'invalid_request',
        400,
      );
      const cleared = await updateTrigger(store.db, ORG_A, t.triggerId, {
        expectedVersion: 1,
        patch: { designatedOutput: null },
      });
      expect(cleared).to.include({ designatedOutput: null, version: 2 });
      expect(await store.db('triggers').count({ n: '*' }).first()).to.satisfy((r: { n: unknown }) => Number(r.n) === 1);
    });

    it('enables and disables with optimistic locking', async () => {
      const t = await createTrigger(store.db, ORG_A, { automationId: wfId, kind: 'api' });
      const off = await updateTrigger(store.db, ORG_A, t.triggerId, { expectedVersion: 1, patch: { enabled: false } });
      expect(off).to.include({ enabled: false, version: 2 });
      const err = await expectAppError(
        updateTrigger(store.db, ORG_A, t.triggerId, { expectedVersion: 1, patch: { enabled: true } }),
        'version_conflict',
        412,
      );
      expect(err.details).to.deep.equal({ currentVersion: 2 });
      const on = await updateTrigger(store.db, ORG_A, t.triggerId, {
        expectedVersion: 2,
        patch: { enabled: true, name: 'Renamed' },
      });
      expect(on).to.include({ enabled: true, name: 'Renamed', version: 3 });
      await expectAppError(
        updateTrigger(store.db, ORG_A, t.triggerId, { expectedVersion: 3, patch: {} }),
        'invalid_request',
        400,
      );
    });

    it('requires a workflow of the same organisation', async () => {
      await expectAppError(createTrigger(store.db, ORG_B, { automationId: wfId, kind: 'api' }), 'not_found', 404);
      await expectAppError(
        createTrigger(store.db, ORG_A, { automationId: 'wf_missing', kind: 'webhook' }),
        'not_found',
        404,
      );
      await expectAppError(
        createTrigger(store.db, ORG_A, { automationId: wfId, kind: 'email' as never }),
        'invalid_request',
        400,
      );
    });

    it('filters by automationId and kind', async () => {
      const other = (await createWorkflow(store.db, ORG_A, definition(1))).automationId;
      const a = await createTrigger(store.db, ORG_A, { automationId: wfId, kind: 'api' });
      const b = await createTrigger(store.db, ORG_A, { automationId: wfId, kind: 'webhook' });
      const c = await createTrigger(store.db, ORG_A, { automationId: other, kind: 'api' });
      const ids = async (f: Parameters<typeof listTriggers>[2]) =>
        (await listTriggers(store.db, ORG_A, f)).items.map((t) => t.triggerId);
      expect(await ids({})).to.deep.equal([a.triggerId, b.triggerId, c.triggerId]);
      expect(await ids({ automationId: wfId })).to.deep.equal([a.triggerId, b.triggerId]);
      expect(await ids({ kind: 'api' })).to.deep.equal([a.triggerId, c.triggerId]);
      expect(await ids({ automationId: other, kind: 'webhook' })).to.deep.equal([]);
      const page = await listTriggers(store.db, ORG_A, {}, { limit: 2 });
      expect(page.items).to.have.length(2);
      const rest = await listTriggers(store.db, ORG_A, {}, { limit: 2, cursor: page.nextCursor! });
      expect(rest.items.map((t) => t.triggerId)).to.deep.equal([c.triggerId]);
      expect(rest.nextCursor).to.equal(null);
    });

    it('deleting a workflow deletes its triggers, and only its triggers', async () => {
      const other = (await createWorkflow(store.db, ORG_A, definition(1))).automationId;
      const gone = await createTrigger(store.db, ORG_A, { automationId: wfId, kind: 'api' });
      await createTrigger(store.db, ORG_A, { automationId: wfId, kind: 'webhook' });
      const kept = await createTrigger(store.db, ORG_A, { automationId: other, kind: 'api' });
      await deleteWorkflow(store.db, ORG_A, wfId);
      await expectAppError(getTrigger(store.db, ORG_A, gone.triggerId), 'not_found', 404);
      const rows = (await store.db('triggers').select('id')) as { id: string }[];
      expect(rows.map((r) => r.id)).to.deep.equal([kept.triggerId]);
    });

    it('deletes a trigger (If-Match optional, stale refused)', async () => {
      const t = await createTrigger(store.db, ORG_A, { automationId: wfId, kind: 'api' });
      await expectAppError(deleteTrigger(store.db, ORG_A, t.triggerId, 2), 'version_conflict', 412);
      await deleteTrigger(store.db, ORG_A, t.triggerId, 1);
      await expectAppError(deleteTrigger(store.db, ORG_A, t.triggerId), 'not_found', 404);
    });

    it('isolates organisations', async () => {
      const t = await createTrigger(store.db, ORG_A, { automationId: wfId, kind: 'api' });
      await expectAppError(getTrigger(store.db, ORG_B, t.triggerId), 'not_found', 404);
      await expectAppError(
        updateTrigger(store.db, ORG_B, t.triggerId, { expectedVersion: 1, patch: { enabled: false } }),
        'not_found',
        404,
      );
      await expectAppError(deleteTrigger(store.db, ORG_B, t.triggerId), 'not_found', 404);
      expect((await listTriggers(store.db, ORG_B)).items).to.deep.equal([]);
      expect((await listTriggers(store.db, ORG_B, { automationId: wfId })).items).to.deep.equal([]);
      expect(await getTrigger(store.db, ORG_A, t.triggerId)).to.include({ enabled: true, version: 1 });
    });
  });

  describe(`trigger handlers (${kind})`, () => {
    let store: TestStore;
    let wfId: string;
    beforeEach(async () => {
      store = await createTestStore(kind);
      await seedOrgs(store.db);
      wfId = (await createWorkflow(store.db, ORG_A, definition(2))).automationId;
    });
    afterEach(async () => store.close());

    it('returns the API URL and the webhook URL template under the triggers base URL', async () => {
      const ctx = context(store.db, ORG_A);
      const api = await call(
        'createTrigger',
        h.createTrigger,
        request({ body: { automationId: wfId, kind: 'api' } }),
        ctx,
      );
      expect(api.status).to.equal(201);
      expect(api.headers).to.deep.equal({ ETag: '"1"' });
      const a = api.body as { triggerId: string; urls: { trigger: string } };
      expect(a.urls.trigger).to.equal(`http://triggers.test/ext/triggers/${a.triggerId}`);
      const hook = await call(
        'createTrigger',
        h.createTrigger,
        request({ body: { automationId: wfId, kind: 'webhook' } }),
        ctx,
      );
      const w = hook.body as { triggerId: string; urls: { trigger: string } };
      expect(w.urls.trigger).to.equal(`http://triggers.test/ext/webhook/{apiKey}/triggers/${w.triggerId}`);
      const list = await call('listTriggers', h.listTriggers, request({ query: { kind: 'webhook' } }), ctx);
      expect(list.body).to.deep.equal({ items: [hook.body], nextCursor: null });
    });

    it('updateTrigger: 428 without If-Match, 412 stale, 200 with the new ETag; delete 204', async () => {
      const ctx = context(store.db, ORG_A);
      const t = (
        await call('createTrigger', h.createTrigger, request({ body: { automationId: wfId, kind: 'api' } }), ctx)
      ).body as { triggerId: string };
      const params = { triggerId: t.triggerId };
      expect(
        (await call('updateTrigger', h.updateTrigger, request({ params, body: { enabled: false } }), ctx)).status,
      ).to.equal(428);
      expect(
        (
          await call(
            'updateTrigger',
            h.updateTrigger,
            request({ params, body: { enabled: false }, headers: { 'if-match': '"7"' } }),
            ctx,
          )
        ).status,
      ).to.equal(412);
      const ok = await call(
        'updateTrigger',
        h.updateTrigger,
        request({ params, body: { enabled: false }, headers: { 'if-match': '"1"' } }),
        ctx,
      );
      expect(ok.status).to.equal(200);
      expect(ok.headers).to.deep.equal({ ETag: '"2"' });
      expect(ok.body).to.deep.include({ enabled: false, version: 2 });
      const bad = await call(
        'updateTrigger',
        h.updateTrigger,
        request({
          params,
          body: { designatedOutput: { stepIndex: 9, fileName: 'f' } },
          headers: { 'if-match': '"2"' },
        }),
        ctx,
      );
      expect(bad.status).to.equal(400);
      const other = await call('getTrigger', h.getTrigger, request({ params }), context(store.db, ORG_B));
      expect(other.status).to.equal(404);
      expect((await call('deleteTrigger', h.deleteTrigger, request({ params }), ctx)).status).to.equal(204);
      expect((await call('getTrigger', h.getTrigger, request({ params }), ctx)).status).to.equal(404);
    });
  });
}
