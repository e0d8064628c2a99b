/**
 * Workflow `http` steps of different organisations never share a keep-alive connection (README
 * "Caches", src/kernel/org-pools.ts): a step's duration would otherwise show that another
 * organisation called the same origin lately. Through the running service; a loopback server
 * records which organisation each connection carried.
 */
import { expect } from 'chai';
import { createTestOrg, call, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { deploy } from '../../helpers/runs.js';
import { recorder, type ConnectionRecorder } from '../../helpers/connection-recorder.js';

describe('HTTP: http steps keep each organisation’s connections apart', function () {
  this.timeout(60_000);
  let server: TestServer;
  let target: ConnectionRecorder;

  before(async () => {
    target = await recorder();
    server = await startTestServer('sqlite');
  });
  after(async () => {
    await server?.close();
    await target?.close();
  });
  afterEach(() => server.assertResponsesValid());

  it("an organisation's step reuses its own connection to an origin, never another organisation's", async () => {
    const orgs = [await createTestOrg(server, 'Org A'), await createTestOrg(server, 'Org B')];
    const triggers = new Map<TestOrg, string>();
    for (const [i, org] of orgs.entries()) {
      const wf = await deploy(server, org, {
        name: 'Ping',
        steps: [{ type: 'http', name: 'Ping', request: { method: 'GET', url: `${target.url}?org=${i}` } }],
      });
      triggers.set(org, wf.apiTriggerId);
    }
    const run = async (org: TestOrg) => {
      const res = await call(server.baseUrl, 'POST', `/ext/triggers/${triggers.get(org)}`, {
        headers: { 'x-api-key': org.apiKey, 'x-api-wait': 'true' },
        body: {},
      });
      expect(res.body.status, res.text).to.equal('COMPLETE');
    };
    const [a, b] = orgs as [TestOrg, TestOrg];
    for (const org of [a, a, b, a, b, a]) await run(org);
    expect(
      target.carried.every((carried) => carried.size === 1),
      JSON.stringify(target.carried.map((c) => [...c])),
    ).to.equal(true);
    expect(new Set(target.carried.flatMap((c) => [...c]))).to.deep.equal(new Set(['0', '1']));
    expect(target.carried.length, 'connections are reused').to.be.below(6);
  });
});
