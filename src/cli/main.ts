/**
 * `npx switchyard …` — the same service layer as the HTTP API, for people at a terminal.
 * It works on the store named by DATA_DIR / DATABASE_URL, like the server. Output is JSON.
 */
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import YAML from 'yaml';
import { loadConfig } from '../config/index.js';
import { createLogger } from '../config/logger.js';
import { openStore, migrate, type Knex } from '../storage/db.js';
import {
  createOrganization,
  organizationExists,
  newestOrganizationIds,
  createCredential,
  listCredentials,
  createApiKey,
  listApiKeys,
  revokeApiKey,
  authenticateClient,
  createTokenService,
} from '../auth/index.js';
import { createWorkflow, updateWorkflow, findWorkflow, listWorkflows } from '../engine/index.js';
import { createTrigger, hasEnabledTriggers, listTriggers } from '../triggers/index.js';
import {
  bootstrapIfEmpty,
  BOOTSTRAP_FILE,
  checkPostmanValues,
  freshPostmanValues,
  postmanEnvironment,
  readBootstrapFile,
  valuesFromBootstrap,
  writePostmanEnvironment,
} from '../bootstrap/index.js';
import { AppError } from '../errors/index.js';
import { entryUrl } from '../kernel/package-files.js';
import { registerAgentCommands } from './agents.js';
import { registerCollectionCommands } from './collections.js';
import { registerQueueCommands } from './queues.js';

function print(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

async function withStore<T>(
  fn: (ctx: { db: Knex; config: ReturnType<typeof loadConfig>; log: ReturnType<typeof createLogger> }) => Promise<T>,
): Promise<T> {
  const config = loadConfig();
  const log = createLogger(process.env.LOG_LEVEL ?? 'warn', process.stderr);
  const db = openStore({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    sqliteSynchronous: config.sqliteSynchronous,
  });
  try {
    await migrate(db);
    return await fn({ db, config, log });
  } finally {
    await db.destroy();
  }
}

/** --org, else SWITCHYARD_ORG, else the only organisation in the store. */
async function resolveOrg(db: Knex, explicit: string | undefined): Promise<string> {
  const wanted = explicit ?? process.env.SWITCHYARD_ORG;
  if (wanted) {
    if (!(await organizationExists(db, wanted))) throw new CliError(`no organisation ${wanted}`);
    return wanted;
  }
  const orgs = await newestOrganizationIds(db, 2);
  if (orgs.length === 1) return orgs[0]!;
  throw new CliError(
    orgs.length === 0 ? 'no organisation yet: run `switchyard init` first' : 'several organisations: pass --org <id>',
  );
}

class CliError extends Error {}

function readDefinition(file: string): unknown {
  const text = readFileSync(file, 'utf8');
  return /\.ya?ml$/i.test(file) ? YAML.parse(text) : JSON.parse(text);
}

const program = new Command()
  .name('switchyard')
  .description('Switchyard command line: organisations, credentials, keys, workflows, triggers, tokens')
  .showHelpAfterError();
const orgOption = () => new Option('--org <id>', 'organisation id (default: SWITCHYARD_ORG or the only one)');

// The service and the worker are their own programs (src/main.ts, src/worker.ts, or their
// compiled builds): these verbs load one, which then runs until it is stopped (SIGTERM, SIGINT).
program
  .command('start')
  .description('run the service (HTTP API, tool gateway, run workers), configured by the environment like `npm start`')
  .action(async () => {
    await import(entryUrl('main', new URL('../main.ts', import.meta.url)).href);
  });
program
  .command('worker')
  .description('run a worker that only executes queued runs (needs REDIS_URL), like `npm run worker`')
  .action(async () => {
    await import(entryUrl('worker', new URL('../worker.ts', import.meta.url)).href);
  });

program
  .command('init')
  .description('create the default organisation and demo data on an empty store')
  .action(() =>
    withStore(async ({ db, config, log }) => {
      const created = await bootstrapIfEmpty({ db, config, log }, process.stdout);
      if (!created) print({ message: 'the store already has an organisation; nothing to do', dataDir: config.dataDir });
    }),
  );

program
  .command('org:create')
  .description('create an organisation')
  .requiredOption('--name <name>')
  .action((o: { name: string }) => withStore(async ({ db }) => print(await createOrganization(db, { name: o.name }))));

const credentials = program
  .command('credentials')
  .description('API credentials (client id + secret, spec "Authentication" 4)');
credentials
  .command('create')
  .requiredOption('--label <label>')
  .addOption(orgOption())
  .action((o: { label: string; org?: string }) =>
    withStore(async ({ db }) => {
      const { credential, clientSecret } = await createCredential(db, await resolveOrg(db, o.org), { label: o.label });
      print({ ...credential, clientSecret, note: 'the secret is shown once' });
    }),
  );
credentials
  .command('list')
  .addOption(orgOption())
  .action((o: { org?: string }) =>
    withStore(async ({ db }) => print(await listCredentials(db, await resolveOrg(db, o.org), { limit: 200 }))),
  );
credentials
  .command('revoke <credentialId>')
  .addOption(orgOption())
  .option('--force', "revoke even the organisation's last active credential (the API refuses that with 409)")
  .action((id: string, o: { org?: string; force?: boolean }) =>
    withStore(async ({ db, config, log }) => {
      const tokens = await createTokenService({ db, config, log });
      const revoked = await tokens.revokeCredential(await resolveOrg(db, o.org), id, { force: o.force === true });
      if (!revoked) throw new CliError(`no credential ${id}`);
      print(revoked);
    }),
  );

const keys = program.command('keys').description('trigger API keys (X-API-KEY, webhook path keys)');
keys
  .command('create')
  .requiredOption('--label <label>')
  .addOption(orgOption())
  .action((o: { label: string; org?: string }) =>
    withStore(async ({ db }) => {
      const { apiKey, secret } = await createApiKey(db, await resolveOrg(db, o.org), { label: o.label });
      print({ ...apiKey, apiKey: secret, note: 'the key is shown once' });
    }),
  );
keys
  .command('list')
  .addOption(orgOption())
  .action((o: { org?: string }) =>
    withStore(async ({ db }) => print(await listApiKeys(db, await resolveOrg(db, o.org), { limit: 200 }))),
  );
keys
  .command('revoke <keyId>')
  .addOption(orgOption())
  .option('--force', 'revoke even the last active key while enabled triggers need one (the API refuses that with 409)')
  .action((id: string, o: { org?: string; force?: boolean }) =>
    withStore(async ({ db }) => {
      const revoked = await revokeApiKey(db, await resolveOrg(db, o.org), id, {
        force: o.force === true,
        triggersNeedKey: hasEnabledTriggers,
      });
      if (!revoked) throw new CliError(`no API key ${id}`);
      print(revoked);
    }),
  );

program
  .command('signing-keys:rotate')
  .description('start signing with a new key; old tokens stay valid until they expire')
  .action(() =>
    withStore(async ({ db, config, log }) => print(await (await createTokenService({ db, config, log })).rotate())),
  );

const workflow = program.command('workflow').description("workflows (the spec's automations)");
workflow
  .command('deploy <file>')
  .description('create a workflow from a YAML/JSON definition, or a new version with --id')
  .option('--id <automationId>', 'update this workflow (a new version)')
  .addOption(orgOption())
  .action((file: string, o: { id?: string; org?: string }) =>
    withStore(async ({ db }) => {
      const orgId = await resolveOrg(db, o.org);
      const definition = readDefinition(file);
      if (!o.id) return print(await createWorkflow(db, orgId, definition));
      const current = await findWorkflow(db, orgId, o.id);
      if (!current) throw new CliError(`no workflow ${o.id}`);
      print(await updateWorkflow(db, orgId, o.id, { expectedVersion: current.version, input: definition }));
    }),
  );
workflow
  .command('list')
  .addOption(orgOption())
  .action((o: { org?: string }) =>
    withStore(async ({ db }) => print(await listWorkflows(db, await resolveOrg(db, o.org), { limit: 200 }))),
  );

const trigger = program.command('trigger').description('API and webhook triggers');
trigger
  .command('create')
  .requiredOption('--workflow <automationId>')
  .addOption(new Option('--kind <kind>').choices(['api', 'webhook']).default('api'))
  .option('--name <name>')
  .option('--output-step <index>', 'designated output step index')
  .option('--output-file <name>', 'designated output file name')
  .addOption(orgOption())
  .action(
    (o: {
      workflow: string;
      kind: 'api' | 'webhook';
      name?: string;
      outputStep?: string;
      outputFile?: string;
      org?: string;
    }) =>
      withStore(async ({ db }) => {
        if ((o.outputStep === undefined) !== (o.outputFile === undefined))
          throw new CliError('--output-step and --output-file go together');
        const designatedOutput =
          o.outputStep !== undefined ? { stepIndex: Number(o.outputStep), fileName: o.outputFile! } : undefined;
        print(
          await createTrigger(db, await resolveOrg(db, o.org), {
            automationId: o.workflow,
            kind: o.kind,
            name: o.name,
            designatedOutput,
          }),
        );
      }),
  );
trigger
  .command('list')
  .option('--workflow <automationId>')
  .addOption(orgOption())
  .action((o: { workflow?: string; org?: string }) =>
    withStore(async ({ db }) =>
      print(await listTriggers(db, await resolveOrg(db, o.org), { automationId: o.workflow }, { limit: 200 })),
    ),
  );

program
  .command('token')
  .description('issue a runtime token for a credential (same as POST /oauth/token)')
  .requiredOption('--client-id <id>')
  .requiredOption('--client-secret <secret>')
  .action((o: { clientId: string; clientSecret: string }) =>
    withStore(async ({ db, config, log }) => {
      const credential = await authenticateClient(db, o.clientId, o.clientSecret);
      if (!credential) throw new CliError('invalid_client: unknown client, wrong secret or revoked credential');
      const tokens = await createTokenService({ db, config, log });
      const issued = await tokens.issue({
        orgId: credential.orgId,
        credentialId: credential.id,
        clientId: credential.clientId,
      });
      print({ access_token: issued.accessToken, token_type: 'Bearer', expires_in: issued.expiresIn });
    }),
  );

program
  .command('postman-env')
  .description(
    'print a Postman environment for generated/postman/switchyard.postman_collection.json (values from DATA_DIR/bootstrap.json, baseUrl from PUBLIC_URL)',
  )
  .option('--out <file>', 'write it to this file (mode 0600) instead of stdout')
  .option(
    '--new-credential',
    'create a new API credential and API key for it (when bootstrap.json is gone or its credential or key was revoked)',
  )
  .addOption(orgOption())
  .action((o: { out?: string; newCredential?: boolean; org?: string }) =>
    withStore(async ({ db, config }) => {
      const bootstrap = readBootstrapFile(config.dataDir);
      let values;
      if (o.newCredential) {
        values = await freshPostmanValues(db, config.publicUrl, await resolveOrg(db, o.org ?? bootstrap?.orgId));
      } else if (!bootstrap) {
        // Client secrets are stored only as hashes: nothing to rebuild them from.
        throw new CliError(
          `${config.dataDir}/${BOOTSTRAP_FILE} not found, and client secrets are stored only as hashes. ` +
            'Run `switchyard postman-env --new-credential` to create a credential and an API key for Postman (existing ones keep working).',
        );
      } else {
        values = valuesFromBootstrap(config.publicUrl, bootstrap);
        const { fatal, warnings } = await checkPostmanValues(db, values);
        if (fatal.length)
          throw new CliError(
            `${BOOTSTRAP_FILE}: ${fatal.join('; ')}. Run \`switchyard postman-env --new-credential\` for a fresh credential and API key.`,
          );
        for (const w of warnings) process.stderr.write(`switchyard: warning: ${w}\n`);
      }
      const env = postmanEnvironment(values);
      if (o.out) {
        writePostmanEnvironment(o.out, env);
        process.stderr.write(`switchyard: wrote ${o.out} (mode 0600; it holds the client secret and the API key)\n`);
      } else print(env);
    }),
  );

const kit = {
  withStore,
  resolveOrg,
  orgOption,
  print,
  readDefinition,
  fail: (message: string) => new CliError(message),
};
registerAgentCommands(program, kit);
registerCollectionCommands(program, kit);
registerQueueCommands(program, kit);

program.parseAsync(process.argv).catch((err: unknown) => {
  const message =
    err instanceof CliError || err instanceof AppError
      ? err.message
      : err instanceof Error
        ? (err.stack ?? err.message)
        : String(err);
  const details = err instanceof AppError && err.details ? `\n${JSON.stringify(err.details, null, 2)}` : '';
  process.stderr.write(`switchyard: ${message}${details}\n`);
  process.exitCode = 1;
});
