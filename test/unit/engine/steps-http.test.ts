/**
 * `http` steps against a real loopback server (schema httpStep; src/engine/README.md): templated
 * requests, result types, failures, limits and time limits.
 */
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { executeStep, type ExecutedStep, type PriorStep, type StepDeps } from '../../../src/engine/execute-step.js';
import type { SandboxPool } from '../../../src/engine/sandbox/pool.js';
import type { WorkflowStep } from '../../../src/engine/definition.js';
import { silentLog } from './sandbox-helpers.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]);

describe('engine steps: http', function () {
  this.timeout(30_000);
  let server: http.Server;
  let base: string;
  let seen: Seen[] = [];

  before(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
        const url = new URL(req.url ?? '/', 'http://x');
        const send = (status: number, type: string | undefined, payload: string | Buffer) => {
          res.writeHead(status, type ? { 'content-type': type } : {});
          res.end(payload);
        };
        switch (url.pathname) {
          case '/json':
            return send(
              200,
              'application/json',
              JSON.stringify({
                ok: true,
                query: Object.fromEntries(url.searchParams),
                auth: req.headers.authorization ?? null,
              }),
            );
          case '/echo':
            return send(
              201,
              'application/problem+json',
              JSON.stringify({
                method: req.method,
                contentType: req.headers['content-type'],
                body: body ? JSON.parse(body) : null,
              }),
            );
          case '/text-echo':
            return send(200, 'text/plain; charset=utf-8', `${req.headers['content-type']}|${body}`);
          case '/md':
            return send(200, 'text/markdown; charset=utf-8', '# Title\n');
          case '/text':
            return send(200, 'text/plain', 'plain text');
          case '/untyped':
            return send(200, undefined, 'no type');
          case '/bad-json':
            return send(200, 'application/json', '{not json');
          case '/missing':
            return send(404, 'text/plain', `Not here: ${'z'.repeat(2000)}`);
          case '/fail':
            return send(500, 'application/json', '{"error":"boom"}');
          case '/png':
            return send(200, 'image/png', PNG);
          case '/big':
            res.writeHead(200, {
              'content-type': 'application/octet-stream',
              'content-length': String(10 * 1024 * 1024 + 1),
            });
            return res.end(Buffer.alloc(10 * 1024 * 1024 + 1));
          case '/big-chunked': {
            res.writeHead(200, { 'content-type': 'application/octet-stream' });
            const chunk = Buffer.alloc(1024 * 1024);
            for (let i = 0; i < 11; i++) res.write(chunk);
            return res.end();
          }
          case '/large-text':
            return send(200, 'text/csv', 'a,b\n'.repeat(300_000));
          case '/slow':
            setTimeout(() => send(200, 'text/plain', 'late'), 3000).unref();
            return;
          default:
            return send(404, 'text/plain', '');
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => {
    seen = [];
  });

  const prior: PriorStep[] = [
    {
      stepIndex: 0,
      name: 'first',
      status: 'COMPLETE',
      resultType: 'json',
      result: { id: 7, items: [{ price: 2 }, { price: 3 }] },
      exitCode: 0,
    },
  ];

  function run(
    request: Record<string, unknown>,
    extra: Partial<WorkflowStep> = {},
    deps: Partial<StepDeps> = {},
  ): Promise<ExecutedStep> {
    const step: WorkflowStep = { type: 'http', name: 'call', request, ...extra };
    return executeStep(
      step,
      {
        inputs: { token: 'tkn', orderId: 'o-9', qty: 4 },
        steps: prior,
        runId: 'run_1',
        automationId: 'wf_1',
        stepIndex: 1,
      },
      {
        sandbox: {} as SandboxPool, // http steps never touch the sandbox
        log: silentLog,
        ...deps,
      },
    );
  }

  it('GET with templated url, query and headers; a JSON response is a json result', async () => {
    const out = await run({
      method: 'GET',
      url: `${base}/json?fixed=1`,
      query: { order: '{{ inputs.orderId }}', n: '{{ steps[0].result.id }}' },
      headers: { Authorization: 'Bearer {{ inputs.token }}' },
    });
    expect(out).to.include({ status: 'COMPLETE', resultType: 'json', exitCode: 0 });
    expect(JSON.parse(out.result)).to.deep.equal({
      ok: true,
      query: { fixed: '1', order: 'o-9', n: '7' },
      auth: 'Bearer tkn',
    });
    expect(seen[0]!.method).to.equal('GET');
  });

  it('POST a templated JSON body (values keep their types)', async () => {
    const out = await run({
      method: 'POST',
      url: `${base}/echo`,
      body: {
        order: '{{ inputs.orderId }}',
        qty: '{{ inputs.qty }}',
        total: '{{ $sum(steps[0].result.items.price) }}',
        note: 'qty {{ inputs.qty }}',
        list: ['{{ steps[0].result.id }}'],
      },
    });
    expect(out).to.include({ status: 'COMPLETE', resultType: 'json' });
    expect(JSON.parse(out.result)).to.deep.equal({
      method: 'POST',
      contentType: 'application/json',
      body: { order: 'o-9', qty: 4, total: 5, note: 'qty 4', list: [7] },
    });
  });

  it('a string body is sent as text unless a content type is given', async () => {
    const out = await run({ method: 'PUT', url: `${base}/text-echo`, body: 'hello {{ inputs.orderId }}' });
    expect(out).to.include({ resultType: 'plaintext', result: 'text/plain; charset=utf-8|hello o-9' });
    const typed = await run({
      method: 'PATCH',
      url: `${base}/text-echo`,
      headers: { 'Content-Type': 'application/xml' },
      body: '<a/>',
    });
    expect(typed.result).to.equal('application/xml|<a/>');
  });

  it('text/markdown is markdown, text is plaintext, untyped UTF-8 is plaintext', async () => {
    expect(await run({ method: 'GET', url: `${base}/md` })).to.include({ resultType: 'markdown', result: '# Title\n' });
    expect(await run({ method: 'GET', url: `${base}/text` })).to.include({
      resultType: 'plaintext',
      result: 'plain text',
    });
    expect(await run({ method: 'GET', url: `${base}/untyped` })).to.include({
      resultType: 'plaintext',
      result: 'no type',
    });
  });

  it('a declared resultType wins; json must parse', async () => {
    expect(await run({ method: 'GET', url: `${base}/json` }, { resultType: 'plaintext' })).to.include({
      resultType: 'plaintext',
    });
    expect(await run({ method: 'GET', url: `${base}/md` }, { resultType: 'plaintext' })).to.include({
      resultType: 'plaintext',
      result: '# Title\n',
    });
    const bad = await run({ method: 'GET', url: `${base}/text` }, { resultType: 'json' });
    expect(bad).to.include({ status: 'FAILED', exitCode: 1, resultType: 'error' });
  });

  it('a JSON content type with an invalid body fails', async () => {
    const out = await run({ method: 'GET', url: `${base}/bad-json` });
    expect(out).to.include({ status: 'FAILED', exitCode: 1 });
    expect(out.result).to.match(/not valid JSON/);
  });

  it('non-2xx fails with exit code 1 and HTTP <status>: <first 500 characters>', async () => {
    const out = await run({ method: 'GET', url: `${base}/missing` });
    expect(out).to.include({ status: 'FAILED', resultType: 'error', exitCode: 1 });
    expect(out.result).to.equal(`HTTP 404: Not here: ${'z'.repeat(500 - 'Not here: '.length)}`);
    const fail = await run({ method: 'DELETE', url: `${base}/fail` });
    expect(fail.result).to.equal('HTTP 500: {"error":"boom"}');
  });

  it('a binary response becomes the file response.<ext> with a short plaintext result', async () => {
    const out = await run({ method: 'GET', url: `${base}/png` });
    expect(out).to.include({ status: 'COMPLETE', resultType: 'plaintext', exitCode: 0 });
    expect(out.result).to.match(/saved as response\.png/);
    expect(out.files).to.have.length(1);
    expect(out.files[0]).to.deep.include({ fileName: 'response.png', mimeType: 'image/png' });
    expect(out.files[0]!.data.equals(PNG)).to.equal(true);
  });

  it('text over the 1 MiB result limit becomes a file too', async () => {
    const out = await run({ method: 'GET', url: `${base}/large-text` });
    expect(out).to.include({ status: 'COMPLETE', resultType: 'plaintext' });
    expect(out.files[0]).to.deep.include({ fileName: 'response.csv', mimeType: 'text/csv' });
    expect(out.files[0]!.data.length).to.equal(1_200_000);
  });

  it('a body over 10 MiB fails, announced or streamed', async () => {
    const announced = await run({ method: 'GET', url: `${base}/big` });
    expect(announced).to.include({ status: 'FAILED', exitCode: 1 });
    expect(announced.result).to.match(/over the 10485760-byte limit/);
    const streamed = await run({ method: 'GET', url: `${base}/big-chunked` });
    expect(streamed).to.include({ status: 'FAILED', exitCode: 1 });
    expect(streamed.result).to.match(/over the 10485760-byte limit/);
  });

  it('times out after the step timeoutMs with TIMEOUT 124', async () => {
    const started = Date.now();
    const out = await run({ method: 'GET', url: `${base}/slow` }, { timeoutMs: 200 });
    expect(out).to.include({ status: 'TIMEOUT', resultType: 'error', exitCode: 124 });
    expect(out.result).to.match(/timed out after 200 ms/);
    expect(Date.now() - started).to.be.below(1500);
  });

  it('never runs beyond the run signal', async () => {
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(new Error('run deadline reached')), 150);
    const out = await run({ method: 'GET', url: `${base}/slow` }, {}, { signal: ctl.signal });
    expect(out).to.include({ status: 'TIMEOUT', exitCode: 124 });
    expect(out.result).to.match(/run reached its time limit/);
  });

  it('rejects non-http URLs and bad requests as invalid steps (exit code 2) without a request', async () => {
    for (const url of [
      'ftp://example.com/x',
      'file:///etc/passwd',
      'javascript:alert(1)',
      'not a url',
      '{{ inputs.qty }}',
    ]) {
      const out = await run({ method: 'GET', url });
      expect(out, url).to.include({ status: 'FAILED', resultType: 'error', exitCode: 2 });
      expect(out.result).to.match(/^Invalid step: request\.url/);
    }
    expect(await run({ method: 'TRACE', url: `${base}/json` })).to.include({ exitCode: 2 });
    expect(await run({ method: 'GET', url: `${base}/json`, body: { a: 1 } })).to.include({ exitCode: 2 });
    expect(await run({ method: 'GET', url: `${base}/json`, headers: { 'bad header': 'x' } })).to.include({
      exitCode: 2,
    });
    expect(seen).to.have.length(0);
  });

  it('a template error fails the step with exit code 2, naming the expression, before any request', async () => {
    const out = await run({ method: 'GET', url: `${base}/json?x={{ inputs. }}` });
    expect(out).to.include({ status: 'FAILED', resultType: 'error', exitCode: 2 });
    expect(out.result).to.match(/Template error in \{\{ inputs\. \}\}/);
    expect(seen).to.have.length(0);
  });

  it('a connection failure fails with exit code 1', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const out = await run({ method: 'GET', url: `http://127.0.0.1:${port}/` });
    expect(out).to.include({ status: 'FAILED', exitCode: 1 });
    expect(out.result).to.match(/HTTP request failed.*ECONNREFUSED/);
  });

  it('uses deps.fetchImpl when given', async () => {
    const calls: string[] = [];
    const fake: typeof fetch = async (input) => {
      calls.push(String(input));
      return new Response('{"fake":true}', { headers: { 'content-type': 'application/json' } });
    };
    const out = await run(
      { method: 'GET', url: 'https://api.example.com/orders/{{ inputs.orderId }}' },
      {},
      { fetchImpl: fake },
    );
    expect(out).to.include({ status: 'COMPLETE', resultType: 'json', result: '{"fake":true}' });
    expect(calls).to.deep.equal(['https://api.example.com/orders/o-9']);
  });
});
