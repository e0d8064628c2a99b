import { expect } from 'chai';
import {
  createWorkflow,
  deleteWorkflow,
  getWorkflow,
  getWorkflowVersion,
  listWorkflows,
  listWorkflowVersions,
  updateWorkflow,
} from '../../../src/engine/index.js';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import { codeStep, definition, expectAppError, ORG_A, ORG_B, seedOrgs } from './fixtures.js';

const kinds = await storeKinds();

for (const kind of kinds) {
  describe(`workflows service (${kind})`, () => {
    let store: TestStore;
    beforeEach(async () => {
      store = await createTestStore(kind);
      await seedOrgs(store.db);
    });
    afterEach(async () => store.close());

    it('creates version 1 with every step at step version 1', async () => {
      const wf = await createWorkflow(store.db, ORG_A, definition(3, { description: 'd' }));
      expect(wf.automationId).to.match(/^wf_[0-9a-f]{32}$/);
      expect(wf).to.include({ name: 'Greeting report', description: 'd', version: 1 });
      expect(wf.stepMap).to.deep.equal({ 0: 1, 1: 1, 2: 1 });
      expect(wf.definition.steps).to.have.length(3);
      expect(await getWorkflow(store.db, ORG_A, wf.automationId)).to.deep.equal(wf);
      const rows = await store.db('workflow_versions').where({ workflow_id: wf.automationId });
      expect(rows).to.have.length(1);
    });

    it('update publishes a new version and bumps only the changed step', async () => {
      const wf = await createWorkflow(store.db, ORG_A, definition(3));
      const changed = definition(3);
      changed.steps[1] = codeStep('step 1', 'return 42;') as never;
      changed.name = 'Renamed';
      const v2 = await updateWorkflow(store.db, ORG_A, wf.automationId, { expectedVersion: 1, input: changed });
      expect(v2).to.include({ version: 2, name: 'Renamed' });
      expect(v2.stepMap).to.deep.equal({ 0: 1, 1: 2, 2: 1 });
      const v3 = await updateWorkflow(store.db, ORG_A, wf.automationId, {
        expectedVersion: 2,
        input: {
          ...changed,
          steps: [...changed.steps, codeStep('new')],
        },
      });
      expect(v3.stepMap).to.deep.equal({ 0: 1, 1: 2, 2: 1, 3: 1 });
      const old = await getWorkflowVersion(store.db, ORG_A, wf.automationId, 1);
      expect(old).to.include({ version: 1, name: 'Greeting report' });
      expect(old.definition).to.deep.equal(definition(3));
      const versions = await listWorkflowVersions(store.db, ORG_A, wf.automationId);
      expect(versions.items.map((v) => v.version)).to.deep.equal([1, 2, 3]);
      expect(versions.nextCursor).to.equal(null);
    });

    it('rejects a stale version with 412 and leaves the workflow unchanged', async () => {
      const wf = await createWorkflow(store.db, ORG_A, definition(2));
      await updateWorkflow(store.db, ORG_A, wf.automationId, {
        expectedVersion: 1,
        input: definition(2, { name: 'v2' }),
      });
      const err = await expectAppError(
        updateWorkflow(store.db, ORG_A, wf.automationId, { expectedVersion: 1, input: definition(1) }),
        'version_conflict',
        412,
      );
      expect(err.details).to.deep.equal({ currentVersion: 2 });
      const now = await getWorkflow(store.db, ORG_A, wf.automationId);
      expect(now).to.include({ version: 2, name: 'v2' });
      expect(await store.db('workflow_versions').where({ workflow_id: wf.automationId })).to.have.length(2);
    });

    it('lets exactly one of two concurrent updates of the same version win', async () => {
      const wf = await createWorkflow(store.db, ORG_A, definition(2));
      const results = await Promise.allSettled([
        updateWorkflow(store.db, ORG_A, wf.automationId, {
          expectedVersion: 1,
          input: definition(2, { name: 'first' }),
        }),
        updateWorkflow(store.db, ORG_A, wf.automationId, {
          expectedVersion: 1,
          input: definition(2, { name: 'second' }),
        }),
      ]);
      const ok = results.filter((r) => r.status === 'fulfilled');
      const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(ok).to.have.length(1);
      expect(failed).to.have.length(1);
      expect((failed[0]!.reason as { code: string }).code).to.equal('version_conflict');
      expect((await getWorkflow(store.db, ORG_A, wf.automationId)).version).to.equal(2);
    });

    it('rejects invalid definitions with details and stores nothing', async () => {
      for (const bad of [
        { name: 'x', steps: [] },
        { name: 'x', steps: [{ type: 'nope', name: 'n' }] },
        definition(2, { output: { stepIndex: 5, fileName: 'f' } }),
      ]) {
        const err = await expectAppError(createWorkflow(store.db, ORG_A, bad), 'invalid_request', 400);
        expect((err.details as unknown[]).length).to.be.greaterThan(0);
      }
      expect(await store.db('workflows').count({ n: '*' }).first()).to.satisfy(
        (r: { n: number | string }) => Number(r.n) === 0,
      );
      const wf = await createWorkflow(store.db, ORG_A, definition(2));
      await expectAppError(
        updateWorkflow(store.db, ORG_A, wf.automationId, { expectedVersion: 1, input: { name: 'x', steps: [] } }),
        'invalid_request',
        400,
      );
      expect((await getWorkflow(store.db, ORG_A, wf.automationId)).version).to.equal(1);
    });

    it('pages 7 workflows 3 at a time without duplicates', async () => {
      const created: string[] = [];
      for (let i = 0; i < 7; i++)
        created.push((await createWorkflow(store.db, ORG_A, definition(1, { name: `wf ${i}` }))).automationId);
      await createWorkflow(store.db, ORG_B, definition(1, { name: 'other org' }));
      const seen: string[] = [];
      const sizes: number[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await listWorkflows(store.db, ORG_A, { limit: 3, cursor });
        pages++;
        sizes.push(page.items.length);
        seen.push(...page.items.map((w) => w.automationId));
        cursor = page.nextCursor ?? undefined;
        if (pages === 3) expect(page.nextCursor).to.equal(null);
      } while (cursor && pages < 10);
      expect(pages).to.equal(3);
      expect(sizes).to.deep.equal([3, 3, 1]);
      expect(new Set(seen).size).to.equal(7);
      expect(seen).to.deep.equal(created);
    });

    it('rejects bad cursors and limits with 400', async () => {
      await createWorkflow(store.db, ORG_A, definition(1));
      await expectAppError(listWorkflows(store.db, ORG_A, { cursor: 'not-a-cursor!' }), 'invalid_cursor', 400);
      await expectAppError(listWorkflows(store.db, ORG_A, { cursor: 'abc' }), 'invalid_cursor', 400);
      const foreign = Buffer.from(JSON.stringify({ l: 'connections', a: 'pcid_x' })).toString('base64url');
      await expectAppError(listWorkflows(store.db, ORG_A, { cursor: foreign }), 'invalid_cursor', 400);
      await expectAppError(listWorkflows(store.db, ORG_A, { limit: 0 }), 'invalid_request', 400);
      await expectAppError(listWorkflows(store.db, ORG_A, { limit: 201 }), 'invalid_request', 400);
    });

    it('pages versions by number', async () => {
      const wf = await createWorkflow(store.db, ORG_A, definition(1));
      for (let v = 1; v < 5; v++)
        await updateWorkflow(store.db, ORG_A, wf.automationId, {
          expectedVersion: v,
          input: definition(1, { name: `v${v + 1}` }),
        });
      const first = await listWorkflowVersions(store.db, ORG_A, wf.automationId, { limit: 2 });
      expect(first.items.map((v) => v.version)).to.deep.equal([1, 2]);
      const second = await listWorkflowVersions(store.db, ORG_A, wf.automationId, {
        limit: 2,
        cursor: first.nextCursor!,
      });
      expect(second.items.map((v) => v.version)).to.deep.equal([3, 4]);
      const third = await listWorkflowVersions(store.db, ORG_A, wf.automationId, {
        limit: 2,
        cursor: second.nextCursor!,
      });
      expect(third.items.map((v) => v.version)).to.deep.equal([5]);
      expect(third.nextCursor).to.equal(null);
      await expectAppError(getWorkflowVersion(store.db, ORG_A, wf.automationId, 6), 'not_found', 404);
    });

    it('deletes a workflow with all its versions; a stale If-Match version is refused', async () => {
      const wf = await createWorkflow(store.db, ORG_A, definition(1));
      await updateWorkflow(store.db, ORG_A, wf.automationId, {
        expectedVersion: 1,
        input: definition(1, { name: 'v2' }),
      });
      await expectAppError(deleteWorkflow(store.db, ORG_A, wf.automationId, 1), 'version_conflict', 412);
      await deleteWorkflow(store.db, ORG_A, wf.automationId, 2);
      await expectAppError(getWorkflow(store.db, ORG_A, wf.automationId), 'not_found', 404);
      expect(await store.db('workflow_versions').where({ workflow_id: wf.automationId })).to.have.length(0);
      await expectAppError(deleteWorkflow(store.db, ORG_A, wf.automationId), 'not_found', 404);
    });

    it('isolates organisations: org B cannot read, list, update or delete org A workflows', async () => {
      const wf = await createWorkflow(store.db, ORG_A, definition(2));
      await expectAppError(getWorkflow(store.db, ORG_B, wf.automationId), 'not_found', 404);
      await expectAppError(
        updateWorkflow(store.db, ORG_B, wf.automationId, { expectedVersion: 1, input: definition(1) }),
        'not_found',
        404,
      );
      await expectAppError(deleteWorkflow(store.db, ORG_B, wf.automationId), 'not_found', 404);
      await expectAppError(listWorkflowVersions(store.db, ORG_B, wf.automationId), 'not_found', 404);
      await expectAppError(getWorkflowVersion(store.db, ORG_B, wf.automationId, 1), 'not_found', 404);
      expect((await listWorkflows(store.db, ORG_B)).items).to.deep.equal([]);
      const a = await getWorkflow(store.db, ORG_A, wf.automationId);
      expect(a).to.include({ version: 1 });
      expect((await listWorkflows(store.db, ORG_A)).items.map((w) => w.automationId)).to.deep.equal([wf.automationId]);
    });
  });
}
