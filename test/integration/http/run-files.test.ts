/**
 * op:downloadRunFile over real HTTP on loopback (openapi/run-files.yaml), through the real
 * pipeline (createHttpApp: parameter validation, reply writing, error rendering) with the
 * OpenAPI response validator on. Only this operation's handler is mounted, with a local blob
 * store the test can write to. Attachments are uploaded through readMultipartTrigger on a test
 * route, then downloaded by their signed URL.
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { loadConfig, type Config } from '../../../src/config/index.js';
import { createLogger } from '../../../src/config/logger.js';
import { createHttpApp } from '../../../src/http/pipeline.js';
import { renderError, sendError } from '../../../src/http/render.js';
import { sendJson } from '../../../src/http/reply.js';
import { ResponseValidator } from '../../../src/http/response-validator.js';
import type { HandlerMap } from '../../../src/http/types.js';
import { LocalBlobStore } from '../../../src/kernel/blobs.js';
import { recordFile } from '../../../src/files/files.js';
import { stepResultFile } from '../../../src/runs/result-files.js';
import { newId } from '../../../src/kernel/ids.js';
import { contentDisposition, downloadRunFile } from '../../../src/runs/handlers/downloadRunFile.js';
import { ATTACHMENT_URL_TTL_SECONDS, STEP_FILE_URL_TTL_SECONDS, signFileUrl } from '../../../src/files/signed-urls.js';
import { readMultipartTrigger } from '../../../src/files/attachments.js';
import { createTestStore, type TestStore } from '../../helpers/store.js';

const ORG = 'org_files';

describe('op:downloadRunFile — signed run-file downloads over HTTP (sqlite)', () => {
  let store: TestStore;
  let config: Config;
  let blobs: LocalBlobStore;
  let validator: ResponseValidator;
  let server: http.Server;
  let base: string;
  /** Same pipeline without the response validator, for the pipeline's own 400 (see below). */
  let plain: http.Server;
  let plainBase: string;

  before(async function () {
    // Compiling the response validator for the whole contract takes seconds, more on a busy machine.
    this.timeout(60_000);
    store = await createTestStore('sqlite');
    await store.db('organizations').insert({ id: ORG, name: 'Files', created_at: new Date().toISOString() });
    // Listen first (the signed URLs need the real port in PUBLIC_URL), then build the app.
    server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const { port } = server.address() as AddressInfo;
    base = `http://127.0.0.1:${port}`;
    config = loadConfig({
      DATA_DIR: store.dataDir,
      PORT: String(port),
      PUBLIC_URL: base,
      LOG_LEVEL: 'silent',
      SEED_DEMO: 'false',
    });
    const log = createLogger('silent');
    blobs = new LocalBlobStore(path.join(store.dataDir, 'blobs'));
    validator = await ResponseValidator.create(
      JSON.parse(
        readFileSync(new URL('../../../generated/openapi/switchyard.json', import.meta.url), 'utf8'),
      ) as Record<string, unknown>,
    );
    // downloadRunFile reads config, db and blobs; it is not a bearer operation, so no token is verified.
    const services = {
      config,
      db: store.db,
      log,
      blobs,
      tokens: { verify: () => Promise.reject(new Error('no bearer operation is served here')) },
    };
    // Only downloadRunFile is served; the pipeline looks a handler up only when its route is hit.
    const handlers = { downloadRunFile } as unknown as HandlerMap<typeof services>;
    const plainApp = createHttpApp({ services, handlers });
    plain = http.createServer(plainApp);
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', () => resolve()));
    plainBase = `http://127.0.0.1:${(plain.address() as AddressInfo).port}`;
    const app = createHttpApp({ services, handlers, responseValidator: validator });
    // A test-only upload route in front of the pipeline, to store attachments as a trigger call does.
    const withUpload = (req: http.IncomingMessage, res: http.ServerResponse): void => {
      if (req.method !== 'POST' || req.url !== '/test/upload') return app(req, res);
      readMultipartTrigger(req, { blobs, db: store.db, orgId: ORG, config, log }).then(
        (out) => sendJson(res, 200, out),
        (err: unknown) => sendError(res, renderError(err, 'rest', log)),
      );
    };
    server.on('request', withUpload);
  });
  after(async () => {
    for (const s of [server, plain]) {
      s.closeAllConnections();
      await new Promise<void>((r) => s.close(() => r()));
    }
    await store.close();
  });
  afterEach(() => {
    expect(
      validator.failures.map((f) => f.message),
      'responses that break openapi/run-files.yaml',
    ).to.deep.equal([]);
  });

  async function stepFile(
    filename: string,
    content: Buffer | string,
    mimeType: string,
    extra: { expiresAt?: string } = {},
  ): Promise<string> {
    const id = `file_${randomBytes(8).toString('hex')}`;
    const blobKey = `runs/run_1/0/${id}`;
    const { size } = await blobs.put(blobKey, Buffer.from(content));
    await recordFile(store.db, {
      id,
      orgId: ORG,
      runId: 'run_1',
      stepIndex: 0,
      kind: 'step',
      filename,
      mimeType,
      size,
      blobKey,
      ...extra,
    });
    return id;
  }

  function tamper(url: string, field: 'signature' | 'expires'): string {
    const u = new URL(url);
    const v = u.searchParams.get(field)!;
    u.searchParams.set(field, field === 'signature' ? (v[0] === '0' ? '1' : '0') + v.slice(1) : String(Number(v) + 1));
    return u.toString();
  }

  it('uploads an attachment and downloads it by its 24 h URL with type, length, disposition and caching', async () => {
    const pdf = Buffer.concat([Buffer.from('%PDF-1.7\n'), randomBytes(3000)]);
    const form = new FormData();
    form.append('files', new File([pdf], '../../Factures/facture été 2025.pdf', { type: 'application/pdf' }));
    const up = await fetch(`${base}/test/upload`, { method: 'POST', body: form });
    expect(up.status).to.equal(200);
    const { attachments } = (await up.json()) as { attachments: { url: string; filename: string; size: number }[] };
    const a = attachments[0]!;
    expect(a.filename).to.equal('facture été 2025.pdf');
    expect(a.url.startsWith(`${base}/files/file_`)).to.equal(true);

    const res = await fetch(a.url);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('application/pdf');
    expect(res.headers.get('content-length')).to.equal(String(pdf.length));
    expect(res.headers.get('content-disposition')).to.equal(
      `attachment; filename="facture _t_ 2025.pdf"; filename*=UTF-8''facture%20%C3%A9t%C3%A9%202025.pdf`,
    );
    const maxAge = Number(/^private, max-age=(\d+)$/.exec(res.headers.get('cache-control') ?? '')?.[1]);
    expect(maxAge).to.be.within(ATTACHMENT_URL_TTL_SECONDS - 5, ATTACHMENT_URL_TTL_SECONDS);
    expect(res.headers.get('x-content-type-options')).to.equal('nosniff');
    expect(Buffer.from(await res.arrayBuffer()).equals(pdf)).to.equal(true);
  });

  it('streams a step file whole (8 MiB) with its stored type', async () => {
    const data = randomBytes(8 * 1024 * 1024);
    const id = await stepFile('export.bin.dat', data, 'application/octet-stream');
    const res = await fetch(signFileUrl(config, id, STEP_FILE_URL_TTL_SECONDS));
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('application/octet-stream');
    const body = Buffer.from(await res.arrayBuffer());
    expect(createHash('sha256').update(body).digest('hex')).to.equal(createHash('sha256').update(data).digest('hex'));
  });

  it('serves text results as their type; quotes in a name are made safe in the header', async () => {
    const id = await stepFile('we"ird\\name;.md', '## Ada Lovelace\n', 'text/markdown');
    const res = await fetch(signFileUrl(config, id, 3600));
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/markdown/);
    expect(res.headers.get('content-disposition')).to.equal(
      `attachment; filename="we_ird_name;.md"; filename*=UTF-8''we%22ird%5Cname%3B.md`,
    );
    expect(await res.text()).to.equal('## Ada Lovelace\n');
  });

  it('HEAD answers the headers without a body', async () => {
    const id = await stepFile('r.txt', 'hello', 'text/plain');
    const res = await fetch(signFileUrl(config, id, 60), { method: 'HEAD' });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-length')).to.equal('5');
    expect(await res.text()).to.equal('');
  });

  it('a tampered URL → 403 invalid_signature (signature, expiry or file id changed)', async () => {
    const id = await stepFile('a.txt', 'a', 'text/plain');
    const other = await stepFile('b.txt', 'b', 'text/plain');
    const url = signFileUrl(config, id, 3600);
    const swapped = url.replace(id, other);
    for (const bad of [tamper(url, 'signature'), tamper(url, 'expires'), swapped]) {
      const res = await fetch(bad);
      expect(res.status, bad).to.equal(403);
      expect(await res.json()).to.deep.equal({
        error: 'invalid_signature',
        message: 'The download URL signature is not valid.',
      });
    }
  });

  it('an expired URL → 403 url_expired; expired and tampered → invalid_signature (checked first)', async () => {
    const id = await stepFile('old.txt', 'old', 'text/plain');
    const expired = signFileUrl(config, id, 60, Date.now() - 120_000);
    const res = await fetch(expired);
    expect(res.status).to.equal(403);
    expect(await res.json()).to.deep.equal({
      error: 'url_expired',
      message: 'The download URL has expired; request a new one.',
    });
    const both = await fetch(tamper(expired, 'signature'));
    expect([both.status, ((await both.json()) as { error: string }).error]).to.deep.equal([403, 'invalid_signature']);
  });

  it('a valid URL for a file that is gone → 404 file_not_found (no row, no blob, or past its expiry)', async () => {
    const never = signFileUrl(config, 'file_never_existed', 3600);
    const gone = await stepFile('gone.txt', 'x', 'text/plain');
    await blobs.delete(`runs/run_1/0/${gone}`);
    const lapsed = await stepFile('lapsed.txt', 'x', 'text/plain', {
      expiresAt: new Date(Date.now() - 1000).toISOString(),
    });
    for (const url of [never, signFileUrl(config, gone, 3600), signFileUrl(config, lapsed, 3600)]) {
      const res = await fetch(url);
      expect(res.status, url).to.equal(404);
      expect(await res.json()).to.deep.equal({ error: 'file_not_found', message: 'The file no longer exists.' });
    }
  });

  // The pipeline validates the query against the document (expires integer, signature
  // ^[0-9a-f]{64}$) before the handler runs and answers 400 invalid_request; run-files.yaml
  // does not list a 400 for downloadRunFile yet (reported to the lead), so the validating
  // server would turn it into a 500: this case runs on the same pipeline without the validator.
  it('a URL without its query or with a malformed signature → 400 invalid_request (pipeline validation)', async () => {
    const id = await stepFile('q.txt', 'q', 'text/plain');
    const url = new URL(signFileUrl(config, id, 3600));
    const b = plainBase;
    for (const bad of [
      `${b}/files/${id}`,
      `${b}/files/${id}?expires=${url.searchParams.get('expires')}&signature=xyz`,
      `${b}/files/${id}?expires=soon&signature=${url.searchParams.get('signature')}`,
    ]) {
      const res = await fetch(bad);
      expect(res.status, bad).to.equal(400);
      expect(((await res.json()) as { error: string }).error).to.equal('invalid_request');
    }
  });

  /** A finished run with one step row per given result; returns the run id (result files: getRunResults decision). */
  async function runWithSteps(
    steps: { resultType: string | null; result: string | null; status?: string }[],
  ): Promise<string> {
    const runId = newId('run');
    const now = new Date().toISOString();
    await store.db('runs').insert({
      id: runId,
      org_id: ORG,
      workflow_id: 'wf_files',
      workflow_version: 1,
      status: 'COMPLETE',
      created_at: now,
      attempts: 1,
    });
    await store.db('run_steps').insert(
      steps.map((s, i) => ({
        run_id: runId,
        step_index: i,
        step_version: 1,
        name: `Step ${i}`,
        status: s.status ?? 'COMPLETE',
        execution_order: i + 1,
        result_type: s.resultType,
        result: s.result,
        exit_code: 0,
        duration_ms: 1,
      })),
    );
    return runId;
  }

  async function resultUrl(
    runId: string,
    stepIndex: number,
  ): Promise<{ url: string; fileName: string; mimeType: string; size: number }> {
    const row = await store.db('run_steps').where({ run_id: runId, step_index: stepIndex }).first();
    const file = stepResultFile(row)!;
    return {
      url: signFileUrl(config, file.id, STEP_FILE_URL_TTL_SECONDS),
      fileName: file.fileName,
      mimeType: file.mimeType,
      size: file.size,
    };
  }

  it("serves a step's result file (md, txt, json, error) from its step row: exact UTF-8 bytes, type, length, disposition, caching", async () => {
    const markdown = '## Ada Lovelace — été\n\n* 5 seats 🚀\n';
    const json = '{"name":"Ada","seats":5,"note":"naïve"}';
    const runId = await runWithSteps([
      { resultType: 'markdown', result: markdown },
      { resultType: 'plaintext', result: 'Hello, Ada!' },
      { resultType: 'json', result: json },
      { resultType: 'error', result: 'no coffee', status: 'FAILED' },
      { resultType: 'plaintext', result: '' },
    ]);
    const cases = [
      { step: 0, name: 'result.md', type: 'text/markdown', body: markdown },
      { step: 1, name: 'result.txt', type: 'text/plain', body: 'Hello, Ada!' },
      { step: 2, name: 'result.json', type: 'application/json', body: json },
      { step: 3, name: 'error.txt', type: 'text/plain', body: 'no coffee' },
      { step: 4, name: 'result.txt', type: 'text/plain', body: '' },
    ];
    for (const c of cases) {
      const r = await resultUrl(runId, c.step);
      const bytes = Buffer.from(c.body, 'utf8');
      expect(r, c.name).to.deep.include({ fileName: c.name, mimeType: c.type, size: bytes.length });
      expect(r.url.startsWith(`${base}/files/result_`)).to.equal(true);
      const res = await fetch(r.url);
      expect(res.status, c.name).to.equal(200);
      expect(res.headers.get('content-type')).to.equal(`${c.type}; charset=utf-8`);
      expect(res.headers.get('content-length')).to.equal(String(bytes.length));
      expect(res.headers.get('content-disposition')).to.equal(
        `attachment; filename="${c.name}"; filename*=UTF-8''${c.name}`,
      );
      const maxAge = Number(/^private, max-age=(\d+)$/.exec(res.headers.get('cache-control') ?? '')?.[1]);
      expect(maxAge).to.be.within(STEP_FILE_URL_TTL_SECONDS - 5, STEP_FILE_URL_TTL_SECONDS);
      expect(res.headers.get('x-content-type-options')).to.equal('nosniff');
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes), c.name).to.equal(true);
    }
    const head = await fetch((await resultUrl(runId, 0)).url, { method: 'HEAD' });
    expect([head.status, head.headers.get('content-length'), await head.text()]).to.deep.equal([
      200,
      String(Buffer.byteLength(markdown)),
      '',
    ]);
  });

  it('a result file URL is bound to its run, step and type: edited → 403 invalid_signature, expired → 403 url_expired', async () => {
    const runId = await runWithSteps([
      { resultType: 'plaintext', result: 'mine' },
      { resultType: 'plaintext', result: 'step 1' },
    ]);
    const otherRun = await runWithSteps([{ resultType: 'plaintext', result: "someone else's" }]);
    const { url } = await resultUrl(runId, 0);
    const id = new URL(url).pathname.split('/').pop()!;
    const edits = [
      tamper(url, 'signature'),
      tamper(url, 'expires'),
      url.replace(runId, otherRun),
      url.replace(`${id}?`, `${id.replace('_0_txt', '_1_txt')}?`),
      url.replace(`${id}?`, `${id.replace('_0_txt', '_0_md')}?`),
    ];
    for (const bad of edits) {
      expect(bad).to.not.equal(url);
      const res = await fetch(bad);
      expect(res.status, bad).to.equal(403);
      expect(await res.json()).to.deep.equal({
        error: 'invalid_signature',
        message: 'The download URL signature is not valid.',
      });
    }
    const lapsed = signFileUrl(config, id, 60, Date.now() - 120_000);
    const res = await fetch(lapsed);
    expect([res.status, ((await res.json()) as { error: string }).error]).to.deep.equal([403, 'url_expired']);
  });

  it('a signed result file URL whose step no longer has that result → 404 file_not_found (run pruned, step re-run, no result)', async () => {
    const runId = await runWithSteps([
      { resultType: 'markdown', result: '# v1' },
      { resultType: 'plaintext', result: 'kept' },
    ]);
    const changed = (await resultUrl(runId, 0)).url;
    const pruned = (await resultUrl(runId, 1)).url;
    // A recovered run re-ran step 0 and it now answers plaintext: the md URL names a result that is gone.
    await store
      .db('run_steps')
      .where({ run_id: runId, step_index: 0 })
      .update({ result_type: 'plaintext', result: 'v2' });
    const running = await runWithSteps([{ resultType: null, result: null, status: 'RUNNING' }]);
    const never = signFileUrl(config, `result_${running}_0_txt`, 3600);
    const noStep = signFileUrl(config, `result_${running}_7_txt`, 3600);
    const malformed = signFileUrl(config, 'result_not-a-result-id', 3600);
    const before = await fetch(pruned);
    expect(before.status).to.equal(200);
    await store.db('run_steps').where({ run_id: runId }).delete();
    await store.db('runs').where({ id: runId }).delete();
    for (const url of [changed, pruned, never, noStep, malformed]) {
      const res = await fetch(url);
      expect(res.status, url).to.equal(404);
      expect(await res.json()).to.deep.equal({ error: 'file_not_found', message: 'The file no longer exists.' });
    }
  });

  it('stored file ids never take the result-file prefix', async () => {
    let thrown: unknown;
    try {
      await recordFile(store.db, {
        id: 'result_run_x_0_md',
        orgId: ORG,
        kind: 'step',
        filename: 'x.md',
        mimeType: 'text/markdown',
        size: 0,
        blobKey: 'k',
      });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).to.be.instanceOf(RangeError);
  });

  it('contentDisposition: RFC 6266 fallback plus RFC 5987 filename*', () => {
    expect(contentDisposition('invoice-q1.pdf')).to.equal(
      `attachment; filename="invoice-q1.pdf"; filename*=UTF-8''invoice-q1.pdf`,
    );
    expect(contentDisposition('日本語.txt')).to.equal(
      `attachment; filename="___.txt"; filename*=UTF-8''%E6%97%A5%E6%9C%AC%E8%AA%9E.txt`,
    );
    expect(contentDisposition("it's (1)*.txt")).to.equal(
      `attachment; filename="it's (1)*.txt"; filename*=UTF-8''it%27s%20%281%29%2A.txt`,
    );
    expect(contentDisposition('100%.txt')).to.equal(`attachment; filename="100_.txt"; filename*=UTF-8''100%25.txt`);
  });
});
