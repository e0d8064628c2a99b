/**
 * GET /v1/runs/{runId} (openapi/management.yaml `getRun`): a run read with the runtime token,
 * while it runs (a step held open by a loopback server) and once it ended, with step results,
 * step files and the designated output; other organisations' runs and unknown ids answer 404.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { storeKinds } from '../../helpers/store.js';
import { startTestServer, createTestOrg, call, type TestServer, type TestOrg } from '../../helpers/server.js';
import { deploy, code, type Deployed } from '../../helpers/runs.js';

const kinds = await storeKinds();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const kind of kinds) {
  describe(`HTTP: one run with its steps (${kind})`, function () {
    this.timeout(60_000);
    let server: TestServer;
    let org: TestOrg;
    let other: TestOrg;
    let wf: Deployed;
    let gate: http.Server;
    let gateUrl = '';
    /** Answers the held step's request when called. */
    const held: (() => void)[] = [];

    const get = (runId: string, token = org.token) => call(server.baseUrl, 'GET', `/v1/runs/${runId}`, { token });

    before(async () => {
      gate = http.createServer((_req, res) => held.push(() => res.end('released')));
      await new Promise<void>((r) => gate.listen(0, '127.0.0.1', r));
      gateUrl = `http://127.0.0.1:${(gate.address() as AddressInfo).port}/`;
      server = await startTestServer(kind);
      org = await createTestOrg(server, 'Detail org');
      other = await createTestOrg(server, 'Other org');
      wf = await deploy(
        server,
        org,
        {
          name: 'Held report',
          steps: [
            { type: 'http', name: 'Wait', request: { method: 'GET', url: gateUrl } },
            code('Write', 'ctx.files.write("report.md", "# Done", "text/markdown"); return "# Done";', {
              resultType: 'markdown',
            }),
          ],
        },
        { stepIndex: 1, fileName: 'report.md' },
      );
    });
    after(async () => {
      await server.close();
      gate.closeAllConnections();
      await new Promise<void>((r) => gate.close(() => r()));
    });
    afterEach(() => server.assertResponsesValid());

    it('op:getRun shows a RUNNING run with its planned steps, then the ended run with results, files and the designated output', async () => {
      const started = await call(server.baseUrl, 'POST', `/ext/triggers/${wf.apiTriggerId}`, {
        headers: { 'x-api-key': org.apiKey },
        body: { ticket: 'T-1' },
      });
      expect(started.status, started.text).to.equal(200);
      const runId = started.headers.get('x-pf-run-id')!;
      const deadline = Date.now() + 10_000;
      while (held.length === 0 && Date.now() < deadline) await sleep(20);
      expect(held, 'the held step called the gate').to.have.length(1);

      const running = await get(runId);
      expect(running.status, running.text).to.equal(200);
      expect(running.headers.get('cache-control')).to.equal('no-store');
      expect(running.body).to.deep.include({
        runId,
        automationId: wf.automationId,
        automationName: 'Held report',
        automationVersion: 1,
        triggerId: wf.apiTriggerId,
        status: 'RUNNING',
        startedBy: 'api_trigger',
        error: null,
        finishedAt: null,
        designatedOutput: null,
      });
      expect(running.body.inputs).to.deep.include({ ticket: 'T-1' });
      expect(running.body.steps.map((s: any) => [s.stepIndex, s.name])).to.deep.equal([
        [0, 'Wait'],
        [1, 'Write'],
      ]);
      expect(running.body.steps[1]).to.include({ status: 'PENDING', result: null, exitCode: null });

      held.shift()!();
      let done = running;
      while (Date.now() < deadline + 10_000) {
        done = await get(runId);
        if (done.body.status !== 'RUNNING' && done.body.status !== 'PENDING') break;
        await sleep(50);
      }
      expect(done.body.status, done.text).to.equal('COMPLETE');
      expect(Date.parse(done.body.finishedAt)).to.be.at.least(Date.parse(done.body.startedAt));
      const [wait, write] = done.body.steps;
      expect(wait).to.include({ status: 'COMPLETE', exitCode: 0 });
      expect(wait.durationMs).to.be.a('number');
      expect(write).to.include({ status: 'COMPLETE', resultType: 'markdown', result: '# Done', stepVersion: 1 });
      expect(write.files.map((f: any) => f.fileName)).to.deep.equal(['report.md']);
      expect(done.body.designatedOutput).to.include({ fileName: 'report.md', mimeType: 'text/markdown', size: 6 });
      const file = await fetch(done.body.designatedOutput.url);
      expect(file.status).to.equal(200);
      expect(await file.text()).to.equal('# Done');
    });

    it("op:getRun answers 404 not_found for another organisation's run and an unknown id", async () => {
      const mine = await call(server.baseUrl, 'GET', '/v1/runs?limit=1', { token: org.token });
      const runId = mine.body.items[0].runId as string;
      const theirs = await get(runId, other.token);
      expect(theirs.status, theirs.text).to.equal(404);
      expect(theirs.body).to.include({ error: 'not_found' });
      const unknown = await get('run_0000000000000000000000000000ffff');
      expect(unknown.status).to.equal(404);
      expect(unknown.body.error).to.equal('not_found');
      const anonymous = await call(server.baseUrl, 'GET', `/v1/runs/${runId}`);
      expect(anonymous.status).to.equal(401);
    });
  });
}
