// capabilities_discover (spec section 8): ranking, types, context, connections with PCID,
// resources, skills, confidence bounds, and every result valid against the output schema.
import { expect } from 'chai';
import { CapabilitiesDiscoverOutput } from '../../../../generated/validators/schemas.js';
import type { ToolServer } from '../../../../src/gateway/types.js';
import {
  createMemorySource,
  createSidekickServer,
  type DiscoverResult,
} from '../../../../src/servers/sidekick/index.js';
import { appServer, connections, context, resources, skills, tools } from './fixtures.js';

async function discover(server: ToolServer, args: Record<string, unknown>): Promise<DiscoverResult> {
  const res = await server.callTool(context(), 'capabilities_discover', args);
  expect(res.isError).to.equal(undefined);
  const body = res.structuredContent as DiscoverResult;
  expect(CapabilitiesDiscoverOutput(body), JSON.stringify(CapabilitiesDiscoverOutput.errors)).to.equal(true);
  expect(JSON.parse(res.content[0]!.text as string)).to.deep.equal(body);
  return body;
}

const names = (r: DiscoverResult): string[] => r.tools.map((t) => t.name);

describe('svc-sidekick capabilities_discover', () => {
  let server: ToolServer;
  beforeEach(() => {
    server = createSidekickServer(createMemorySource({ tools: tools(), connections, resources }), { skills });
  });

  describe('ranking', () => {
    const cases: [string, string][] = [
      ['send a slack message', 'slack_send_message'],
      ['post a message to the #sales channel', 'slack_send_message'],
      ['email the report to finance', 'gmail_send_email'],
      ['find unpaid invoices', 'stripe_list_invoices'],
      ['refund a charge', 'stripe_create_refund'],
      // A word the tool does not use, related to its word in WordNet (repay → refund).
      ['repay a charge', 'stripe_create_refund'],
      ['mark the Jira issue as done', 'jira_transition_issue'],
      ['create an agent that triages support emails', 'agent-management_agent_create'],
      ['list all tool servers', 'listServers'],
    ];
    for (const [request, expected] of cases) {
      it(`"${request}" → ${expected} first`, async () => {
        expect(names(await discover(server, { request }))[0]).to.equal(expected);
      });
    }

    it('reads a file name, a channel or a URL in the request as a value of that kind, not as words (literals.ts)', async () => {
      const files = appServer('files', 'Files', 'Local files.', [
        ['files_move', 'Move or rename a file or a folder.', { from: 'Current path', to: 'New path' }],
        ['files_read', 'Read the text of a file.', { path: 'Path' }],
      ]);
      const withFiles = createSidekickServer(
        createMemorySource({ tools: [...tools(), ...files], connections, resources }),
        { skills },
      );
      // Read as words, "slack" and "invoices" would point at Slack's and Stripe's tools.
      expect(
        names(await discover(withFiles, { request: 'rename slack-invoices.csv to stripe-archive.csv' }))[0],
      ).to.equal('files_move');
      expect(
        names(await discover(withFiles, { request: 'what does https://stripe.com/invoices/jira say' })),
      ).to.not.include.members(['stripe_list_invoices', 'jira_search_issues']);
    });

    it('reads the first 128 words of a request: a request of 20,000 words answers at once, by its beginning', async () => {
      const filler = Array.from(
        { length: 20_000 },
        (_, i) => ['invoice', 'refund', 'calendar', 'jira', 'deploy'][i % 5],
      ).join(' ');
      const started = performance.now();
      const r = await discover(server, { request: `send a slack message ${'about '.repeat(124)}${filler}` });
      expect(performance.now() - started).to.be.below(1_000);
      expect(names(r)[0]).to.equal('slack_send_message');
      expect(names(r)).to.not.include.members(['stripe_create_refund', 'jira_create_issue']);
    });

    it('"create an issue for this bug" puts issue-creating tools on top', async () => {
      const top = names(await discover(server, { request: 'create an issue for this bug' })).slice(0, 2);
      expect(top).to.have.members(['jira_create_issue', 'linear_create_issue']);
    });

    it('sorts every array by confidence, highest first', async () => {
      const r = await discover(server, { request: 'send a slack message' });
      for (const list of [r.tools, r.connections, r.resources, r.skills] as { confidence: number }[][]) {
        expect(list.map((x) => x.confidence)).to.deep.equal([...list.map((x) => x.confidence)].sort((a, b) => b - a));
      }
    });

    it('returns the tool description and serverName to call it at', async () => {
      const [first] = (await discover(server, { request: 'send a slack message' })).tools;
      expect(first).to.deep.include({ name: 'slack_send_message', serverName: 'slack', hasSkill: true });
      expect(first!.description).to.match(/^Send a message/);
    });

    it('applies limit per kind', async () => {
      const r = await discover(server, { request: 'issue', limit: 1 });
      expect(r.tools).to.have.length(1);
    });
  });

  describe('confidence', () => {
    it('is 1 for an exact tool name (also server/tool), in 0..1 otherwise', async () => {
      const exact = await discover(server, { request: 'jira_search_issues' });
      expect(exact.tools[0]).to.deep.include({ name: 'jira_search_issues', confidence: 1 });
      const qualified = await discover(server, { request: 'slack/slack_add_reaction' });
      expect(qualified.tools[0]).to.deep.include({ name: 'slack_add_reaction', confidence: 1 });
      for (const t of exact.tools.slice(1)) expect(t.confidence).to.be.within(0, 1).and.below(1);
    });

    it('is high for a precise request and low (or nothing) for unrelated ones', async () => {
      const good = await discover(server, { request: 'send a slack message' });
      expect(good.tools[0]!.confidence).to.be.above(0.8);
      for (const request of ['bake a chocolate cake', 'quantum chromodynamics lecture notes']) {
        const r = await discover(server, { request });
        expect(
          r.tools.every((t) => t.confidence < 0.4),
          `${request}: ${JSON.stringify(r.tools)}`,
        ).to.equal(true);
      }
    });

    it('stays below 1 for a vague one-word request', async () => {
      const r = await discover(server, { request: 'create' });
      expect(r.tools[0]!.confidence).to.be.below(0.7);
    });

    it('drops hits below the floor', async () => {
      const r = await discover(server, { request: 'send a slack message' });
      for (const list of [r.tools, r.connections, r.resources, r.skills] as { confidence: number }[][]) {
        for (const x of list) expect(x.confidence).to.be.at.least(0.2).and.at.most(1);
      }
    });
  });

  describe('types', () => {
    it('returns only the requested kinds; the others are empty arrays', async () => {
      const r = await discover(server, { request: 'send a slack message', types: ['connection'] });
      expect(r.tools).to.deep.equal([]);
      expect(r.resources).to.deep.equal([]);
      expect(r.skills).to.deep.equal([]);
      expect(r.connections[0]).to.deep.include({ id: 'conn_slack_1', application: 'slack' });
    });

    it('tool only', async () => {
      const r = await discover(server, { request: 'send a slack message', types: ['tool'] });
      expect(r.tools).to.not.be.empty;
      expect(r.connections).to.deep.equal([]);
      expect(r.skills).to.deep.equal([]);
    });

    it('resource: matches names, types and descriptions', async () => {
      const r = await discover(server, { request: 'store scraped prices', types: ['resource'] });
      expect(r.resources[0]).to.deep.equal({
        ...r.resources[0],
        name: 'Competitor prices',
        id: 'col_prices',
        type: 'datastore',
      });
      const vault = await discover(server, { request: 'where are the partner secrets', types: ['resource'] });
      expect(vault.resources[0]?.id).to.equal('col_api_keys');
    });

    it('agentSkill: directly and through the tools found', async () => {
      const r = await discover(server, { request: 'send a slack message', types: ['agentSkill'] });
      expect(r.skills[0]).to.deep.include({ name: 'slack-messaging', serverName: 'slack', tool: 'slack_send_message' });
      const server2 = await discover(server, { request: 'workflow transitions in jira', types: ['agentSkill'] });
      expect(server2.skills[0]).to.deep.include({ name: 'jira-basics', serverName: 'jira' });
      expect(server2.skills[0]).to.not.have.property('tool');
    });
  });

  describe('connections (PCID)', () => {
    it('"send a slack message" returns the Slack connection with its PCID', async () => {
      const r = await discover(server, { request: 'send a slack message' });
      expect(r.connections[0]).to.deep.include({ name: 'Acme workspace', id: 'conn_slack_1', application: 'slack' });
      expect(r.connections[0]!.confidence).to.be.above(0.7);
    });

    it('matches a connection by its name', async () => {
      const r = await discover(server, { request: 'sales mailbox', types: ['connection'] });
      expect(r.connections[0]?.id).to.equal('conn_gmail_1');
    });

    it('hasSkill is true for a tool with its own skill and for tools of a server with a server-wide skill', async () => {
      const r = await discover(server, { request: 'jira issue', types: ['tool'], limit: 20 });
      for (const t of r.tools.filter((x) => x.serverName === 'jira')) expect(t.hasSkill, t.name).to.equal(true);
      const s = await discover(server, { request: 'slack channels', types: ['tool'], limit: 20 });
      expect(s.tools.find((t) => t.name === 'slack_list_channels')?.hasSkill).to.equal(false);
    });
  });

  describe('context', () => {
    it('agent-execution demotes application tools without a connected connection', async () => {
      // Jira has a connection, Linear none: neutral ties them, agent-execution prefers Jira.
      const request = 'create an issue';
      const neutral = names(await discover(server, { request, types: ['tool'] }));
      const agent = names(await discover(server, { request, types: ['tool'], context: 'agent-execution' }));
      expect(agent.indexOf('jira_create_issue')).to.be.below(
        agent.indexOf('linear_create_issue') === -1 ? Infinity : agent.indexOf('linear_create_issue'),
      );
      expect(neutral).to.include('linear_create_issue');
      const linearNeutral = (await discover(server, { request, types: ['tool'] })).tools.find(
        (t) => t.name === 'linear_create_issue',
      )!;
      const linearAgent = (await discover(server, { request, types: ['tool'], context: 'agent-execution' })).tools.find(
        (t) => t.name === 'linear_create_issue',
      );
      expect(linearAgent?.confidence ?? 0).to.be.below(linearNeutral.confidence);
    });

    it('agent-execution boosts connected connections and pushes down broken ones', async () => {
      const neutral = await discover(server, { request: 'refund a stripe charge', types: ['connection'] });
      const agent = await discover(server, {
        request: 'refund a stripe charge',
        types: ['connection'],
        context: 'agent-execution',
      });
      const before = neutral.connections.find((c) => c.id === 'conn_stripe_old')?.confidence ?? 0;
      const after = agent.connections.find((c) => c.id === 'conn_stripe_old')?.confidence ?? 0;
      expect(after).to.be.below(before);
      const slackNeutral = (await discover(server, { request: 'slack', types: ['connection'] })).connections[0]!;
      const slackAgent = (
        await discover(server, { request: 'slack', types: ['connection'], context: 'agent-execution' })
      ).connections[0]!;
      expect(slackAgent.confidence).to.be.at.least(slackNeutral.confidence);
    });

    it('workflow-creation prefers read-only tools and returns more borderline matches', async () => {
      // Two near-identical tools; only the read-only hint differs (the shorter name ranks first
      // when context is neutral).
      const pair = appServer('reports', 'Reports', 'Reporting.', [
        ['reports_weekly_export', 'Export the weekly sales report as a PDF.', {}, { readOnlyHint: false }],
        ['reports_weekly_export_pdf', 'Export the weekly sales report as a PDF.', {}, { readOnlyHint: true }],
      ]);
      const s = createSidekickServer(createMemorySource({ tools: [...tools(), ...pair] }), { skills });
      const request = 'export the weekly sales report';
      const neutral = names(await discover(s, { request, types: ['tool'] }));
      const wf = names(await discover(s, { request, types: ['tool'], context: 'workflow-creation' }));
      expect(neutral.slice(0, 2)).to.deep.equal(['reports_weekly_export', 'reports_weekly_export_pdf']);
      expect(wf.slice(0, 2)).to.deep.equal(['reports_weekly_export_pdf', 'reports_weekly_export']);
      // Lower floor: at least as many matches, and here strictly more for a loose request.
      const loose = await discover(server, {
        request: 'calendar meeting agenda notes',
        types: ['tool'],
        limit: 50,
        context: 'workflow-creation',
      });
      const strict = await discover(server, { request: 'calendar meeting agenda notes', types: ['tool'], limit: 50 });
      expect(loose.tools.length).to.be.above(strict.tools.length);
    });

    it('workflow-creation does not demote tools whose application has no connection', async () => {
      const request = 'create an issue';
      const find = (r: DiscoverResult): number => r.tools.find((t) => t.name === 'linear_create_issue')!.confidence;
      const neutral = find(await discover(server, { request, types: ['tool'] }));
      expect(find(await discover(server, { request, types: ['tool'], context: 'workflow-creation' }))).to.equal(
        neutral,
      );
    });
  });

  it('a request of stop words only finds nothing (and is still a valid result)', async () => {
    const r = await discover(server, { request: 'the of and' });
    expect(r).to.deep.equal({ tools: [], connections: [], resources: [], skills: [] });
  });
});
