/**
 * Schemas an organisation writes are compiled alone and memoised per organisation (README
 * "Caches", src/kernel/own-schemas.ts) over real HTTP: another organisation's workflow input
 * schema or agent output schema cannot `$ref` them (so their property names never show in its
 * error messages), and using the same `$id` neither fails nor tells it that the `$id` exists.
 */
import { expect } from 'chai';
import { call, createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { code, deploy } from '../../helpers/runs.js';

describe("HTTP: one organisation's schemas are out of another's reach", function () {
  this.timeout(60_000);
  let server: TestServer;
  let a: TestOrg;
  let b: TestOrg;
  const ID = 'https://schemas.acme.example/payroll';

  before(async () => {
    server = await startTestServer('sqlite');
    a = await createTestOrg(server, 'Org A');
    b = await createTestOrg(server, 'Org B');
  });
  after(async () => server.close());
  afterEach(() => server.assertResponsesValid());

  const trigger = (org: TestOrg, triggerId: string, body: unknown) =>
    call(server.baseUrl, 'POST', `/ext/triggers/${triggerId}`, { headers: { 'x-api-key': org.apiKey }, body });
  const workflow = (inputSchema: Record<string, unknown>) => ({
    name: 'Payroll',
    inputSchema,
    steps: [code('Echo', 'return "ok";')],
  });

  it('workflow input schemas: a $ref to another organisation’s $id reaches nothing; the same $id is each one’s own', async () => {
    const mine = await deploy(
      server,
      a,
      workflow({ $id: ID, type: 'object', required: ['ssn', 'salary'], properties: { ssn: { type: 'string' } } }),
    );
    const refused = await trigger(a, mine.apiTriggerId, {});
    expect(refused.status, refused.text).to.equal(400);
    expect(refused.text).to.contain("required property 'ssn'");

    const probe = await call(server.baseUrl, 'POST', '/v1/workflows', {
      token: b.token,
      body: workflow({ type: 'object', $ref: ID }),
    });
    expect(probe.status, probe.text).to.equal(400);
    expect(probe.body.error).to.equal('invalid_request');
    expect(probe.text).to.match(/can't resolve reference/);
    expect(probe.text).to.not.contain('ssn').and.not.contain('salary');

    const own = await deploy(server, b, workflow({ $id: ID, type: 'object', required: ['employee'] }));
    const checked = await trigger(b, own.apiTriggerId, {});
    expect(checked.status, checked.text).to.equal(400);
    expect(checked.text).to.contain("required property 'employee'").and.not.contain('ssn');
  });

  it('agent output schemas: a $ref to another organisation’s $id is refused as unresolved; the same $id is accepted', async () => {
    const agent = (org: TestOrg, outputSchema: Record<string, unknown>) =>
      call(server.baseUrl, 'POST', '/v1/agents', {
        token: org.token,
        body: { name: 'Payroll', instructions: 'Read the payslip.', outputSchema },
      });
    const mine = await agent(a, { $id: ID, type: 'object', required: ['salary'] });
    expect(mine.status, mine.text).to.equal(201);
    const same = await agent(b, { $id: ID, type: 'object', required: ['employee'] });
    expect(same.status, same.text).to.equal(201);
    const probe = await agent(b, { type: 'object', $ref: ID });
    expect(probe.status, probe.text).to.equal(400);
    expect(probe.body.message).to.match(/can't resolve reference/);
  });
});
