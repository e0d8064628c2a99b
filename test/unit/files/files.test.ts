import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { Knex } from 'knex';
import { LocalBlobStore } from '../../../src/kernel/blobs.js';
import {
  attachFilesToRun,
  deleteFiles,
  deleteRunFiles,
  deleteUnattachedAttachments,
  findFile,
  getFile,
  listRunFiles,
  recordFile,
  recordFiles,
  type FileCreate,
} from '../../../src/files/files.js';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';

const ORG_A = 'org_a';
const ORG_B = 'org_b';
const kinds = await storeKinds();

async function seedOrgs(db: Knex): Promise<void> {
  await db('organizations').insert(
    [ORG_A, ORG_B].map((id) => ({ id, name: id, created_at: new Date().toISOString() })),
  );
}

function countFiles(dir: string): number {
  let n = 0;
  const walk = (d: string): void => {
    let names: string[] = [];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const name of names) {
      const full = path.join(d, name);
      if (statSync(full).isDirectory()) walk(full);
      else n += 1;
    }
  };
  walk(dir);
  return n;
}

for (const kind of kinds) {
  describe(`run file records (${kind})`, () => {
    let store: TestStore;
    let blobs: LocalBlobStore;
    beforeEach(async () => {
      store = await createTestStore(kind);
      await seedOrgs(store.db);
      blobs = new LocalBlobStore(path.join(store.dataDir, 'blobs'));
    });
    afterEach(async () => store.close());

    async function stored(input: Omit<FileCreate, 'blobKey' | 'size'> & { content?: string }): Promise<string> {
      const id = `file_${Math.random().toString(36).slice(2, 12)}`;
      const blobKey = `t/${input.orgId}/${id}`;
      const { size } = await blobs.put(blobKey, Buffer.from(input.content ?? id));
      const { content: _c, ...rest } = input;
      await recordFile(store.db, { ...rest, id, blobKey, size });
      return id;
    }

    it('records a file and reads it back (bigint size as a number on both stores)', async () => {
      const big = 5 * 1024 * 1024 * 1024; // past 32 bits
      const rec = await recordFile(store.db, {
        orgId: ORG_A,
        runId: 'run_1',
        stepIndex: 2,
        kind: 'step',
        filename: 'résumé.pdf',
        mimeType: 'application/pdf',
        size: big,
        blobKey: 'runs/run_1/2/x',
        expiresAt: '2030-01-01T00:00:00.000Z',
      });
      expect(rec.id).to.match(/^file_[0-9a-f]{32}$/);
      expect(rec).to.include({
        orgId: ORG_A,
        runId: 'run_1',
        stepIndex: 2,
        kind: 'step',
        filename: 'résumé.pdf',
        size: big,
        expiresAt: '2030-01-01T00:00:00.000Z',
      });
      expect(await getFile(store.db, rec.id)).to.deep.equal(rec);
      const att = await recordFile(store.db, {
        id: 'file_given',
        orgId: ORG_A,
        kind: 'attachment',
        filename: 'a.txt',
        mimeType: 'text/plain',
        size: 0,
        blobKey: 'k',
      });
      expect(att).to.include({ id: 'file_given', runId: null, stepIndex: null, expiresAt: null, size: 0 });
      expect(await getFile(store.db, 'file_given')).to.deep.equal(att);
      expect(await getFile(store.db, 'file_missing')).to.equal(undefined);
    });

    it('validates kind, size, filename and type before writing', async () => {
      const base: FileCreate = {
        orgId: ORG_A,
        kind: 'attachment',
        filename: 'a',
        mimeType: 'text/plain',
        size: 1,
        blobKey: 'k',
      };
      for (const bad of [
        { kind: 'video' as never },
        { size: -1 },
        { size: 1.5 },
        { filename: '' },
        { filename: 'x'.repeat(256) },
        { mimeType: '' },
      ]) {
        let err: unknown;
        try {
          await recordFile(store.db, { ...base, ...bad });
        } catch (e) {
          err = e;
        }
        expect(err, JSON.stringify(bad)).to.be.instanceOf(RangeError);
      }
      expect(await recordFiles(store.db, [])).to.deep.equal([]);
      expect(Number((await store.db('files').count({ n: '*' }).first())!.n)).to.equal(0);
    });

    it('findFile and listRunFiles are scoped by organisation; getFile is not (signature-authorised)', async () => {
      const a = await stored({
        orgId: ORG_A,
        runId: 'run_1',
        kind: 'attachment',
        filename: 'in.csv',
        mimeType: 'text/csv',
      });
      const s1 = await stored({
        orgId: ORG_A,
        runId: 'run_1',
        stepIndex: 1,
        kind: 'step',
        filename: 'r1.md',
        mimeType: 'text/markdown',
      });
      const s0 = await stored({
        orgId: ORG_A,
        runId: 'run_1',
        stepIndex: 0,
        kind: 'step',
        filename: 'r0.md',
        mimeType: 'text/markdown',
      });
      await stored({ orgId: ORG_B, runId: 'run_1', kind: 'attachment', filename: 'other.csv', mimeType: 'text/csv' });
      await stored({
        orgId: ORG_A,
        runId: 'run_2',
        stepIndex: 0,
        kind: 'step',
        filename: 'x.md',
        mimeType: 'text/markdown',
      });
      expect((await listRunFiles(store.db, ORG_A, 'run_1')).map((f) => f.id)).to.deep.equal([a, s0, s1]);
      expect((await listRunFiles(store.db, ORG_B, 'run_1')).map((f) => f.filename)).to.deep.equal(['other.csv']);
      expect(await findFile(store.db, ORG_A, a)).to.include({ id: a, filename: 'in.csv' });
      expect(await findFile(store.db, ORG_B, a)).to.equal(undefined);
      expect(await getFile(store.db, a)).to.include({ orgId: ORG_A });
    });

    it('attachFilesToRun sets run_id on unattached files of the same organisation only', async () => {
      const [f1, f2] = await recordFiles(store.db, [
        { orgId: ORG_A, kind: 'attachment', filename: 'a', mimeType: 'text/plain', size: 1, blobKey: 'k1' },
        { orgId: ORG_A, kind: 'attachment', filename: 'b', mimeType: 'text/plain', size: 1, blobKey: 'k2' },
      ]);
      const other = await recordFile(store.db, {
        orgId: ORG_B,
        kind: 'attachment',
        filename: 'c',
        mimeType: 'text/plain',
        size: 1,
        blobKey: 'k3',
      });
      expect(await attachFilesToRun(store.db, ORG_A, [f1!.id, f2!.id, other.id], 'run_9')).to.equal(2);
      expect(await attachFilesToRun(store.db, ORG_A, [f1!.id], 'run_10')).to.equal(0); // already attached
      expect(await attachFilesToRun(store.db, ORG_A, [], 'run_10')).to.equal(0);
      expect((await getFile(store.db, other.id))!.runId).to.equal(null);
      expect((await listRunFiles(store.db, ORG_A, 'run_9')).map((f) => f.filename)).to.deep.equal(['a', 'b']);
    });

    it('deleteRunFiles and deleteFiles remove rows and blobs of one organisation only', async () => {
      const a1 = await stored({
        orgId: ORG_A,
        runId: 'run_1',
        kind: 'attachment',
        filename: 'a',
        mimeType: 'text/plain',
      });
      await stored({ orgId: ORG_A, runId: 'run_1', stepIndex: 0, kind: 'step', filename: 'b', mimeType: 'text/plain' });
      const b1 = await stored({
        orgId: ORG_B,
        runId: 'run_1',
        kind: 'attachment',
        filename: 'c',
        mimeType: 'text/plain',
      });
      const keep = await stored({
        orgId: ORG_A,
        runId: 'run_2',
        kind: 'attachment',
        filename: 'd',
        mimeType: 'text/plain',
      });
      expect(countFiles(blobs.root)).to.equal(4);
      expect(await deleteRunFiles(store.db, blobs, ORG_A, 'run_1')).to.equal(2);
      expect(await getFile(store.db, a1)).to.equal(undefined);
      expect(await getFile(store.db, b1)).to.not.equal(undefined);
      expect(countFiles(blobs.root)).to.equal(2);
      expect(await deleteFiles(store.db, blobs, ORG_B, [keep])).to.equal(0); // another org's file
      expect(await deleteFiles(store.db, blobs, ORG_A, [keep])).to.equal(1);
      expect(await deleteFiles(store.db, blobs, ORG_A, [])).to.equal(0);
      expect(countFiles(blobs.root)).to.equal(1);
      expect(await deleteRunFiles(store.db, blobs, ORG_A, 'run_none')).to.equal(0);
    });

    it('deleteUnattachedAttachments sweeps old attachments never attached to a run', async () => {
      const old = await stored({ orgId: ORG_A, kind: 'attachment', filename: 'old', mimeType: 'text/plain' });
      const oldB = await stored({ orgId: ORG_B, kind: 'attachment', filename: 'oldB', mimeType: 'text/plain' });
      const attached = await stored({
        orgId: ORG_A,
        runId: 'run_1',
        kind: 'attachment',
        filename: 'kept',
        mimeType: 'text/plain',
      });
      const upload = await stored({ orgId: ORG_A, kind: 'upload', filename: 'upload', mimeType: 'text/plain' });
      await store
        .db('files')
        .whereIn('id', [old, oldB, attached, upload])
        .update({ created_at: '2020-01-01T00:00:00.000Z' });
      const fresh = await stored({ orgId: ORG_A, kind: 'attachment', filename: 'fresh', mimeType: 'text/plain' });
      expect(await deleteUnattachedAttachments(store.db, blobs, '2021-01-01T00:00:00.000Z')).to.equal(2);
      const left = ((await store.db('files').select('id')) as { id: string }[]).map((r) => r.id).sort();
      expect(left).to.deep.equal([attached, upload, fresh].sort());
      expect(countFiles(blobs.root)).to.equal(3);
    });
  });
}
