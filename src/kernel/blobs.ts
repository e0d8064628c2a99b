/**
 * Blob storage for attachments, run files and uploads (`BlobStore`).
 * The default backend is a local folder, `DATA_DIR/blobs`; the interface is kept small and
 * key-based so an S3-compatible backend can implement it unchanged (keys become object keys,
 * `deletePrefix` becomes a prefix listing + batch delete).
 *
 * Guarantees of the local backend:
 * - a blob becomes visible only complete: bytes go to a temp file in `blobs/.tmp`, then are
 *   renamed onto the key (rename is atomic within one filesystem);
 * - a blob is as durable as the store's commits that refer to it (`fsync`, from
 *   `openBlobStore`): with PostgreSQL or SQLITE_SYNCHRONOUS=FULL, whose commits survive a power
 *   loss, the temp file is fsynced before the rename; with sqlite's default NORMAL, whose commits
 *   survive a crash or kill -9 of the process but not a power loss, it is not (the bytes are in
 *   the OS's page cache once written, which a process crash does not lose). An fsync is the
 *   largest single wait of a run that writes a file (bench/README.md, "Run execution");
 * - a stream that exceeds `maxBytes`, or fails, aborts the write and removes the temp file;
 * - bytes are streamed, never buffered whole.
 */
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream, mkdirSync, writeFileSync } from 'node:fs';
import { mkdir, open, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export interface PutOptions {
  /** Reject (and store nothing) when the content is longer than this many bytes. */
  maxBytes?: number | undefined;
  /**
   * The key is new and nothing reads it until the caller records it (a step file: its row
   * commits with the run's finish, src/runs/recorder.ts). A buffer is then written in place, with
   * no temp file and rename: a write cut short leaves bytes no row refers to, which is what a temp
   * file left by a crash is too. An existing key is never overwritten.
   */
  fresh?: boolean | undefined;
}

export interface PutResult {
  size: number;
  /** Hex SHA-256 of the stored bytes. */
  sha256: string;
}

export interface BlobReadable {
  stream: Readable;
  size: number;
}

export interface BlobStore {
  put(key: string, content: Readable | Buffer, opts?: PutOptions): Promise<PutResult>;
  /** Throws BlobNotFoundError when no blob has this key. */
  get(key: string): Promise<BlobReadable>;
  /**
   * The blob's bytes from `start` on, as a stream made at once (a missing blob fails the stream,
   * ENOENT for the local store); for readers that open a file at many offsets (CSV ingest).
   */
  streamFrom(key: string, start: number): Readable;
  /** Bytes [start, end) of a blob (fewer when it is shorter); throws BlobNotFoundError when no blob has this key. */
  getRange(key: string, start: number, end: number): Promise<Buffer>;
  /** Removes one blob; a missing blob is not an error. */
  delete(key: string): Promise<void>;
  /** Removes every blob whose key starts with `prefix` + `/` (whole path segments only). */
  deletePrefix(prefix: string): Promise<void>;
}

export class BlobNotFoundError extends Error {
  constructor(readonly key: string) {
    super(`no blob with key ${key}`);
    this.name = 'BlobNotFoundError';
  }
}

export class BlobTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`blob exceeds ${maxBytes} bytes`);
    this.name = 'BlobTooLargeError';
  }
}

export class InvalidBlobKeyError extends Error {
  constructor(readonly key: string) {
    super('invalid blob key');
    this.name = 'InvalidBlobKeyError';
  }
}

/** Keys fit the `files.blob_key` column (255) and are plain relative paths. */
const MAX_KEY_LENGTH = 255;
const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/**
 * Keys are `/`-separated segments of `[A-Za-z0-9._-]`: no absolute paths, no backslashes,
 * no empty, `.` or `..` segments, and no segment starting with a dot (which also keeps the
 * store's own `.tmp` folder out of reach).
 */
export function assertBlobKey(key: string): void {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH)
    throw new InvalidBlobKeyError(String(key));
  for (const segment of key.split('/')) {
    if (!SEGMENT.test(segment)) throw new InvalidBlobKeyError(key);
  }
}

/** Counts and hashes the bytes going through; fails past `maxBytes`. */
class Meter extends Transform {
  size = 0;
  private readonly hash = createHash('sha256');
  constructor(private readonly maxBytes: number) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.maxBytes) {
      cb(new BlobTooLargeError(this.maxBytes));
      return;
    }
    this.hash.update(chunk);
    cb(null, chunk);
  }
  digest(): string {
    return this.hash.digest('hex');
  }
}

/** Largest fresh blob written synchronously when it is not fsynced (putFresh). */
const INLINE_WRITE_BYTES = 64 * 1024;

export class LocalBlobStore implements BlobStore {
  readonly root: string;
  private readonly tmpDir: string;

  /** Temp files are fsynced before the rename (see the header). */
  readonly fsync: boolean;

  /** `root` is the blob folder itself (normally `DATA_DIR/blobs`); `fsync` (default true): see the header. */
  constructor(root: string, opts: { fsync?: boolean } = {}) {
    this.root = path.resolve(root);
    this.tmpDir = path.join(this.root, '.tmp');
    this.fsync = opts.fsync ?? true;
  }

  private pathOf(key: string): string {
    assertBlobKey(key);
    return path.join(this.root, ...key.split('/'));
  }

  async put(key: string, content: Readable | Buffer, opts: PutOptions = {}): Promise<PutResult> {
    const target = this.pathOf(key);
    if (Buffer.isBuffer(content) && opts.fresh)
      return this.putFresh(target, content, opts.maxBytes ?? Number.POSITIVE_INFINITY);
    // A source that fails before the pipeline below listens to it (a client that goes away while
    // the folder is made) would otherwise emit an 'error' nobody handles: it fails this put instead.
    let early: { err: unknown } | undefined;
    const onEarly = (err: unknown): void => {
      early ??= { err };
    };
    if (!Buffer.isBuffer(content)) content.on('error', onEarly);
    try {
      await mkdir(this.tmpDir, { recursive: true });
    } catch (err) {
      if (!Buffer.isBuffer(content)) content.off('error', onEarly);
      throw err;
    }
    const tmp = path.join(this.tmpDir, `${randomBytes(12).toString('hex')}.part`);
    if (Buffer.isBuffer(content))
      return this.putBuffer(tmp, target, content, opts.maxBytes ?? Number.POSITIVE_INFINITY);
    content.off('error', onEarly);
    if (early) throw early.err;
    const meter = new Meter(opts.maxBytes ?? Number.POSITIVE_INFINITY);
    // `flush: true` fsyncs before close, so the renamed blob survives a power loss whole.
    const sink = createWriteStream(tmp, { flags: 'wx', mode: 0o600, flush: this.fsync });
    try {
      await pipeline(content, meter, sink);
      await mkdir(path.dirname(target), { recursive: true });
      await rename(tmp, target);
    } catch (err) {
      if (!content.destroyed) content.destroy();
      // A stream that fails at once can fail the pipeline while the file is still being opened:
      // remove it only after the stream has closed, or the open creates it after the rm.
      if (!sink.closed) await once(sink, 'close').catch(() => undefined);
      await rm(tmp, { force: true });
      throw err;
    }
    return { size: meter.size, sha256: meter.digest() };
  }

  /**
   * A buffer (step files: every code step's file) skips the stream machinery: one write (with
   * `flush`, an fsync before close, as the stream path does when `fsync`), then the rename.
   */
  private async putFresh(target: string, data: Buffer, maxBytes: number): Promise<PutResult> {
    if (data.length > maxBytes) throw new BlobTooLargeError(maxBytes);
    // A small file that is not fsynced is written synchronously: a mkdir and a write to the page
    // cache take less time than the four threadpool round trips (mkdir, open, write, close) that
    // each wait for a turn of a busy event loop (bench/README.md, "Run execution").
    const inline = !this.fsync && data.length <= INLINE_WRITE_BYTES;
    try {
      if (inline) {
        mkdirSync(path.dirname(target), { recursive: true });
        writeFileSync(target, data, { flag: 'wx', mode: 0o600 });
      } else {
        await mkdir(path.dirname(target), { recursive: true });
        await writeFile(target, data, { flag: 'wx', mode: 0o600, flush: this.fsync });
      }
    } catch (err) {
      // 'wx' refused an existing file: it is not ours to remove.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') await rm(target, { force: true });
      throw err;
    }
    return { size: data.length, sha256: createHash('sha256').update(data).digest('hex') };
  }

  private async putBuffer(tmp: string, target: string, data: Buffer, maxBytes: number): Promise<PutResult> {
    if (data.length > maxBytes) throw new BlobTooLargeError(maxBytes);
    try {
      await writeFile(tmp, data, { flag: 'wx', mode: 0o600, flush: this.fsync });
      await mkdir(path.dirname(target), { recursive: true });
      await rename(tmp, target);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    return { size: data.length, sha256: createHash('sha256').update(data).digest('hex') };
  }

  async get(key: string): Promise<BlobReadable> {
    const file = this.pathOf(key);
    let handle;
    try {
      handle = await open(file, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'EISDIR')
        throw new BlobNotFoundError(key);
      throw err;
    }
    try {
      const stat = await handle.stat();
      if (!stat.isFile()) throw new BlobNotFoundError(key);
      // The size comes from the open descriptor, so it matches the bytes the stream reads.
      return { stream: handle.createReadStream(), size: stat.size };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  streamFrom(key: string, start: number): Readable {
    return createReadStream(this.pathOf(key), { start });
  }

  async getRange(key: string, start: number, end: number): Promise<Buffer> {
    let handle;
    try {
      handle = await open(this.pathOf(key), 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'EISDIR')
        throw new BlobNotFoundError(key);
      throw err;
    }
    try {
      const out = Buffer.allocUnsafe(Math.max(0, end - start));
      let filled = 0;
      while (filled < out.length) {
        const { bytesRead } = await handle.read(out, filled, out.length - filled, start + filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      return out.subarray(0, filled);
    } finally {
      await handle.close();
    }
  }

  async delete(key: string): Promise<void> {
    const file = this.pathOf(key);
    try {
      await rm(file, { force: true });
    } catch (err) {
      // A key that names a folder (a prefix) is not a blob: nothing to delete.
      if ((err as NodeJS.ErrnoException).code !== 'ERR_FS_EISDIR' && (err as NodeJS.ErrnoException).code !== 'EISDIR')
        throw err;
    }
  }

  async deletePrefix(prefix: string): Promise<void> {
    const folder = this.pathOf(prefix.replace(/\/+$/, ''));
    await rm(folder, { recursive: true, force: true });
  }
}

const stores = new Map<string, LocalBlobStore>();

/**
 * The local store under `DATA_DIR/blobs`, one instance per data folder and durability. Blobs are
 * fsynced when the store's commits are (see the header): with DATABASE_URL, or with
 * SQLITE_SYNCHRONOUS=FULL.
 */
export function openBlobStore(config: {
  dataDir: string;
  databaseUrl?: string | null | undefined;
  sqliteSynchronous?: 'NORMAL' | 'FULL' | undefined;
}): LocalBlobStore {
  const root = path.join(path.resolve(config.dataDir), 'blobs');
  const fsync = Boolean(config.databaseUrl) || config.sqliteSynchronous === 'FULL';
  const key = `${fsync ? 'fsync' : 'nosync'} ${root}`;
  let store = stores.get(key);
  if (!store) {
    store = new LocalBlobStore(root, { fsync });
    stores.set(key, store);
  }
  return store;
}
