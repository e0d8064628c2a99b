// capability_details (spec section 8): full schemas, skills, notFound, ambiguous names and
// `server/tool`, the `types` switches, and every result valid against the output schema.
import { expect } from 'chai';
import { CapabilityDetailsOutput } from '../../../../generated/validators/schemas.js';
import type { ToolServer } from '../../../../src/gateway/types.js';
import {
  createMemorySource,
  createSidekickServer,
  SKILL_SEPARATOR,
  type DetailsResult,
} from '../../../../src/servers/sidekick/index.js';
import { connections, context, resources, skills, slack, tools } from './fixtures.js';

async function details(server: ToolServer, args: Record<string, unknown>): Promise<DetailsResult> {
  const res = await server.callTool(context(), 'capability_details', args);
  const body = res.structuredContent as DetailsResult;
  expect(CapabilityDetailsOutput(body), JSON.stringify(CapabilityDetailsOutput.errors)).to.equal(true);
  expect(JSON.parse(res.content[0]!.text as string)).to.deep.equal(body);
  return body;
}

describe('svc-sidekick capability_details', () => {
  let server: ToolServer;
  beforeEach(() => {
    server = createSidekickServer(createMemorySource({ tools: tools(), connections, resources }), { skills });
  });

  it('returns the full input and output schemas, server, description and skill', async () => {
    const r = await details(server, { items: ['slack_send_message'] });
    expect(r.notFound).to.deep.equal([]);
    const [item] = r.items;
    const source = slack[0]!.tool;
    expect(item).to.deep.equal({
      name: 'slack_send_message',
      serverName: 'slack',
      description: source.description,
      inputSchema: source.inputSchema,
      outputSchema: source.outputSchema,
      skill: '# Sending Slack messages\n\nUse the channel id, not its name.',
    });
    expect(item!.inputSchema.required).to.include('PCID');
  });

  it('returns the generated schemas of embedded tools, with null skill when there is none', async () => {
    const r = await details(server, { items: ['browser-automation_operator_run'] });
    const input = r.items[0]!.inputSchema as { required: string[]; properties: Record<string, unknown> };
    expect(input.required).to.include.members(['task', 'cacheKey']);
    expect(input.properties).to.have.property('maxSteps');
    expect(r.items[0]!.outputSchema).to.have.property('type', 'object');
    expect(r.items[0]!.skill).to.equal(null);
  });

  it('joins a tool-specific skill and server-wide skills (tool first)', async () => {
    const extra = [
      ...skills,
      {
        name: 'slack-basics',
        server: 'slack',
        tools: [],
        title: 'Slack basics',
        description: 'General Slack advice.',
        content: '# Slack basics',
      },
    ];
    const s = createSidekickServer(createMemorySource({ tools: tools() }), { skills: extra });
    const [send, list] = (await details(s, { items: ['slack_send_message', 'slack_list_channels'] })).items;
    expect(send!.skill).to.equal(
      `# Sending Slack messages\n\nUse the channel id, not its name.${SKILL_SEPARATOR}# Slack basics`,
    );
    expect(list!.skill).to.equal('# Slack basics');
  });

  it('lists unknown names in notFound and keeps request order', async () => {
    const r = await details(server, { items: ['jira_search_issues', 'nope_tool', 'gmail_send_email', 'slack/nope'] });
    expect(r.items.map((i) => i.name)).to.deep.equal(['jira_search_issues', 'gmail_send_email']);
    expect(r.notFound).to.deep.equal(['nope_tool', 'slack/nope']);
  });

  it('returns every server for an ambiguous name, one for server/tool, and each tool once', async () => {
    const all = await details(server, { items: ['capabilities_discover'] });
    expect(all.items.map((i) => i.serverName)).to.have.members(['svc-sidekick', 'gateway']);
    const one = await details(server, { items: ['gateway/capabilities_discover', 'capabilities_discover'] });
    expect(one.items.map((i) => i.serverName)).to.deep.equal(['gateway', 'svc-sidekick']);
    const twice = await details(server, { items: ['jira_search_issues', 'jira/jira_search_issues'] });
    expect(twice.items).to.have.length(1);
  });

  it('matches names case-insensitively when there is no exact match', async () => {
    const r = await details(server, { items: ['SLACK_SEND_MESSAGE'] });
    expect(r.items[0]?.name).to.equal('slack_send_message');
  });

  it('types without tool empties the schemas; without agentSkill the skill is null', async () => {
    const noTool = await details(server, { items: ['slack_send_message'], types: ['agentSkill'] });
    expect(noTool.items[0]).to.deep.include({ inputSchema: {}, outputSchema: {} });
    expect(noTool.items[0]!.skill).to.be.a('string');
    const noSkill = await details(server, { items: ['slack_send_message'], types: ['tool'] });
    expect(noSkill.items[0]!.skill).to.equal(null);
    expect(noSkill.items[0]!.inputSchema).to.have.property('properties');
  });

  it('outputSchema is null when the tool declares none', async () => {
    const bare = { ...slack[0]!, tool: { ...slack[0]!.tool, name: 'slack_bare', outputSchema: undefined } };
    const s = createSidekickServer(createMemorySource({ tools: [bare] }), { skills: [] });
    expect((await details(s, { items: ['slack_bare'] })).items[0]!.outputSchema).to.equal(null);
  });

  it('a tool of an application server whose list is stale says so (serverStale), from the source, without asking the upstream', async () => {
    const source = createMemorySource({ tools: tools(), connections, resources });
    const asked: string[][] = [];
    const stale = createSidekickServer(
      {
        ...source,
        staleServers: async (_ctx, paths) => {
          asked.push(paths);
          return new Map([['slack', 'upstream tools/list failed: connect ECONNREFUSED']]);
        },
      },
      { skills },
    );
    const r = await details(stale, { items: ['slack_send_message'] });
    expect(r.items[0]).to.include({
      name: 'slack_send_message',
      serverStale: 'upstream tools/list failed: connect ECONNREFUSED',
    });
    expect(asked).to.deep.equal([['slack']]);
  });
});
