/**
 * Retention (README "Scaling out"): finished runs older than the configured age go with their
 * steps, file records and blobs; newer and unfinished runs stay; idempotency keys expire
 * after 24 h; attachments that never became a run go after an hour.
 */
import { expect } from 'chai';
import type { Knex } from 'knex';
import { createOrganization } from '../../../src/auth/index.js';
import { BlobNotFoundError, openBlobStore, type LocalBlobStore } from '../../../src/kernel/blobs.js';
import { recordFile } from '../../../src/files/files.js';
import { pruneFinishedRuns } from '../../../src/runs/retention.js';
import { insertRuns, runRows } from '../../../src/runs/runs.js';
import type { RunStatus } from '../../../src/runs/states.js';
import { newId } from '../../../src/kernel/ids.js';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';

const kinds = await storeKinds();
const DAY = 86_400_000;
const HOUR = 3_600_000;

async function blobExists(blobs: LocalBlobStore, key: string): Promise<boolean> {
  try {
    const { stream } = await blobs.get(key);
    stream.destroy();
    return true;
  } catch (err) {
    if (err instanceof BlobNotFoundError) return false;
    throw err;
  }
}

const count = async (q: Knex.QueryBuilder): Promise<number> =>
  Number(((await q.count({ n: '*' })) as { n: number | string }[])[0]!.n);

for (const kind of kinds) {
  describe(`retention: pruneFinishedRuns (${kind})`, () => {
    let store: TestStore;
    let db: Knex;
    let blobs: LocalBlobStore;
    let orgId: string;
    const now = Date.now();
    const ago = (ms: number) => new Date(now - ms).toISOString();

    beforeEach(async () => {
      store = await createTestStore(kind);
      db = store.db;
      blobs = openBlobStore({ dataDir: store.dataDir });
      orgId = (await createOrganization(db, { name: 'Retention org' })).id;
    });
    afterEach(async () => store.close());

    /** A run in `status`, created `createdAgo` and (when terminal) finished `finishedAgo`, with a step file and an attachment. */
    async function addRun(
      status: RunStatus,
      createdAgo: number,
      finishedAgo: number | null,
    ): Promise<{ id: string; fileIds: string[]; blobKeys: string[] }> {
      const rows = runRows(
        {
          orgId,
          automationId: 'wf_ret',
          automationVersion: 1,
          triggerId: 'trg_ret',
          inputs: {},
          startedBy: 'test',
          timeoutMs: 60_000,
        },
        undefined,
        ago(createdAgo),
      );
      rows.run.status = status;
      if (finishedAgo !== null) rows.run.finished_at = ago(finishedAgo);
      await insertRuns(db, [rows]);
      const id = rows.run.id as string;
      await db('run_steps').insert(
        [0, 1].map((i) => ({ run_id: id, step_index: i, step_version: 1, name: `s${i}`, status: 'COMPLETE' })),
      );
      const fileIds: string[] = [];
      const blobKeys: string[] = [];
      for (const [kindOf, key, stepIndex] of [
        ['step', `runs/${id}/1/f1`, 1],
        ['attachment', `attachments/${orgId}/${id}-att`, null],
      ] as const) {
        const { size } = await blobs.put(key, Buffer.from(`bytes of ${key}`));
        const rec = await recordFile(db, {
          orgId,
          runId: id,
          stepIndex,
          kind: kindOf,
          filename: 'x.txt',
          mimeType: 'text/plain',
          size,
          blobKey: key,
        });
        fileIds.push(rec.id);
        blobKeys.push(key);
      }
      return { id, fileIds, blobKeys };
    }

    async function gone(r: { id: string; fileIds: string[]; blobKeys: string[] }): Promise<void> {
      expect(await count(db('runs').where({ id: r.id })), `run ${r.id}`).to.equal(0);
      expect(await count(db('run_steps').where({ run_id: r.id })), `steps of ${r.id}`).to.equal(0);
      expect(await count(db('files').whereIn('id', r.fileIds)), `file rows of ${r.id}`).to.equal(0);
      for (const key of r.blobKeys) expect(await blobExists(blobs, key), `blob ${key}`).to.equal(false);
    }

    async function kept(r: { id: string; fileIds: string[]; blobKeys: string[] }): Promise<void> {
      expect(await count(db('runs').where({ id: r.id })), `run ${r.id}`).to.equal(1);
      expect(await count(db('run_steps').where({ run_id: r.id })), `steps of ${r.id}`).to.equal(2);
      expect(await count(db('files').whereIn('id', r.fileIds)), `file rows of ${r.id}`).to.equal(2);
      for (const key of r.blobKeys) expect(await blobExists(blobs, key), `blob ${key}`).to.equal(true);
    }

    it('deletes finished runs older than the cutoff with their steps, file rows and blobs; keeps newer and unfinished runs', async () => {
      const oldComplete = await addRun('COMPLETE', 40 * DAY, 40 * DAY);
      const oldFailed = await addRun('FAILED', 35 * DAY, 31 * DAY);
      const oldTimeout = await addRun('TIMEOUT', 60 * DAY, 59 * DAY);
      // Created long ago, finished recently: age counts from finished_at.
      const recentlyFinished = await addRun('COMPLETE', 90 * DAY, 29 * DAY);
      const fresh = await addRun('FAILED', 2 * HOUR, HOUR);
      const oldRunning = await addRun('RUNNING', 45 * DAY, null);
      const oldPending = await addRun('PENDING', 45 * DAY, null);

      expect(await pruneFinishedRuns(db, blobs, 30, now)).to.equal(3);
      for (const r of [oldComplete, oldFailed, oldTimeout]) await gone(r);
      for (const r of [recentlyFinished, fresh, oldRunning, oldPending]) await kept(r);

      // Idempotent: a second pass finds nothing more.
      expect(await pruneFinishedRuns(db, blobs, 30, now)).to.equal(0);
      for (const r of [recentlyFinished, fresh, oldRunning, oldPending]) await kept(r);
      // With a shorter retention the recently finished one goes too.
      expect(await pruneFinishedRuns(db, blobs, 7, now)).to.equal(1);
      await gone(recentlyFinished);
      for (const r of [fresh, oldRunning, oldPending]) await kept(r);
    });

    it('deletes idempotency keys older than 24 h and keeps younger ones', async () => {
      const run = await addRun('COMPLETE', HOUR, HOUR);
      const key = (k: string, age: number) => ({
        trigger_id: 'trg_ret',
        idem_key: k,
        org_id: orgId,
        run_id: run.id,
        created_at: ago(age),
      });
      await db('idempotency_keys').insert([
        key('day-and-a-bit', 24 * HOUR + 60_000),
        key('two-days', 48 * HOUR),
        key('23h', 23 * HOUR),
        key('new', 0),
      ]);
      await pruneFinishedRuns(db, blobs, 30, now);
      const left = (
        (await db('idempotency_keys').select('idem_key').orderBy('idem_key')) as { idem_key: string }[]
      ).map((r) => r.idem_key);
      expect(left).to.deep.equal(['23h', 'new']);
      await kept(run);
    });

    it('deletes attachments that never became a run after an hour, with their blobs', async () => {
      const put = async (age: number) => {
        const id = newId('file');
        const key = `attachments/${orgId}/${id}`;
        const { size } = await blobs.put(key, Buffer.from('orphan'));
        await recordFile(db, {
          id,
          orgId,
          kind: 'attachment',
          filename: 'o.txt',
          mimeType: 'text/plain',
          size,
          blobKey: key,
        });
        await db('files')
          .where({ id })
          .update({ created_at: ago(age) });
        return { id, key };
      };
      const stale = await put(2 * HOUR);
      const recent = await put(10 * 60_000);
      await pruneFinishedRuns(db, blobs, 30, now);
      expect(await count(db('files').where({ id: stale.id }))).to.equal(0);
      expect(await blobExists(blobs, stale.key)).to.equal(false);
      expect(await count(db('files').where({ id: recent.id }))).to.equal(1);
      expect(await blobExists(blobs, recent.key)).to.equal(true);
    });
  });
}
