/**
 * Workflow triggers, sync and async, and run polling over real HTTP (spec endpoints 1–4),
 * on both stores and both run-queue backends, every response checked against the OpenAPI
 * bundle.
 */
import http from 'node:http';
import { expect } from 'chai';
import { storeKinds } from '../../helpers/store.js';
import { startTestServer, createTestOrg, call, type TestServer, type TestOrg } from '../../helpers/server.js';
import { deploy, waitTerminal, code, type Deployed } from '../../helpers/runs.js';

const kinds = await storeKinds();
const setups: { name: string; kind: (typeof kinds)[number]; env: Record<string, string> }[] = [
  ...kinds.map((kind) => ({ name: `${kind}, in-process queue`, kind, env: {} })),
  {
    name: 'sqlite, Redis queue (bee-queue)',
    kind: 'sqlite' as const,
    env: { REDIS_URL: 'redis://127.0.0.1:6379', REDIS_PREFIX: `sy-test-${process.pid}-${Date.now()}` },
  },
];

const report = {
  name: 'Report',
  inputSchema: { type: 'object', properties: { name: { type: 'string' } } },
  steps: [
    code('Greet', 'return `Hello, ${ctx.inputs.name ?? "world"}!`;'),
    code(
      'Write',
      'ctx.files.write("report.md", `# ${ctx.steps[0].result}`, "text/markdown"); return "# " + ctx.steps[0].result;',
      { resultType: 'markdown' },
    ),
  ],
};

for (const setup of setups) {
  describe(`HTTP: workflow triggers and polling (${setup.name})`, function () {
    this.timeout(60_000);
    let server: TestServer;
    let org: TestOrg;
    let other: TestOrg;
    let demo: Deployed;
    before(async () => {
      server = await startTestServer(setup.kind, { SYNC_WAIT_MS: '3000', ...setup.env });
      org = await createTestOrg(server, 'Org A');
      other = await createTestOrg(server, 'Org B');
      demo = await deploy(server, org, report, { stepIndex: 1, fileName: 'report.md' });
    });
    after(async () => server.close());
    afterEach(() => server.assertResponsesValid());

    const trigger = (
      id: string,
      opts: { key?: string; body?: unknown; headers?: Record<string, string>; query?: string; raw?: string } = {},
    ) =>
      call(server.baseUrl, 'POST', `/ext/triggers/${id}${opts.query ?? ''}`, {
        headers: {
          ...(opts.key === undefined ? { 'x-api-key': org.apiKey } : opts.key ? { 'x-api-key': opts.key } : {}),
          ...(opts.headers ?? {}),
        },
        body: opts.body,
        raw: opts.raw,
      });

    it('op:callApiTrigger async: 200, body null, run headers; the run completes; op:getRunStatus and op:getRunResults report it', async () => {
      const res = await trigger(demo.apiTriggerId, { body: { name: 'Ada' } });
      expect(res.status, res.text).to.equal(200);
      expect(res.text).to.equal('null');
      const runId = res.headers.get('x-pf-run-id')!;
      expect(runId).to.be.a('string');
      expect(res.headers.get('x-pf-automation-id')).to.equal(demo.automationId);
      const status = await waitTerminal(server, org.apiKey, demo.automationId, runId);
      expect(status).to.deep.include({ automationId: demo.automationId, runId, status: 'COMPLETE' });
      expect(status.stepStatus).to.deep.equal({ 0: 'COMPLETE', 1: 'COMPLETE' });
      expect(status.stepInfo['1']).to.deep.equal({ status: 'COMPLETE', name: 'Write', executionOrder: 2 });
      const results = await call(
        server.baseUrl,
        'GET',
        `/ext/webhook/${org.apiKey}/runs/${demo.automationId}/${runId}/results`,
      );
      expect(results.status).to.equal(200);
      expect(results.body).to.include({
        automationId: demo.automationId,
        automationVersion: 1,
        automationName: 'Report',
        id: runId,
        type: 'TRIGGER',
        status: 'COMPLETE',
      });
      expect(results.body.results).to.have.length(2);
      // Step 1 wrote report.md and returned markdown: both are files of the step (getRunResults decision).
      expect(results.body.results[1].resultUrls).to.have.keys('report.md', 'result.md');
      expect(results.body.designatedOutput).to.include({ fileName: 'report.md', mimeType: 'text/markdown' });
      const file = await fetch(results.body.designatedOutput.url);
      expect(file.status).to.equal(200);
      expect(await file.text()).to.equal('# Hello, Ada!');
      // A path segment outside its schema is the documented 400, never an undocumented status.
      for (const url of [
        `/ext/webhook/${org.apiKey}/runs/${demo.automationId}//status`,
        `/ext/webhook/${org.apiKey}/runs//${runId}/results`,
      ]) {
        const bad = await call(server.baseUrl, 'GET', url);
        expect([bad.status, bad.body.error], url).to.deep.equal([400, 'invalid_request']);
      }
    });

    it('sync (x-api-wait: true) returns the synchronous results body with the designated output', async () => {
      const res = await trigger(demo.apiTriggerId, { body: { name: 'Grace' }, headers: { 'x-api-wait': 'true' } });
      expect(res.status, res.text).to.equal(200);
      expect(res.body).to.include({
        automationId: demo.automationId,
        automationVersion: 1,
        automationName: 'Report',
        type: 'TRIGGER',
        triggerId: demo.apiTriggerId,
        startedBy: 'api_trigger',
        status: 'COMPLETE',
      });
      expect(res.body.id).to.equal(res.headers.get('x-pf-run-id'));
      expect(res.body.stepMap).to.deep.equal({ 0: 1, 1: 1 });
      expect(JSON.parse(res.body.inputs)).to.deep.equal({ name: 'Grace' });
      expect(res.body.results[0].result).to.deep.equal({
        stepIndex: 0,
        resultType: 'plaintext',
        result: 'Hello, Grace!',
      });
      expect(res.body.results[1].result).to.deep.include({ resultType: 'markdown', result: '# Hello, Grace!' });
      expect(res.body.results[0].exitCode).to.equal(0);
      expect(res.body.designatedOutput.fileName).to.equal('report.md');
    });

    it('op:getRunResults: each step exposes its textual result as result.md / result.txt / result.json; a file the step wrote with that name wins', async () => {
      const json = { name: 'Ada', seats: 5, tags: ['été', '🚀'] };
      const wf = await deploy(server, org, {
        name: 'Results as files',
        steps: [
          code('Markdown', 'return "## Ada Lovelace — été\\n\\n* 5 seats\\n";', { resultType: 'markdown' }),
          code('Plain', 'return "Hello, Ada!";'),
          code('Json', `return ${JSON.stringify(json)};`),
          code(
            'Own result.md',
            'ctx.files.write("result.md", "# written by the step", "text/markdown"); return "# returned";',
            { resultType: 'markdown' },
          ),
        ],
      });
      const res = await trigger(wf.apiTriggerId, { body: {} });
      const runId = res.headers.get('x-pf-run-id')!;
      expect((await waitTerminal(server, org.apiKey, wf.automationId, runId)).status).to.equal('COMPLETE');
      const results = await call(
        server.baseUrl,
        'GET',
        `/ext/webhook/${org.apiKey}/runs/${wf.automationId}/${runId}/results`,
      );
      expect(results.status, results.text).to.equal(200);
      const steps = results.body.results as {
        resultUrls: Record<string, { url: string; mimeType: string; size: number }>;
      }[];
      expect(steps.map((s) => Object.keys(s.resultUrls))).to.deep.equal([
        ['result.md'],
        ['result.txt'],
        ['result.json'],
        ['result.md'],
      ]);
      const expected = [
        { name: 'result.md', type: 'text/markdown', body: '## Ada Lovelace — été\n\n* 5 seats\n' },
        { name: 'result.txt', type: 'text/plain', body: 'Hello, Ada!' },
        { name: 'result.json', type: 'application/json', body: JSON.stringify(json) },
        { name: 'result.md', type: 'text/markdown', body: '# written by the step' },
      ];
      for (const [i, e] of expected.entries()) {
        const entry = steps[i]!.resultUrls[e.name]!;
        const bytes = Buffer.from(e.body, 'utf8');
        expect(entry, e.name).to.deep.include({ mimeType: e.type, size: bytes.length });
        const file = await fetch(entry.url);
        expect(file.status, e.name).to.equal(200);
        expect(file.headers.get('content-type')).to.equal(`${e.type}; charset=utf-8`);
        expect(file.headers.get('content-length')).to.equal(String(bytes.length));
        expect(file.headers.get('content-disposition')).to.equal(
          `attachment; filename="${e.name}"; filename*=UTF-8''${e.name}`,
        );
        expect(file.headers.get('cache-control')).to.match(/^private, max-age=\d+$/);
        expect(Buffer.from(await file.arrayBuffer()).equals(bytes), e.name).to.equal(true);
      }
      // The url is valid 24 hours (openapi decision).
      const expires = Number(new URL(steps[0]!.resultUrls['result.md']!.url).searchParams.get('expires'));
      expect(expires - Math.floor(Date.now() / 1000)).to.be.within(24 * 3600 - 30, 24 * 3600);
      // The written result.md is a stored file; the returned ones are served from the step.
      expect(new URL(steps[3]!.resultUrls['result.md']!.url).pathname).to.match(/^\/files\/file_/);
      const tampered = await fetch(
        steps[1]!.resultUrls['result.txt']!.url.replace(
          /signature=([0-9a-f])/,
          (_: string, c: string) => `signature=${c === '0' ? '1' : '0'}`,
        ),
      );
      expect([tampered.status, ((await tampered.json()) as { error: string }).error]).to.deep.equal([
        403,
        'invalid_signature',
      ]);
      // Another run's step cannot be read by editing the run id in a signed URL.
      const again = await trigger(wf.apiTriggerId, { body: {} });
      const otherRun = again.headers.get('x-pf-run-id')!;
      await waitTerminal(server, org.apiKey, wf.automationId, otherRun);
      const swapped = await fetch(steps[1]!.resultUrls['result.txt']!.url.replace(runId, otherRun));
      expect(swapped.status).to.equal(403);
    });

    it('sync: a failing run answers at once with FAILED, a non-zero exit code and the message', async () => {
      const failing = await deploy(server, org, {
        name: 'Fails',
        steps: [code('Boom', 'throw new Error("no coffee");'), code('Never', 'return 1;')],
      });
      const started = Date.now();
      const res = await trigger(failing.apiTriggerId, { body: {}, headers: { 'x-api-wait': 'true' } });
      expect(Date.now() - started).to.be.below(2500);
      expect(res.body.status).to.equal('FAILED');
      expect(res.body.results).to.have.length(1);
      expect(res.body.results[0].exitCode).to.not.equal(0);
      expect(res.body.results[0].result.result).to.contain('no coffee');
      const status = await waitTerminal(server, org.apiKey, failing.automationId, res.headers.get('x-pf-run-id')!);
      expect(status.stepStatus).to.deep.equal({ 0: 'FAILED', 1: 'SKIPPED' });
      // Polling exposes the failed step's message as error.txt (getRunResults decision).
      const results = await call(
        server.baseUrl,
        'GET',
        `/ext/webhook/${org.apiKey}/runs/${failing.automationId}/${res.body.id}/results`,
      );
      expect(Object.keys(results.body.results[0].resultUrls)).to.deep.equal(['error.txt']);
      const error = results.body.results[0].resultUrls['error.txt'];
      expect(error).to.deep.include({
        mimeType: 'text/plain',
        size: Buffer.byteLength(res.body.results[0].result.result),
      });
      expect(await (await fetch(error.url)).text()).to.equal(res.body.results[0].result.result);
    });

    it('sync: a run longer than the wait answers the timeout body with the run headers, and keeps going', async () => {
      // An http step against a slow loopback server keeps the run busy without burning CPU.
      const slowServer = http.createServer((_req, res) => setTimeout(() => res.end('rested'), 4500));
      await new Promise<void>((r) => slowServer.listen(0, '127.0.0.1', () => r()));
      after(() => slowServer.close());
      const url = `http://127.0.0.1:${(slowServer.address() as { port: number }).port}/`;
      const slow = await deploy(server, org, {
        name: 'Slow',
        steps: [{ type: 'http', name: 'Nap', request: { method: 'GET', url } }],
      });
      const res = await trigger(slow.apiTriggerId, { body: {}, headers: { 'x-api-wait': 'true' } });
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({ status: 'timeout', message: res.body.message });
      expect(res.body.message).to.be.a('string').and.not.equal('');
      const runId = res.headers.get('x-pf-run-id')!;
      expect(res.headers.get('x-pf-automation-id')).to.equal(slow.automationId);
      expect((await waitTerminal(server, org.apiKey, slow.automationId, runId)).status).to.equal('COMPLETE');
    });

    it('op:callWebhookTrigger takes the key in the path, JSON and form bodies; multipart is refused with 415', async () => {
      const json = await call(server.baseUrl, 'POST', `/ext/webhook/${org.apiKey}/triggers/${demo.webhookTriggerId}`, {
        body: { name: 'Hook' },
        headers: { 'x-api-wait': 'true' },
      });
      expect(json.body).to.include({ status: 'COMPLETE', startedBy: 'webhook_trigger' });
      const form = await call(server.baseUrl, 'POST', `/ext/webhook/${org.apiKey}/triggers/${demo.webhookTriggerId}`, {
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-api-wait': 'true' },
        raw: 'name=Form',
      });
      expect(form.body.results[0].result.result).to.equal('Hello, Form!');
      const fd = new FormData();
      fd.append('name', 'x');
      const multi = await fetch(`${server.baseUrl}/ext/webhook/${org.apiKey}/triggers/${demo.webhookTriggerId}`, {
        method: 'POST',
        body: fd,
      });
      expect(multi.status).to.equal(415);
      expect(await multi.json()).to.include({ error: 'unsupported_media_type' });
    });

    it('op:callApiTriggerWithQuery and op:callWebhookTriggerWithQuery: query parameters are the inputs; on POST the body wins', async () => {
      const get = await call(server.baseUrl, 'GET', `/ext/triggers/${demo.apiTriggerId}?name=Query`, {
        headers: { 'x-api-key': org.apiKey, 'x-api-wait': 'true' },
      });
      expect(get.body.results[0].result.result).to.equal('Hello, Query!');
      const hook = await call(
        server.baseUrl,
        'GET',
        `/ext/webhook/${org.apiKey}/triggers/${demo.webhookTriggerId}?name=HookQuery`,
        { headers: { 'x-api-wait': 'true' } },
      );
      expect(hook.body.results[0].result.result).to.equal('Hello, HookQuery!');
      const both = await trigger(demo.apiTriggerId, {
        query: '?name=Query&extra=1',
        body: { name: 'Body' },
        headers: { 'x-api-wait': 'true' },
      });
      expect(JSON.parse(both.body.inputs)).to.deep.equal({ name: 'Body', extra: '1' });
    });

    it('op:callApiTriggerWithQuery converts query inputs to the input schema types, reads inputs[name], and refuses what does not convert', async () => {
      const typed = await deploy(server, org, {
        name: 'Typed',
        inputSchema: {
          type: 'object',
          required: ['seats'],
          properties: {
            seats: { type: 'integer' },
            ratio: { type: 'number' },
            vip: { type: 'boolean' },
            tags: { type: 'array', items: { type: 'string' } },
            note: { type: 'string' },
            gone: { type: ['null', 'integer'] },
          },
        },
        steps: [code('Echo', 'return JSON.stringify(ctx.inputs);', { resultType: 'json' })],
      });
      const get = (qs: string) =>
        call(server.baseUrl, 'GET', `/ext/triggers/${typed.apiTriggerId}?${qs}`, {
          headers: { 'x-api-key': org.apiKey, 'x-api-wait': 'true' },
        });
      const ok = await get(
        'seats=5&ratio=0.5&vip=true&tags=a&tags=b&note=007&gone=&extra=1&extra=2&inputs%5Bsource%5D=sdk&inputs%5Bcodes%5D%5B%5D=x&inputs%5Bcodes%5D%5B%5D=y',
      );
      expect(ok.status, ok.text).to.equal(200);
      expect(JSON.parse(ok.body.inputs)).to.deep.equal({
        seats: 5,
        ratio: 0.5,
        vip: true,
        tags: ['a', 'b'],
        note: '007',
        gone: null,
        extra: '2',
        source: 'sdk',
        codes: 'y',
      });
      const one = await get('seats=1&tags=solo');
      expect(JSON.parse(one.body.inputs)).to.deep.equal({ seats: 1, tags: ['solo'] });
      const hook = await call(
        server.baseUrl,
        'GET',
        `/ext/webhook/${org.apiKey}/triggers/${typed.webhookTriggerId}?inputs%5Bseats%5D=7`,
        { headers: { 'x-api-wait': 'true' } },
      );
      expect(JSON.parse(hook.body.inputs)).to.deep.equal({ seats: 7 });
      const bad = await get('seats=five&vip=maybe');
      expect([bad.status, bad.body.error]).to.deep.equal([400, 'invalid_inputs']);
      expect(bad.body.message).to.contain('/seats must be integer').and.contain('/vip must be boolean');
      expect(await get('seats=1.5').then((r) => r.status)).to.equal(400);
      // Body inputs are never converted: a JSON string where the schema says integer is refused.
      const body = await trigger(typed.apiTriggerId, { body: { seats: '5' }, headers: { 'x-api-wait': 'true' } });
      expect([body.status, body.body.error]).to.deep.equal([400, 'invalid_inputs']);
    });

    it('keys: missing or invalid → 401; a valid key of another organisation → 404; unknown trigger → 401 without a valid key, 404 with one; disabled → 403', async () => {
      const missing = await trigger(demo.apiTriggerId, { key: '', body: {} });
      expect([missing.status, missing.body.error]).to.deep.equal([401, 'missing_api_key']);
      expect((await trigger(demo.apiTriggerId, { key: 'syk_wrong', body: {} })).status).to.equal(401);
      expect((await trigger('trg_nope', { key: 'syk_wrong', body: {} })).status).to.equal(401);
      const unknown = await trigger('trg_nope', { body: {} });
      expect([unknown.status, unknown.body.error]).to.deep.equal([404, 'trigger_not_found']);
      const foreign = await trigger(demo.apiTriggerId, { key: other.apiKey, body: {} });
      expect([foreign.status, foreign.body.error]).to.deep.equal([404, 'trigger_not_found']);
      const hookViaApi = await trigger(demo.webhookTriggerId, { body: {} });
      expect(hookViaApi.status).to.equal(404);
      const disabledWf = await deploy(server, org, { name: 'Off', steps: [code('x', 'return 1;')] });
      const t = await call(server.baseUrl, 'GET', `/v1/triggers/${disabledWf.apiTriggerId}`, { token: org.token });
      await call(server.baseUrl, 'PATCH', `/v1/triggers/${disabledWf.apiTriggerId}`, {
        token: org.token,
        body: { enabled: false },
        headers: { 'if-match': `"${t.body.version}"` },
      });
      const disabled = await trigger(disabledWf.apiTriggerId, { body: {} });
      expect([disabled.status, disabled.body.error]).to.deep.equal([403, 'trigger_disabled']);
    });

    it('bad bodies get 400/415 with the error object and start no run', async () => {
      const before = (await server.app.services.db('runs').count({ n: '*' }))[0]!.n;
      const malformed = await trigger(demo.apiTriggerId, {
        raw: '{"name":',
        headers: { 'content-type': 'application/json' },
      });
      expect([malformed.status, malformed.body.error]).to.deep.equal([400, 'malformed_json']);
      const array = await trigger(demo.apiTriggerId, { body: [1, 2] });
      expect(array.status).to.equal(400);
      const text = await trigger(demo.apiTriggerId, { raw: 'hello', headers: { 'content-type': 'text/plain' } });
      expect([text.status, text.body.error]).to.deep.equal([415, 'unsupported_media_type']);
      const wrongType = await trigger(demo.apiTriggerId, { body: { name: 42 } });
      expect([wrongType.status, wrongType.body.error]).to.deep.equal([400, 'invalid_inputs']);
      const badWait = await trigger(demo.apiTriggerId, { body: {}, headers: { 'x-api-wait': 'maybe' } });
      expect(badWait.status).to.equal(400);
      const after = (await server.app.services.db('runs').count({ n: '*' }))[0]!.n;
      expect(Number(after)).to.equal(Number(before));
    });

    it('Idempotency-Key replays the first run (headers and sync result) with Idempotent-Replay: true', async () => {
      const key = `idem-${Date.now()}`;
      const first = await trigger(demo.apiTriggerId, { body: { name: 'Once' }, headers: { 'idempotency-key': key } });
      const second = await trigger(demo.apiTriggerId, {
        body: { name: 'Twice' },
        headers: { 'idempotency-key': key, 'x-api-wait': 'true' },
      });
      expect(second.headers.get('x-pf-run-id')).to.equal(first.headers.get('x-pf-run-id'));
      expect(second.headers.get('idempotent-replay')).to.equal('true');
      expect(JSON.parse(second.body.inputs)).to.deep.equal({ name: 'Once' });
      const fresh = await trigger(demo.apiTriggerId, { body: {}, headers: { 'idempotency-key': `${key}-2` } });
      expect(fresh.headers.get('x-pf-run-id')).to.not.equal(first.headers.get('x-pf-run-id'));
      expect(fresh.headers.get('idempotent-replay')).to.equal(null);
    });

    it('polling: a wrong key is 401, another automation id or another org is 404', async () => {
      const res = await trigger(demo.apiTriggerId, { body: {} });
      const runId = res.headers.get('x-pf-run-id')!;
      expect(
        (await call(server.baseUrl, 'GET', `/ext/webhook/syk_wrong/runs/${demo.automationId}/${runId}/status`)).status,
      ).to.equal(401);
      expect(
        (await call(server.baseUrl, 'GET', `/ext/webhook/${org.apiKey}/runs/wf_other/${runId}/status`)).status,
      ).to.equal(404);
      const foreign = await call(
        server.baseUrl,
        'GET',
        `/ext/webhook/${other.apiKey}/runs/${demo.automationId}/${runId}/results`,
      );
      expect([foreign.status, foreign.body.error]).to.deep.equal([404, 'run_not_found']);
    });

    it('multipart attachments become inputs.attachments with signed URLs; a tampered URL is 403', async () => {
      const echo = await deploy(server, org, { name: 'Echo', steps: [code('Echo', 'return ctx.inputs;')] });
      const fd = new FormData();
      fd.append('note', 'two files');
      fd.append('files', new Blob(['hello'], { type: 'text/plain' }), '../../etc/greeting.txt');
      fd.append(
        'files',
        new Blob([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])], { type: 'image/png' }),
        'pixel.png',
      );
      const res = await fetch(`${server.baseUrl}/ext/triggers/${echo.apiTriggerId}`, {
        method: 'POST',
        body: fd,
        headers: { 'x-api-key': org.apiKey, 'x-api-wait': 'true' },
      });
      expect(res.status).to.equal(200);
      const body = (await res.json()) as any;
      const inputs = JSON.parse(body.inputs);
      expect(inputs.note).to.equal('two files');
      expect(inputs.attachments.map((a: any) => a.filename)).to.deep.equal(['greeting.txt', 'pixel.png']);
      expect(inputs.attachments[0]).to.include({ contentType: 'text/plain', size: 5 });
      const download = await fetch(inputs.attachments[0].url);
      expect(await download.text()).to.equal('hello');
      const tampered = await fetch(
        inputs.attachments[0].url.replace(
          /signature=([0-9a-f])/,
          (_: string, c: string) => `signature=${c === '0' ? '1' : '0'}`,
        ),
      );
      expect(tampered.status).to.equal(403);
    });
  });
}
