import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { buffer, text } from 'node:stream/consumers';
import { expect } from 'chai';
import {
  assertBlobKey,
  BlobNotFoundError,
  BlobTooLargeError,
  InvalidBlobKeyError,
  LocalBlobStore,
  openBlobStore,
} from '../../../src/kernel/blobs.js';

/** Every regular file under a folder (relative paths). */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const n of names) {
      const full = path.join(d, n);
      if (statSync(full).isDirectory()) walk(full);
      else out.push(path.relative(dir, full));
    }
  };
  walk(dir);
  return out.sort();
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

describe('LocalBlobStore (DESIGN.md section 4 BlobStore)', () => {
  let dir: string;
  let blobs: LocalBlobStore;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-blobs-'));
    blobs = new LocalBlobStore(path.join(dir, 'blobs'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('stores a Buffer and a stream, reads them back with size and sha256', async () => {
    const data = randomBytes(100_000);
    const r1 = await blobs.put('attachments/org_a/file_1', data);
    expect(r1).to.deep.equal({ size: data.length, sha256: createHash('sha256').update(data).digest('hex') });
    const chunks = [Buffer.from('hello '), Buffer.from('world')];
    const r2 = await blobs.put('runs/run_1/0/file_2', Readable.from(chunks));
    expect(r2.size).to.equal(11);
    const got = await blobs.get('runs/run_1/0/file_2');
    expect(got.size).to.equal(11);
    expect(await text(got.stream)).to.equal('hello world');
    const got1 = await blobs.get('attachments/org_a/file_1');
    expect((await buffer(got1.stream)).equals(data)).to.equal(true);
    expect(filesUnder(path.join(dir, 'blobs'))).to.deep.equal(['attachments/org_a/file_1', 'runs/run_1/0/file_2']);
  });

  it('stores an empty blob', async () => {
    expect((await blobs.put('a/empty', Buffer.alloc(0))).size).to.equal(0);
    const got = await blobs.get('a/empty');
    expect(got.size).to.equal(0);
    expect(await text(got.stream)).to.equal('');
  });

  it('streams large content without holding it (generated 40 MiB, constant chunks)', async () => {
    const chunk = Buffer.alloc(64 * 1024, 7);
    let sent = 0;
    const total = 40 * 1024 * 1024;
    const source = new Readable({
      read() {
        if (sent >= total) return void this.push(null);
        sent += chunk.length;
        this.push(chunk);
      },
    });
    const before = process.memoryUsage().arrayBuffers;
    const r = await blobs.put('big/one', source);
    expect(r.size).to.equal(total);
    // Nothing close to the blob's size stayed in memory.
    expect(process.memoryUsage().arrayBuffers - before).to.be.below(16 * 1024 * 1024);
    expect(statSync(path.join(dir, 'blobs', 'big', 'one')).size).to.equal(total);
  });

  it('never shows a half-written blob: the key appears only when the write completed', async () => {
    const source = new PassThrough();
    const pending = blobs.put('a/slow', source);
    source.write(Buffer.alloc(1000, 1));
    await new Promise((r) => setTimeout(r, 50));
    expect(await rejection(blobs.get('a/slow'))).to.be.instanceOf(BlobNotFoundError);
    expect(filesUnder(path.join(dir, 'blobs')).filter((f) => !f.startsWith('.tmp/'))).to.deep.equal([]);
    source.end(Buffer.alloc(24, 2));
    expect((await pending).size).to.equal(1024);
    const read = await blobs.get('a/slow');
    read.stream.destroy(); // only the size is wanted: close the file now, not at garbage collection
    expect(read.size).to.equal(1024);
    expect(filesUnder(path.join(dir, 'blobs'))).to.deep.equal(['a/slow']);
  });

  it('replaces an existing blob whole', async () => {
    await blobs.put('a/x', Buffer.from('first version'));
    await blobs.put('a/x', Buffer.from('second'));
    expect(await text((await blobs.get('a/x')).stream)).to.equal('second');
  });

  it('aborts a stream past maxBytes and leaves no blob and no temp file', async () => {
    const ok = await blobs.put('a/limit', Buffer.alloc(10), { maxBytes: 10 });
    expect(ok.size).to.equal(10);
    const err = await rejection(
      blobs.put('a/over', Readable.from([Buffer.alloc(6), Buffer.alloc(5)]), { maxBytes: 10 }),
    );
    expect(err).to.be.instanceOf(BlobTooLargeError);
    expect(filesUnder(path.join(dir, 'blobs'))).to.deep.equal(['a/limit']);
    expect(await rejection(blobs.get('a/over'))).to.be.instanceOf(BlobNotFoundError);
  });

  it('a Buffer past maxBytes is refused before anything is written; a Buffer blob is private (0600)', async () => {
    const err = await rejection(blobs.put('a/over', Buffer.alloc(11), { maxBytes: 10 }));
    expect(err).to.be.instanceOf(BlobTooLargeError);
    expect(filesUnder(path.join(dir, 'blobs'))).to.deep.equal([]);
    await blobs.put('a/private', Buffer.from('secret'));
    expect(statSync(path.join(dir, 'blobs', 'a', 'private')).mode & 0o777).to.equal(0o600);
    // An existing key's temp name never collides: a second put of the same key replaces it whole.
    expect((await blobs.put('a/private', Buffer.from('again'))).size).to.equal(5);
    expect(filesUnder(path.join(dir, 'blobs'))).to.deep.equal(['a/private']);
  });

  it('a failing source stream leaves no blob and no temp file', async () => {
    const source = new PassThrough();
    const pending = blobs.put('a/broken', source);
    source.write(Buffer.alloc(5000));
    setTimeout(() => source.destroy(new Error('client went away')), 10);
    expect((await rejection(pending)).message).to.equal('client went away');
    expect(filesUnder(path.join(dir, 'blobs'))).to.deep.equal([]);
  });

  it('a source that fails before the write starts fails the put (no unhandled error), and nothing is written', async () => {
    const source = new PassThrough();
    const pending = blobs.put('a/early', source);
    // Emitted on the next tick: before put has made its folder and started the pipeline.
    source.destroy(new Error('gone at once'));
    expect((await rejection(pending)).message).to.equal('gone at once');
    expect(filesUnder(path.join(dir, 'blobs'))).to.deep.equal([]);
  });

  it('get of a missing key is BlobNotFoundError; delete of a missing key is fine', async () => {
    expect(await rejection(blobs.get('no/such'))).to.be.instanceOf(BlobNotFoundError);
    await blobs.put('no/such/deeper', Buffer.from('x'));
    // A folder is not a blob.
    expect(await rejection(blobs.get('no/such'))).to.be.instanceOf(BlobNotFoundError);
    await blobs.delete('no/such');
    await blobs.delete('never/was');
    expect(filesUnder(path.join(dir, 'blobs'))).to.deep.equal(['no/such/deeper']);
    await blobs.delete('no/such/deeper');
    expect(filesUnder(path.join(dir, 'blobs'))).to.deep.equal([]);
  });

  it('deletePrefix removes whole path segments only', async () => {
    for (const k of ['attachments/org_a/f1', 'attachments/org_a/f2', 'attachments/org_ab/f3', 'runs/r1/0/f4'])
      await blobs.put(k, Buffer.from(k));
    await blobs.deletePrefix('attachments/org_a');
    expect(filesUnder(path.join(dir, 'blobs'))).to.deep.equal(['attachments/org_ab/f3', 'runs/r1/0/f4']);
    await blobs.deletePrefix('runs/r1/');
    await blobs.deletePrefix('nothing/here');
    expect(filesUnder(path.join(dir, 'blobs'))).to.deep.equal(['attachments/org_ab/f3']);
  });

  it('rejects keys that could leave the folder or reach the temp area', async () => {
    const bad = [
      '',
      '/etc/passwd',
      '../x',
      'a/../../x',
      'a/./b',
      'a//b',
      'a/',
      'a\\b',
      '..',
      '.tmp/x',
      'a/.hidden',
      'C:/x',
      'a b',
      'é',
      'x'.repeat(256),
    ];
    for (const key of bad) {
      expect(() => assertBlobKey(key), JSON.stringify(key)).to.throw(InvalidBlobKeyError);
      expect(await rejection(blobs.put(key, Buffer.from('x'))), key).to.be.instanceOf(InvalidBlobKeyError);
      expect(await rejection(blobs.get(key)), key).to.be.instanceOf(InvalidBlobKeyError);
      expect(await rejection(blobs.delete(key)), key).to.be.instanceOf(InvalidBlobKeyError);
    }
    expect(await rejection(blobs.deletePrefix('../'))).to.be.instanceOf(InvalidBlobKeyError);
    expect(await rejection(blobs.deletePrefix('/'))).to.be.instanceOf(InvalidBlobKeyError);
    for (const key of ['a', 'attachments/org_a/file_0192', 'runs/run_1/0/file_x.y', 'a-b_c.d']) assertBlobKey(key);
  });

  it('openBlobStore: one store per data folder, under DATA_DIR/blobs', () => {
    const a = openBlobStore({ dataDir: dir });
    expect(a.root).to.equal(path.join(dir, 'blobs'));
    expect(openBlobStore({ dataDir: `${dir}/` })).to.equal(a);
  });

  it('a fresh put writes in place (no temp file), never overwrites an existing key, and stores nothing over maxBytes', async () => {
    for (const store of [
      openBlobStore({ dataDir: dir }),
      openBlobStore({ dataDir: dir, sqliteSynchronous: 'FULL' }),
      new LocalBlobStore(path.join(dir, 'blobs'), { fsync: false }),
    ]) {
      const key = `runs/run_fresh/0/file_${randomBytes(4).toString('hex')}`;
      const big = Buffer.alloc(70 * 1024, 7); // over the inline size: the asynchronous write
      expect(await store.put(key, Buffer.from('first'), { fresh: true })).to.include({ size: 5 });
      expect(await text((await store.get(key)).stream)).to.equal('first');
      expect(String(await rejection(store.put(key, Buffer.from('second'), { fresh: true })))).to.match(/EEXIST/);
      expect(await text((await store.get(key)).stream), 'the existing blob is untouched').to.equal('first');
      expect(await rejection(store.put(`${key}_big`, big, { fresh: true, maxBytes: 1024 }))).to.be.instanceOf(
        BlobTooLargeError,
      );
      expect(await rejection(store.get(`${key}_big`))).to.be.instanceOf(BlobNotFoundError);
      expect((await store.put(`${key}_big`, big, { fresh: true })).size).to.equal(big.length);
      expect((await buffer((await store.get(`${key}_big`)).stream)).equals(big)).to.equal(true);
      expect(await store.put(`${key}_empty`, Buffer.alloc(0), { fresh: true })).to.include({ size: 0 });
    }
    expect(
      filesUnder(path.join(dir, 'blobs')).filter((f) => f.endsWith('.part')),
      'no temp files',
    ).to.deep.equal([]);
  });

  it('openBlobStore: blobs are fsynced exactly when the store commits are (PostgreSQL, or SQLITE_SYNCHRONOUS=FULL)', async () => {
    expect(openBlobStore({ dataDir: dir }).fsync, 'sqlite NORMAL (default)').to.equal(false);
    expect(openBlobStore({ dataDir: dir, sqliteSynchronous: 'NORMAL' }).fsync).to.equal(false);
    expect(openBlobStore({ dataDir: dir, sqliteSynchronous: 'FULL' }).fsync).to.equal(true);
    expect(openBlobStore({ dataDir: dir, databaseUrl: 'postgres://localhost/x' }).fsync).to.equal(true);
    expect(new LocalBlobStore(path.join(dir, 'b2')).fsync, 'the class alone fsyncs').to.equal(true);
    // Both ways store the same bytes, from a buffer and from a stream.
    for (const store of [openBlobStore({ dataDir: dir }), openBlobStore({ dataDir: dir, sqliteSynchronous: 'FULL' })]) {
      await store.put(`runs/run_f/0/file_${store.fsync}`, Buffer.from('buffered'));
      await store.put(`runs/run_f/1/file_${store.fsync}`, Readable.from([Buffer.from('stream'), Buffer.from('ed')]));
      expect(await text((await store.get(`runs/run_f/0/file_${store.fsync}`)).stream)).to.equal('buffered');
      expect(await text((await store.get(`runs/run_f/1/file_${store.fsync}`)).stream)).to.equal('streamed');
    }
  });
});
