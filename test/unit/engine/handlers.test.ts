import { expect } from 'chai';
import { workflowHandlers } from '../../../src/engine/handlers/index.js';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import { call, codeStep, context, definition, ORG_A, ORG_B, request, seedOrgs } from './fixtures.js';

const kinds = await storeKinds();
const h = workflowHandlers;

for (const kind of kinds) {
  describe(`workflow handlers (${kind})`, () => {
    let store: TestStore;
    beforeEach(async () => {
      store = await createTestStore(kind);
      await seedOrgs(store.db);
    });
    afterEach(async () => store.close());

    async function created(ctx = context(store.db, ORG_A)) {
      const reply = await call('createWorkflow', h.createWorkflow, request({ body: definition(2) }), ctx);
      expect(reply.status).to.equal(201);
      return reply.body as { automationId: string; version: number };
    }

    it('createWorkflow answers 201 with ETag "1"; getWorkflow returns the same', async () => {
      const ctx = context(store.db, ORG_A);
      const reply = await call('createWorkflow', h.createWorkflow, request({ body: definition(2) }), ctx);
      expect(reply.status).to.equal(201);
      expect(reply.headers).to.deep.equal({ ETag: '"1"' });
      const wf = reply.body as { automationId: string; stepMap: unknown };
      expect(wf.stepMap).to.deep.equal({ 0: 1, 1: 1 });
      const got = await call('getWorkflow', h.getWorkflow, request({ params: { automationId: wf.automationId } }), ctx);
      expect(got).to.deep.equal({ status: 200, body: wf, headers: { ETag: '"1"' } });
    });

    it('createWorkflow answers 400 with details for an invalid definition', async () => {
      const reply = await call(
        'createWorkflow',
        h.createWorkflow,
        request({ body: { name: 'x', steps: [] } }),
        context(store.db, ORG_A),
      );
      expect(reply.status).to.equal(400);
      expect(reply.body).to.deep.include({ error: 'invalid_request' });
      expect((reply.body as { details: unknown[] }).details).to.have.length(1);
    });

    it('updateWorkflow requires If-Match: missing 428, stale or malformed 412, current 200', async () => {
      const ctx = context(store.db, ORG_A);
      const wf = await created(ctx);
      const params = { automationId: wf.automationId };
      const next = definition(2);
      next.steps[0] = codeStep('x', 'return 1;') as never;
      const missing = await call('updateWorkflow', h.updateWorkflow, request({ params, body: next }), ctx);
      expect(missing.status).to.equal(428);
      expect((missing.body as { error: string }).error).to.equal('precondition_required');
      const star = await call(
        'updateWorkflow',
        h.updateWorkflow,
        request({ params, body: next, headers: { 'if-match': '*' } }),
        ctx,
      );
      expect(star.status).to.equal(428);
      for (const bad of ['"2"', '1', 'W/"1"', '"abc"']) {
        const r = await call(
          'updateWorkflow',
          h.updateWorkflow,
          request({ params, body: next, headers: { 'if-match': bad } }),
          ctx,
        );
        expect(r.status, bad).to.equal(412);
        expect((r.body as { error: string }).error).to.equal('version_conflict');
      }
      const ok = await call(
        'updateWorkflow',
        h.updateWorkflow,
        request({ params, body: next, headers: { 'if-match': '"1"' } }),
        ctx,
      );
      expect(ok.status).to.equal(200);
      expect(ok.headers).to.deep.equal({ ETag: '"2"' });
      expect((ok.body as { stepMap: unknown }).stepMap).to.deep.equal({ 0: 2, 1: 1 });
    });

    it('lists with limit and cursor, and answers 400 invalid_cursor for a bad cursor', async () => {
      const ctx = context(store.db, ORG_A);
      for (let i = 0; i < 3; i++) await created(ctx);
      const first = await call('listWorkflows', h.listWorkflows, request({ query: { limit: 2 } }), ctx);
      const page = first.body as { items: unknown[]; nextCursor: string };
      expect(page.items).to.have.length(2);
      const second = await call(
        'listWorkflows',
        h.listWorkflows,
        request({ query: { limit: 2, cursor: page.nextCursor } }),
        ctx,
      );
      expect(second.body).to.deep.include({ nextCursor: null });
      expect((second.body as { items: unknown[] }).items).to.have.length(1);
      const bad = await call('listWorkflows', h.listWorkflows, request({ query: { cursor: 'zzz' } }), ctx);
      expect(bad.status).to.equal(400);
      expect((bad.body as { error: string }).error).to.equal('invalid_cursor');
    });

    it('versions: list and get (path version as the pipeline coerces it: a number)', async () => {
      const ctx = context(store.db, ORG_A);
      const wf = await created(ctx);
      await call(
        'updateWorkflow',
        h.updateWorkflow,
        request({ params: { automationId: wf.automationId }, body: definition(1), headers: { 'if-match': '"1"' } }),
        ctx,
      );
      const list = await call(
        'listWorkflowVersions',
        h.listWorkflowVersions,
        request({ params: { automationId: wf.automationId } }),
        ctx,
      );
      expect((list.body as { items: { version: number }[] }).items.map((v) => v.version)).to.deep.equal([1, 2]);
      const v1 = await call(
        'getWorkflowVersion',
        h.getWorkflowVersion,
        request({ params: { automationId: wf.automationId, version: 1 } }),
        ctx,
      );
      expect(v1.body).to.deep.include({ version: 1, stepMap: { 0: 1, 1: 1 } });
      const v2 = await call(
        'getWorkflowVersion',
        h.getWorkflowVersion,
        request({ params: { automationId: wf.automationId, version: 2 } }),
        ctx,
      );
      expect(v2.body).to.deep.include({ version: 2, stepMap: { 0: 1 } });
      const v9 = await call(
        'getWorkflowVersion',
        h.getWorkflowVersion,
        request({ params: { automationId: wf.automationId, version: 9 } }),
        ctx,
      );
      expect(v9.status).to.equal(404);
    });

    it('deleteWorkflow answers 204, then 404; another organisation gets 404 everywhere', async () => {
      const ctxA = context(store.db, ORG_A);
      const ctxB = context(store.db, ORG_B);
      const wf = await created(ctxA);
      const params = { automationId: wf.automationId };
      for (const [op, send] of [
        ['getWorkflow', () => call('getWorkflow', h.getWorkflow, request({ params }), ctxB)],
        [
          'updateWorkflow',
          () =>
            call(
              'updateWorkflow',
              h.updateWorkflow,
              request({ params, body: definition(1), headers: { 'if-match': '"1"' } }),
              ctxB,
            ),
        ],
        ['deleteWorkflow', () => call('deleteWorkflow', h.deleteWorkflow, request({ params }), ctxB)],
        ['listWorkflowVersions', () => call('listWorkflowVersions', h.listWorkflowVersions, request({ params }), ctxB)],
      ] as const) {
        const r = await send();
        expect(r.status, op).to.equal(404);
      }
      expect((await call('listWorkflows', h.listWorkflows, request(), ctxB)).body).to.deep.equal({
        items: [],
        nextCursor: null,
      });
      expect((await call('deleteWorkflow', h.deleteWorkflow, request({ params }), ctxA)).status).to.equal(204);
      expect((await call('getWorkflow', h.getWorkflow, request({ params }), ctxA)).status).to.equal(404);
    });
  });
}
