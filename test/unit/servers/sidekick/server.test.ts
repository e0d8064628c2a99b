// The svc-sidekick ToolServer: definitions from the generated tool table, argument
// validation (GatewayError -32000 naming the field, spec Errors) and unknown tools.
import { expect } from 'chai';
import { toolServers } from '../../../../generated/tools/servers.js';
import { GatewayError, RPC, type ToolServer } from '../../../../src/gateway/types.js';
import { createMemorySource, createSidekickServer } from '../../../../src/servers/sidekick/index.js';
import { context, skills, tools } from './fixtures.js';

async function rejection(p: Promise<unknown>): Promise<GatewayError> {
  try {
    await p;
  } catch (err) {
    expect(err).to.be.instanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error('expected a rejection');
}

describe('svc-sidekick server', () => {
  let server: ToolServer;
  beforeEach(() => {
    server = createSidekickServer(createMemorySource({ tools: tools() }), { skills });
  });

  it('is the embedded server at svc-sidekick with the two tools of the generated table', async () => {
    const table = toolServers.find((s) => s.path === 'svc-sidekick')!;
    expect(server).to.include({
      path: 'svc-sidekick',
      name: table.name,
      description: table.description,
      embedded: true,
    });
    const defs = await server.listTools(context());
    expect(defs.map((d) => d.name)).to.deep.equal(['capabilities_discover', 'capability_details']);
    for (const d of defs) {
      const t = table.tools.find((x) => x.name === d.name)!;
      expect(d).to.deep.equal({
        name: t.name,
        title: t.title,
        description: t.description,
        inputSchema: t.inputSchema,
        outputSchema: t.outputSchema,
        annotations: t.annotations,
      });
    }
  });

  it('listTools returns the prepared table, frozen (callers cannot change it)', async () => {
    const [first] = await server.listTools(context());
    expect(() => {
      first!.inputSchema.properties = {};
    }).to.throw(TypeError);
    const [again] = await server.listTools(context());
    expect(again!.inputSchema.properties).to.have.property('request');
  });

  const invalid: [string, string, Record<string, unknown>, RegExp][] = [
    ['missing request', 'capabilities_discover', {}, /`request` is required/],
    ['empty request', 'capabilities_discover', { request: '' }, /`request` must NOT have fewer than 1 characters/],
    ['request not a string', 'capabilities_discover', { request: 42 }, /`request` must be string/],
    [
      'unknown type',
      'capabilities_discover',
      { request: 'x', types: ['workflow'] },
      /`types\[0\]` must be one of tool, connection, resource, agentSkill/,
    ],
    [
      'unknown context',
      'capabilities_discover',
      { request: 'x', context: 'chat' },
      /`context` must be one of workflow-creation, agent-execution/,
    ],
    ['limit too high', 'capabilities_discover', { request: 'x', limit: 51 }, /`limit` must be <= 50/],
    ['unknown argument', 'capabilities_discover', { request: 'x', query: 'y' }, /`query` is not a known argument/],
    ['missing items', 'capability_details', {}, /`items` is required/],
    ['empty items', 'capability_details', { items: [] }, /`items` must NOT have fewer than 1 items/],
    [
      'too many items',
      'capability_details',
      { items: Array.from({ length: 51 }, (_, i) => `t${i}`) },
      /`items` must NOT have more than 50 items/,
    ],
    ['item not a string', 'capability_details', { items: ['ok', 3] }, /`items\[1\]` must be string/],
  ];
  for (const [label, tool, args, message] of invalid) {
    it(`${tool}: ${label} → GatewayError -32000 naming the field`, async () => {
      const err = await rejection(server.callTool(context(), tool, args));
      expect(err.code).to.equal(RPC.SERVER).and.to.equal(-32000);
      expect(err.message).to.match(message);
      expect(err.message).to.contain(tool);
      expect(err.data).to.have.property('errors').that.is.an('array').that.is.not.empty;
    });
  }

  it('an unknown tool name is -32602', async () => {
    const err = await rejection(server.callTool(context(), 'gateway_invoke', {}));
    expect(err.code).to.equal(RPC.INVALID_PARAMS);
    expect(err.message).to.contain('gateway_invoke');
  });
});
