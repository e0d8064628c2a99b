/**
 * Test inputs for the discovery server: a small in-memory catalogue (a few application
 * servers plus the servers described in schemas/tools), connections, resources, skills and a
 * minimal GatewayContext.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import type {
  CatalogConnection,
  CatalogResource,
  CatalogTool,
  GatewayContext,
  GatewayServices,
  JsonSchemaObject,
} from '../../../../src/gateway/types.js';
import { loadConfig } from '../../../../src/config/index.js';
import { openStore } from '../../../../src/storage/db.js';
import { describedServerTools, type SkillDoc } from '../../../../src/servers/sidekick/index.js';

let shared: GatewayServices | undefined;

/**
 * A gateway call's services for discovery over an in-memory catalogue, which reads nothing of
 * the store: a sqlite store in a temporary folder (connected on its first query only) and the
 * configuration of that folder, shared by every context of the process.
 */
export function gatewayServices(): GatewayServices {
  if (!shared) {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sy-discovery-'));
    shared = {
      db: openStore({ dataDir }),
      config: loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' }),
      log: pino({ level: 'silent' }),
    };
  }
  return shared;
}

export function context(orgId = 'org_a'): GatewayContext {
  const log = pino({ level: 'silent' });
  return {
    services: gatewayServices(),
    log,
    orgId,
    forwardedHeaders: {},
    signal: new AbortController().signal,
  };
}

function schema(props: Record<string, string>, required: string[]): JsonSchemaObject {
  const properties: Record<string, unknown> = { PCID: { type: 'string', description: 'Connection id.' } };
  for (const [k, d] of Object.entries(props)) properties[k] = { type: 'string', description: d };
  return { type: 'object', properties, required: ['PCID', ...required] };
}

type Spec = [name: string, description: string, props?: Record<string, string>, annotations?: Record<string, unknown>];

export function appServer(path: string, title: string, about: string, tools: Spec[]): CatalogTool[] {
  return tools.map(([name, description, props = {}, annotations]) => ({
    server: path,
    serverTitle: title,
    serverDescription: about,
    embedded: false,
    serviceKey: path,
    tool: {
      name,
      description,
      inputSchema: schema(props, Object.keys(props).slice(0, 1)),
      outputSchema: { type: 'object', properties: { ok: { type: 'boolean' } } },
      ...(annotations ? { annotations } : {}),
    },
  }));
}

export const slack = appServer('slack', 'Slack', 'Team messaging: channels and direct messages.', [
  [
    'slack_send_message',
    'Send a message to a Slack channel or a direct message conversation.',
    { channel: 'Channel ID or name', text: 'Message text' },
  ],
  ['slack_list_channels', 'List the channels of the workspace.', { limit: 'Page size' }, { readOnlyHint: true }],
  [
    'slack_add_reaction',
    'Add an emoji reaction to a message.',
    { channel: 'Channel', timestamp: 'Message timestamp', name: 'Emoji name' },
  ],
  [
    'slack_get_channel_history',
    'Fetch the messages of a channel, newest first.',
    { channel: 'Channel ID' },
    { readOnlyHint: true },
  ],
]);

export const gmail = appServer('gmail', 'Gmail', "Google's email service.", [
  ['gmail_send_email', 'Send an email with subject and body.', { to: 'Recipients', subject: 'Subject', body: 'Body' }],
  [
    'gmail_search_emails',
    'Search the mailbox and return matching messages.',
    { query: 'Gmail search query' },
    { readOnlyHint: true },
  ],
]);

export const jira = appServer('jira', 'Jira', 'Issue and project tracking.', [
  [
    'jira_create_issue',
    'Create an issue (bug, task, story) in a Jira project.',
    { project_key: 'Project key', summary: 'Summary' },
  ],
  ['jira_search_issues', 'Search issues with a JQL query.', { jql: 'JQL query' }, { readOnlyHint: true }],
  [
    'jira_transition_issue',
    'Move an issue to another workflow status such as Done.',
    { issue_key: 'Issue key', transition: 'Transition' },
  ],
]);

export const linear = appServer('linear', 'Linear', 'Issue tracking for software teams.', [
  ['linear_create_issue', 'Create an issue for a team.', { team_id: 'Team', title: 'Title' }],
  ['linear_search_issues', 'Search issues by text.', { query: 'Text' }, { readOnlyHint: true }],
]);

export const stripe = appServer('stripe', 'Stripe', 'Online payments: invoices, charges and refunds.', [
  [
    'stripe_list_invoices',
    'List invoices filtered by status (draft, open, paid, void).',
    { status: 'Invoice status' },
    { readOnlyHint: true },
  ],
  ['stripe_create_refund', 'Refund a charge fully or partially.', { charge: 'Charge ID' }],
]);

export const appTools = [...slack, ...gmail, ...jira, ...linear, ...stripe];
export const tools = (): CatalogTool[] => [...appTools, ...describedServerTools()];

export const connections: CatalogConnection[] = [
  { id: 'conn_slack_1', name: 'Acme workspace', serviceKey: 'slack', status: 'connected' },
  { id: 'conn_gmail_1', name: 'Sales mailbox', serviceKey: 'gmail', status: 'connected' },
  { id: 'conn_jira_1', name: 'Engineering Jira', serviceKey: 'jira', status: 'connected' },
  { id: 'conn_stripe_old', name: 'Stripe (old key)', serviceKey: 'stripe', status: 'error' },
];

export const resources: CatalogResource[] = [
  {
    id: 'col_prices',
    name: 'Competitor prices',
    type: 'datastore',
    description: 'Scraped prices of competitor products.',
  },
  {
    id: 'col_contracts',
    name: 'Signed contracts',
    type: 'filestore',
    description: 'PDF contracts signed by customers.',
  },
  { id: 'col_api_keys', name: 'Partner API keys', type: 'vault' },
];

export const skills: SkillDoc[] = [
  {
    name: 'slack-messaging',
    server: 'slack',
    tools: ['slack_send_message'],
    title: 'Sending Slack messages',
    description: 'Channel ids, threads and mentions when posting to Slack.',
    content: '# Sending Slack messages\n\nUse the channel id, not its name.',
  },
  {
    name: 'jira-basics',
    server: 'jira',
    tools: [],
    title: 'Working with Jira',
    description: 'Project keys, issue types and workflow transitions.',
    content: '# Working with Jira\n\nIssue keys look like PROJ-123.',
  },
];

/** n synthetic tools over many made-up products (scale tests). */
export function manyTools(n: number): CatalogTool[] {
  const verbs = ['create', 'get', 'list', 'update', 'delete', 'search', 'archive', 'export'];
  const things = ['contact', 'invoice', 'ticket', 'order', 'file', 'task', 'event', 'campaign', 'report', 'shipment'];
  const out: CatalogTool[] = [];
  for (let i = 0; out.length < n; i++) {
    const product = `product${i}`;
    for (const thing of things) {
      for (const verb of verbs) {
        if (out.length >= n) break;
        out.push(
          ...appServer(product, `Product ${i}`, `Made-up product number ${i}.`, [
            [
              `${product}_${verb}_${thing}`,
              `${verb[0]!.toUpperCase()}${verb.slice(1)} a ${thing} in Product ${i}.`,
              { id: `Identifier of the ${thing}` },
            ],
          ]),
        );
      }
    }
  }
  return out;
}
