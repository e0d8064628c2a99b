/**
 * `switchyard agents …` and `switchyard channels …`: agents and their API channels (spec
 * sections 5 and 11) at a terminal, on the store directly, like the other verbs of main.ts.
 * Output is JSON; a channel key is printed once, by `channels create` and `channels
 * rotate-key`, and never again (only its hash is stored).
 */
import type { Command, Option } from 'commander';
import type { Knex } from 'knex';
import { AgentManagementAgentCreateInput as validateCreateInput } from '../../generated/validators/schemas.js';
import type { Config } from '../config/index.js';
import {
  createAgent,
  listAgents,
  requireAgent,
  type AgentCreate,
  type ServerRef,
  channelEtag,
  channelView,
  createChannel,
  deleteChannel,
  listChannels,
  requireChannel,
  rotateChannelKey,
  updateChannel,
  OUTPUT_FORMATS,
  type OutputFormat,
  AgentConfigError,
  checkModel,
  checkOutputSchema,
} from '../agents/index.js';
import { EMBEDDED_PATHS, findAppServerByPath } from '../gateway/index.js';

/** What main.ts lends to every verb: the store, the organisation, output and errors. */
export interface CliKit {
  withStore<T>(fn: (ctx: { db: Knex; config: Config }) => Promise<T>): Promise<T>;
  resolveOrg(db: Knex, explicit: string | undefined): Promise<string>;
  orgOption(): Option;
  print(value: unknown): void;
  readDefinition(file: string): unknown;
  /** An error main.ts prints as `switchyard: <message>` with exit code 1. */
  fail(message: string): Error;
}

/**
 * The checks of checkAgentConfig that need no gateway: the CLI has no catalogue, so a server
 * path must be embedded or an application server registered in the store (embedded servers'
 * tool names are checked when the server runs them, as for application servers).
 */
async function checkAgentFile(kit: CliKit, db: Knex, orgId: string, input: unknown): Promise<AgentCreate> {
  if (!validateCreateInput(input)) {
    const problems = (validateCreateInput.errors ?? []).map((e) => {
      const where = e.instancePath || '/';
      return e.keyword === 'additionalProperties'
        ? `${where}: unknown field "${String((e.params as { additionalProperty?: string }).additionalProperty)}"`
        : `${where}: ${e.message ?? 'invalid'}`;
    });
    throw kit.fail(`invalid agent: ${problems.join('; ')}`);
  }
  const agent = input as AgentCreate;
  try {
    checkModel(agent.model);
    checkOutputSchema(agent.outputSchema);
  } catch (err) {
    if (err instanceof AgentConfigError) throw kit.fail(`invalid agent: ${err.field}: ${err.message}`);
    throw err;
  }
  const seen = new Set<string>();
  for (const [i, ref] of (agent.servers ?? ([] as ServerRef[])).entries()) {
    if (seen.has(ref.server))
      throw kit.fail(`invalid agent: servers[${i}].server: server "${ref.server}" is listed twice`);
    seen.add(ref.server);
    if (EMBEDDED_PATHS.includes(ref.server) || (await findAppServerByPath(db, orgId, ref.server))) continue;
    throw kit.fail(
      `invalid agent: servers[${i}].server: unknown server "${ref.server}": use an embedded server (${EMBEDDED_PATHS.join(', ')}) or a registered application server path`,
    );
  }
  return agent;
}

function outputFormat(kit: CliKit, value: string | undefined): OutputFormat | undefined {
  if (value === undefined) return undefined;
  if (!(OUTPUT_FORMATS as readonly string[]).includes(value))
    throw kit.fail(`--format must be one of ${OUTPUT_FORMATS.join(', ')}`);
  return value as OutputFormat;
}

function registerAgents(program: Command, kit: CliKit): void {
  const agents = program
    .command('agents')
    .description('agents (spec section 11): list, show, create from a JSON or YAML file');
  agents
    .command('list')
    .addOption(kit.orgOption())
    .action((o: { org?: string }) =>
      kit.withStore(async ({ db }) => {
        const page = await listAgents(db, await kit.resolveOrg(db, o.org), { limit: 200 });
        kit.print({ items: page.agents, nextCursor: page.nextCursor });
      }),
    );
  agents
    .command('show <agentId>')
    .addOption(kit.orgOption())
    .action((id: string, o: { org?: string }) =>
      kit.withStore(async ({ db }) => kit.print(await requireAgent(db, await kit.resolveOrg(db, o.org), id))),
    );
  agents
    .command('create')
    .description(
      'create an agent from a file with the agent_create fields (name, instructions, servers, model, outputSchema, introMessage)',
    )
    .requiredOption('--file <file>', 'JSON or YAML file')
    .addOption(kit.orgOption())
    .action((o: { file: string; org?: string }) =>
      kit.withStore(async ({ db }) => {
        const orgId = await kit.resolveOrg(db, o.org);
        const input = await checkAgentFile(kit, db, orgId, kit.readDefinition(o.file));
        kit.print(await createAgent(db, orgId, input));
      }),
    );
}

function registerChannels(program: Command, kit: CliKit): void {
  const channels = program
    .command('channels')
    .description('agent API channels (spec section 5): call URL and channel key');
  const view = (config: Config, c: Parameters<typeof channelView>[1]) => channelView(config.baseUrls.triggers, c);

  channels
    .command('create')
    .requiredOption('--agent <agentId>')
    .option('--name <name>')
    .option('--format <format>', `reply format: ${OUTPUT_FORMATS.join(', ')} (default text)`)
    .addOption(kit.orgOption())
    .action((o: { agent: string; name?: string; format?: string; org?: string }) =>
      kit.withStore(async ({ db, config }) => {
        const format = outputFormat(kit, o.format);
        const { channel, apiKey } = await createChannel(db, await kit.resolveOrg(db, o.org), {
          agentId: o.agent,
          name: o.name,
          outputFormat: format,
        });
        kit.print({ ...view(config, channel), apiKey, note: 'the key is shown once' });
      }),
    );
  channels
    .command('list')
    .option('--agent <agentId>', 'only the channels of this agent')
    .addOption(kit.orgOption())
    .action((o: { agent?: string; org?: string }) =>
      kit.withStore(async ({ db, config }) => {
        const page = await listChannels(db, await kit.resolveOrg(db, o.org), { agentId: o.agent }, { limit: 200 });
        kit.print({ items: page.items.map((c) => view(config, c)), nextCursor: page.nextCursor });
      }),
    );
  channels
    .command('show <triggerId>')
    .addOption(kit.orgOption())
    .action((id: string, o: { org?: string }) =>
      kit.withStore(async ({ db, config }) =>
        kit.print(view(config, await requireChannel(db, await kit.resolveOrg(db, o.org), id))),
      ),
    );
  channels
    .command('rotate-key <triggerId>')
    .description('replace the channel key; the old key stops working at once')
    .addOption(kit.orgOption())
    .action((id: string, o: { org?: string }) =>
      kit.withStore(async ({ db }) =>
        kit.print({
          ...(await rotateChannelKey(db, await kit.resolveOrg(db, o.org), id)),
          note: 'the key is shown once',
        }),
      ),
    );
  for (const [verb, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    channels
      .command(`${verb} <triggerId>`)
      .description(enabled ? 'accept calls again' : 'reject calls (403) until enabled; URL and key are kept')
      .addOption(kit.orgOption())
      .action((id: string, o: { org?: string }) =>
        kit.withStore(async ({ db, config }) => {
          const orgId = await kit.resolveOrg(db, o.org);
          const current = await requireChannel(db, orgId, id);
          kit.print(
            view(
              config,
              await updateChannel(db, orgId, id, { expectedEtag: channelEtag(current), patch: { enabled } }),
            ),
          );
        }),
      );
  }
  channels
    .command('delete <triggerId>')
    .description('delete the channel; its URL and key stop working')
    .addOption(kit.orgOption())
    .action((id: string, o: { org?: string }) =>
      kit.withStore(async ({ db }) => {
        await deleteChannel(db, await kit.resolveOrg(db, o.org), id);
        kit.print({ triggerId: id, deleted: true });
      }),
    );
}

/** Registers `agents` and `channels` on the program (one call from main.ts). */
export function registerAgentCommands(program: Command, kit: CliKit): void {
  registerAgents(program, kit);
  registerChannels(program, kit);
}
