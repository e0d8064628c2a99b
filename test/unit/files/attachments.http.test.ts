/**
 * readMultipartTrigger over real loopback HTTP: bodies built by FormData + fetch, and raw or
 * generated streams for malformed and very large cases. After every rejection the blob
 * folder and the files table must be empty (no stored blob, no partial data on a refusal).
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { expect } from 'chai';
import { createLogger } from '../../../src/config/logger.js';
import { renderError, sendError } from '../../../src/http/render.js';
import { sendJson } from '../../../src/http/reply.js';
import { LocalBlobStore } from '../../../src/kernel/blobs.js';
import { getFile, listRunFiles } from '../../../src/files/files.js';
import { verifyFileSignature } from '../../../src/files/signed-urls.js';
import {
  attachToRun,
  discardAttachments,
  readMultipartTrigger,
  type MultipartTrigger,
} from '../../../src/files/attachments.js';
import { createTestStore, type TestStore } from '../../helpers/store.js';

const MiB = 1024 * 1024;
const ORG = 'org_upload';
const log = createLogger('silent');
const config = {
  secretKey: randomBytes(32),
  baseUrls: {
    triggers: 'http://t',
    auth: 'http://a',
    mcp: 'http://m',
    connect: 'http://c',
    runFiles: 'http://files.test',
  },
};

const ELF = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), Buffer.alloc(200)]);
const PE = Buffer.concat([
  Buffer.from('MZ'),
  Buffer.alloc(58),
  Buffer.from([0x80, 0, 0, 0]),
  Buffer.alloc(64),
  Buffer.from('PE\0\0'),
  Buffer.alloc(64),
]);
const MACHO = Buffer.concat([Buffer.from([0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1]), Buffer.alloc(200)]);
const PNG = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]),
  Buffer.from('IHDR'),
  Buffer.alloc(17),
]);

type Outcome = { ok: MultipartTrigger } | { err: unknown };

interface Harness {
  url: string;
  store: TestStore;
  blobs: LocalBlobStore;
  outcomes: Promise<Outcome>[];
  close(): Promise<void>;
}

async function startHarness(): Promise<Harness> {
  const store = await createTestStore('sqlite');
  await store.db('organizations').insert({ id: ORG, name: 'Uploads', created_at: new Date().toISOString() });
  const blobs = new LocalBlobStore(path.join(store.dataDir, 'blobs'));
  const outcomes: Promise<Outcome>[] = [];
  const app = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const done = readMultipartTrigger(req, { blobs, db: store.db, orgId: ORG, config, log }).then(
      (ok) => {
        sendJson(res, 200, ok);
        return { ok };
      },
      (err: unknown) => {
        sendError(res, renderError(err, 'rest', log));
        return { err };
      },
    );
    outcomes.push(done);
  };
  const server = await new Promise<http.Server>((resolve) => {
    const s = http.createServer(app).listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/upload`,
    store,
    blobs,
    outcomes,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await store.close();
    },
  };
}

function blobFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    let names: string[] = [];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const n of names) {
      const full = path.join(d, n);
      if (statSync(full).isDirectory()) walk(full);
      else out.push(path.relative(root, full));
    }
  };
  walk(root);
  return out;
}

interface Part {
  name: string;
  filename?: string;
  type?: string;
  data?: Buffer | string;
  size?: number;
}

/** A multipart body as a lazy stream: `size` parts are generated 64 KiB at a time. */
function multipartStream(boundary: string, parts: Part[], opts: { end?: boolean } = {}): Readable {
  const chunk = Buffer.alloc(64 * 1024, 0x41);
  function* gen(): Generator<Buffer> {
    for (const p of parts) {
      let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
      if (p.filename !== undefined) head += `; filename="${p.filename}"`;
      head += '\r\n';
      if (p.type) head += `Content-Type: ${p.type}\r\n`;
      yield Buffer.from(`${head}\r\n`);
      if (p.data !== undefined) yield Buffer.from(p.data);
      else {
        for (let left = p.size ?? 0; left > 0; left -= chunk.length)
          yield left >= chunk.length ? chunk : chunk.subarray(0, left);
      }
      yield Buffer.from('\r\n');
    }
    if (opts.end !== false) yield Buffer.from(`--${boundary}--\r\n`);
  }
  return Readable.from(gen());
}

interface Answer {
  status: number;
  body: any;
}

/** POSTs a raw body stream with http.request (no FormData), reading the JSON answer. */
function sendRaw(url: string, body: Readable | Buffer | string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined });
      });
    });
    req.on('error', reject);
    if (body instanceof Readable) body.pipe(req);
    else req.end(body);
  });
}

async function sendForm(url: string, form: FormData): Promise<Answer> {
  const res = await fetch(url, { method: 'POST', body: form });
  return { status: res.status, body: await res.json() };
}

const multipartHeaders = (boundary: string): Record<string, string> => ({
  'content-type': `multipart/form-data; boundary=${boundary}`,
});

describe('readMultipartTrigger over loopback HTTP (spec "Attachment", "Limits", "Errors")', function () {
  this.timeout(120_000);
  let h: Harness;
  beforeEach(async () => {
    h = await startHarness();
  });
  afterEach(async () => h.close());

  async function expectClean(): Promise<void> {
    await Promise.allSettled(h.outcomes);
    expect(blobFiles(h.blobs.root), 'blobs left behind').to.deep.equal([]);
    expect(Number((await h.store.db('files').count({ n: '*' }).first())!.n), 'file rows left behind').to.equal(0);
  }

  async function expectRejected(answer: Answer, status: number, error: string, message?: string): Promise<void> {
    expect(answer.status, JSON.stringify(answer.body)).to.equal(status);
    expect(answer.body.error).to.equal(error);
    if (message !== undefined) expect(answer.body.message).to.equal(message);
    await expectClean();
  }

  it('one file plus fields: stored, recorded with run_id null, signed 24 h URL', async () => {
    const form = new FormData();
    form.append('customerId', 'c_42');
    form.append('note', 'first');
    form.append('note', 'last wins');
    form.append('files', new File(['%PDF-1.7 invoice'], 'invoice-q1.pdf', { type: 'application/pdf' }));
    const res = await sendForm(h.url, form);
    expect(res.status).to.equal(200);
    expect(res.body.fields).to.deep.equal({ customerId: 'c_42', note: 'last wins' });
    expect(res.body.attachments).to.have.length(1);
    const a = res.body.attachments[0];
    expect(a).to.include({ filename: 'invoice-q1.pdf', contentType: 'application/pdf', size: 16 });
    const u = new URL(a.url);
    expect(u.origin + u.pathname).to.equal(`http://files.test/files/${a.fileId}`);
    const left = verifyFileSignature(config, a.fileId, {
      expires: u.searchParams.get('expires')!,
      sig: u.searchParams.get('signature')!,
    });
    expect(left).to.be.within(86400 - 5, 86400);
    const row = await getFile(h.store.db, a.fileId);
    expect(row).to.include({
      orgId: ORG,
      runId: null,
      kind: 'attachment',
      filename: 'invoice-q1.pdf',
      mimeType: 'application/pdf',
      size: 16,
    });
    expect(blobFiles(h.blobs.root)).to.deep.equal([`attachments/${ORG}/${a.fileId}`]);
  });

  it('a body with fields only has no attachments; a field called __proto__ is an ordinary field', async () => {
    const form = new FormData();
    form.append('__proto__', 'polluted?');
    form.append('plan', 'pro');
    const res = await sendForm(h.url, form);
    expect(res.status).to.equal(200);
    expect(res.body.attachments).to.deep.equal([]);
    expect(Object.entries(res.body.fields)).to.deep.equal([
      ['__proto__', 'polluted?'],
      ['plan', 'pro'],
    ]);
    expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
  });

  it('sanitizes names (traversal, unicode) and keeps UTF-8 names intact', async () => {
    const form = new FormData();
    form.append('a', new File(['x'], '../../etc/passwd'));
    form.append('b', new File(['y'], '日本語 レポート.txt', { type: 'text/plain' }));
    form.append('c', new File(['z'], 'a<b>:c|.csv', { type: 'text/csv' }));
    form.append('d', new File(['w'], ''));
    const res = await sendForm(h.url, form);
    expect(res.status).to.equal(200);
    expect(res.body.attachments.map((a: any) => a.filename)).to.deep.equal([
      'passwd',
      '日本語 レポート.txt',
      'a_b_c_.csv',
      'file',
    ]);
    const raw = await sendRaw(
      h.url,
      multipartStream('bnd', [{ name: 'f', filename: '..\\\\x', data: 'hello' }]),
      multipartHeaders('bnd'),
    );
    expect(raw.body.attachments[0].filename).to.equal('x');
  });

  it('content type: declared wins; a generic one is replaced by the detected type', async () => {
    const form = new FormData();
    form.append('f', new File([PNG], 'pic', { type: 'application/octet-stream' }));
    form.append('g', new File(['{"a":1}'], 'data.json', { type: 'application/json' }));
    form.append('h', new File([Buffer.from('plain words')], 'notes'));
    const res = await sendForm(h.url, form);
    expect(res.body.attachments.map((a: any) => a.contentType)).to.deep.equal([
      'image/png',
      'application/json',
      'application/octet-stream',
    ]);
  });

  it('accepts 20 files; attachToRun links them to the run, discardAttachments removes them', async () => {
    const form = new FormData();
    for (let i = 0; i < 20; i++) form.append('files', new File([`file ${i}`], `f${i}.txt`, { type: 'text/plain' }));
    const res = await sendForm(h.url, form);
    expect(res.status).to.equal(200);
    expect(res.body.attachments).to.have.length(20);
    expect(res.body.attachments.map((a: any) => a.filename)).to.deep.equal(
      Array.from({ length: 20 }, (_, i) => `f${i}.txt`),
    );
    expect(blobFiles(h.blobs.root)).to.have.length(20);
    const ids = res.body.attachments.map((a: any) => a.fileId) as string[];
    await h.store.db.transaction((trx) => attachToRun(trx, ORG, ids.slice(0, 10), 'run_1'));
    expect(await listRunFiles(h.store.db, ORG, 'run_1')).to.have.length(10);
    let err: unknown;
    try {
      await h.store.db.transaction((trx) => attachToRun(trx, 'org_other', ids.slice(10), 'run_2'));
    } catch (e) {
      err = e;
    }
    expect(String(err)).to.contain('0 of 10');
    await discardAttachments({ blobs: h.blobs, db: h.store.db, orgId: ORG }, res.body.attachments.slice(10));
    expect(blobFiles(h.blobs.root)).to.have.length(10);
    expect(Number((await h.store.db('files').count({ n: '*' }).first())!.n)).to.equal(10);
  });

  it('21 files → 400 too_many_attachments; the 20 stored before are removed', async () => {
    const form = new FormData();
    for (let i = 0; i < 21; i++) form.append('files', new File([Buffer.alloc(10_000, i)], `f${i}.bin.txt`));
    await expectRejected(await sendForm(h.url, form), 400, 'too_many_attachments', 'Too many attachments');
  });

  it('a file of exactly 25 MiB is accepted', async () => {
    const res = await sendRaw(
      h.url,
      multipartStream('b25', [{ name: 'f', filename: 'big.csv', type: 'text/csv', size: 25 * MiB }]),
      multipartHeaders('b25'),
    );
    expect(res.status).to.equal(200);
    expect(res.body.attachments[0].size).to.equal(25 * MiB);
  });

  it('a file of 25 MiB + 1 byte → 413 file_too_large, nothing kept (also after a good file)', async () => {
    const form = new FormData();
    form.append('ok', new File(['fine'], 'fine.txt'));
    form.append('big', new File([Buffer.alloc(25 * MiB + 1, 0x42)], 'big.csv', { type: 'text/csv' }));
    await expectRejected(await sendForm(h.url, form), 413, 'file_too_large', 'File too large');
  });

  it('more than 100 MiB in total → 413 attachments_too_large (generated stream), nothing kept', async () => {
    const parts: Part[] = [1, 2, 3, 4].map((i) => ({
      name: 'files',
      filename: `part${i}.csv`,
      type: 'text/csv',
      size: 25 * MiB,
    }));
    parts.push({ name: 'files', filename: 'one-more.txt', data: 'x' });
    const res = await sendRaw(h.url, multipartStream('b100', parts), multipartHeaders('b100'));
    await expectRejected(res, 413, 'attachments_too_large', 'Total attachment size exceeds limit');
  });

  for (const [what, data] of [
    ['ELF', ELF],
    ['PE (MZ)', PE],
    ['Mach-O', MACHO],
    ['shebang script', Buffer.from('#!/bin/bash\nrm -rf /\n')],
  ] as const) {
    it(`${what} content with an innocent name → 415 blocked_file_type, nothing kept`, async () => {
      const form = new FormData();
      form.append('first', new File(['an innocent file stored before'], 'before.txt', { type: 'text/plain' }));
      form.append('files', new File([data], 'quarterly-report.pdf', { type: 'application/pdf' }));
      await expectRejected(await sendForm(h.url, form), 415, 'blocked_file_type', 'Blocked file type');
    });
  }

  it('a .exe name with innocent content → 415 blocked_file_type', async () => {
    const form = new FormData();
    form.append('files', new File(['just text'], 'invoice.pdf.exe', { type: 'application/pdf' }));
    await expectRejected(await sendForm(h.url, form), 415, 'blocked_file_type', 'Blocked file type');
  });

  it('a declared application/x-msdownload → 415 blocked_file_type', async () => {
    const form = new FormData();
    form.append('files', new File(['just text'], 'notes.txt', { type: 'application/x-msdownload' }));
    await expectRejected(await sendForm(h.url, form), 415, 'blocked_file_type', 'Blocked file type');
  });

  it('a blocked file after 3 MiB of good files still leaves nothing behind', async () => {
    const parts: Part[] = [
      { name: 'a', filename: 'a.csv', size: 3 * MiB },
      { name: 'b', filename: 'b.csv', size: 10 },
      { name: 'c', filename: 'setup.bin', data: 'x' },
    ];
    await expectRejected(
      await sendRaw(h.url, multipartStream('bb', parts), multipartHeaders('bb')),
      415,
      'blocked_file_type',
    );
  });

  it('malformed bodies → 400 invalid_multipart, nothing kept', async () => {
    // No boundary parameter.
    await expectRejected(
      await sendRaw(h.url, 'x', { 'content-type': 'multipart/form-data' }),
      400,
      'invalid_multipart',
    );
    // Not multipart at all.
    await expectRejected(await sendRaw(h.url, 'x', { 'content-type': 'text/plain' }), 400, 'invalid_multipart');
    // Truncated: the closing boundary never comes (the file part is cut mid-way).
    const truncated = multipartStream('tb', [{ name: 'f', filename: 'a.csv', size: 200_000 }], { end: false });
    await expectRejected(await sendRaw(h.url, truncated, multipartHeaders('tb')), 400, 'invalid_multipart');
    // A body that never starts with the boundary.
    await expectRejected(
      await sendRaw(h.url, 'garbage without any boundary\r\n', multipartHeaders('zz')),
      400,
      'invalid_multipart',
    );
    // A part header without the blank line that ends it.
    await expectRejected(
      await sendRaw(h.url, '--hb\r\nContent-Disposition: form-data; name="a"', multipartHeaders('hb')),
      400,
      'invalid_multipart',
    );
  });

  it('field limits: 1001 fields, a value over 1 MiB, a name over 1 KiB → 400', async () => {
    const many = Array.from({ length: 1001 }, (_, i) => ({ name: `f${i}`, data: 'v' }));
    await expectRejected(
      await sendRaw(h.url, multipartStream('mf', many), multipartHeaders('mf')),
      400,
      'too_many_fields',
    );
    const big = [
      { name: 'file', filename: 'a.txt', data: 'stored first' },
      { name: 'note', data: 'x'.repeat(MiB + 1) },
    ];
    await expectRejected(
      await sendRaw(h.url, multipartStream('bf', big), multipartHeaders('bf')),
      400,
      'field_too_large',
    );
    await expectRejected(
      await sendRaw(h.url, multipartStream('ln', [{ name: 'n'.repeat(1025), data: 'v' }]), multipartHeaders('ln')),
      400,
      'field_too_large',
    );
    // At the limits: exactly 1000 fields, a 1 MiB value, a 1 KiB name.
    const atLimits = [
      ...many.slice(0, 998),
      { name: 'note', data: 'y'.repeat(MiB) },
      { name: 'k'.repeat(1024), data: 'v' },
    ];
    const fine = await sendRaw(h.url, multipartStream('ok', atLimits), multipartHeaders('ok'));
    expect(fine.status).to.equal(200);
    expect(Object.keys(fine.body.fields)).to.have.length(1000);
    expect(fine.body.fields.note).to.have.length(MiB);
  });

  it('a client that aborts mid-upload leaves nothing behind', async () => {
    const boundary = 'ab';
    const req = http.request(h.url, { method: 'POST', headers: multipartHeaders(boundary) });
    req.on('error', () => undefined);
    req.write(
      `--${boundary}\r\nContent-Disposition: form-data; name="done"; filename="done.txt"\r\n\r\ncomplete file\r\n`,
    );
    req.write(`--${boundary}\r\nContent-Disposition: form-data; name="f"; filename="half.csv"\r\n\r\n`);
    req.write(Buffer.alloc(2 * MiB, 0x43));
    // Wait until the server is writing the second file, then cut the connection.
    const started = Date.now();
    while (h.outcomes.length === 0 && Date.now() - started < 5000) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 200));
    req.destroy();
    const outcome = await h.outcomes[0]!;
    expect('err' in outcome && (outcome.err as { code?: string }).code).to.equal('invalid_multipart');
    await expectClean();
  });
});
