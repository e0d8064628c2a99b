/**
 * First start on an empty store: a default organisation, an admin credential, a trigger API
 * key, a demo workflow with an API trigger (designated output = its file) and a webhook
 * trigger, a demo agent with a text channel, a demo datastore and a demo queue on the API
 * trigger. Writes DATA_DIR/bootstrap.json and DATA_DIR/postman_environment.json (mode 0600)
 * and prints ready-to-paste commands once.
 */
import path from 'node:path';
import { createOrganization, createCredential, createApiKey, newestOrganizationIds } from '../auth/index.js';
import { createWorkflow } from '../engine/index.js';
import { createTrigger } from '../triggers/index.js';
import type { Knex } from 'knex';
import type { Config } from '../config/index.js';
import type { Logger } from '../config/logger.js';
import { demoWorkflow } from './demo-workflow.js';
import { demoAgent } from './demo-agent.js';
import { createAgent, createChannel } from '../agents/index.js';
import { createCollection } from '../events/index.js';
import { createQueue } from '../queues/index.js';
import {
  BOOTSTRAP_FILE,
  POSTMAN_ENV_FILE,
  postmanEnvironment,
  valuesFromBootstrap,
  writePostmanEnvironment,
  writeSecretJson,
} from './postman-env.js';

/** Field names are stable: other tools read this file. */
export interface BootstrapFile {
  orgId: string;
  clientId: string;
  clientSecret: string;
  apiKey: string;
  baseUrls: { triggers: string; auth: string; mcp: string; connect: string; runFiles: string };
  demo: {
    automationId: string;
    apiTriggerId: string;
    webhookTriggerId: string;
    agentId: string;
    channelTriggerId: string;
    channelApiKey: string;
    datastoreId: string;
    queueId: string;
  };
}

export interface BootstrapDeps {
  db: Knex;
  config: Config;
  log: Logger;
}

/** Creates the demo on an empty store; returns the file written and the welcome text to print once. */
export async function bootstrapIfEmpty(
  services: BootstrapDeps,
  out?: NodeJS.WritableStream,
): Promise<(BootstrapFile & { text: string }) | undefined> {
  const { db, config, log } = services;
  if ((await newestOrganizationIds(db, 1)).length > 0) return undefined;
  const org = await createOrganization(db, { name: 'Default organisation' });
  const { credential, clientSecret } = await createCredential(db, org.id, { label: 'admin (created on first start)' });
  const { secret: apiKey } = await createApiKey(db, org.id, { label: 'default trigger key (created on first start)' });
  const workflow = await createWorkflow(db, org.id, demoWorkflow);
  const apiTrigger = await createTrigger(db, org.id, {
    automationId: workflow.automationId,
    kind: 'api',
    name: 'Demo API trigger',
    designatedOutput: { stepIndex: 1, fileName: 'report.md' },
  });
  const webhookTrigger = await createTrigger(db, org.id, {
    automationId: workflow.automationId,
    kind: 'webhook',
    name: 'Demo webhook trigger',
  });
  const agent = await createAgent(db, org.id, demoAgent);
  const { channel, apiKey: channelApiKey } = await createChannel(db, org.id, {
    agentId: agent.agentId,
    name: 'Demo text channel',
    outputFormat: 'text',
  });
  // A structured datastore with no trigger URLs (README "Collections" attaches one).
  const datastore = await createCollection(db, org.id, {
    name: 'Demo customers',
    description: 'Demo structured datastore: one item per customer.',
    type: 'structured_datastore',
  });
  // A queue for CSV batches on the demo API trigger (spec section 15); two runs at a time keeps a
  // demo batch visibly queued.
  const queue = await createQueue(db, org.id, {
    name: 'Demo queue',
    description: 'Demo queue: one run of the demo workflow per CSV row.',
    triggerId: apiTrigger.triggerId,
    concurrencyLimit: 2,
  });
  const file: BootstrapFile = {
    orgId: org.id,
    clientId: credential.clientId,
    clientSecret,
    apiKey,
    baseUrls: { ...config.baseUrls },
    demo: {
      automationId: workflow.automationId,
      apiTriggerId: apiTrigger.triggerId,
      webhookTriggerId: webhookTrigger.triggerId,
      agentId: agent.agentId,
      channelTriggerId: channel.triggerId,
      channelApiKey,
      datastoreId: datastore.id,
      queueId: queue.id,
    },
  };
  const target = writeSecretJson(path.join(config.dataDir, BOOTSTRAP_FILE), file);
  // The Postman environment holds the same secrets; written only here, while the secret is known.
  writePostmanEnvironment(
    path.join(config.dataDir, POSTMAN_ENV_FILE),
    postmanEnvironment(valuesFromBootstrap(config.publicUrl, file)),
  );
  log.info({ orgId: org.id, file: target }, 'first start: demo organisation created (secrets are in bootstrap.json)');
  const text = welcome(file, target);
  out?.write(text);
  return Object.assign(file, { text });
}

function welcome(b: BootstrapFile, file: string): string {
  const u = b.baseUrls;
  return `
Switchyard is ready. Demo organisation ${b.orgId}; secrets saved to ${file} (mode 0600).
Postman: import generated/postman/switchyard.postman_collection.json and ${path.join(path.dirname(file), POSTMAN_ENV_FILE)}.
Shown once — paste into a shell:

  # 1. an OAuth runtime token (spec 6), valid 60 minutes
  TOKEN=$(curl -s -X POST ${u.auth}/oauth/token \\
    -d grant_type=client_credentials -d client_id=${b.clientId} \\
    -d client_secret=${b.clientSecret} -d scope=org:${b.orgId} | sed 's/.*"access_token":"\\([^"]*\\)".*/\\1/')

  # 2. the same through the legacy exchange
  curl -s -X POST ${u.auth}/auth/token -H 'X-Api-Key: ${b.clientSecret}' -H 'X-Selected-Org: ${b.orgId}' -H 'Content-Type: application/json' -d '{}'

  # 3. the demo workflow and its triggers through the management API
  curl -s ${u.triggers}/v1/workflows/${b.demo.automationId} -H "Authorization: Bearer $TOKEN"
  curl -s "${u.triggers}/v1/triggers?automationId=${b.demo.automationId}" -H "Authorization: Bearer $TOKEN"

  # 4. connections (spec 10)
  curl -s "${u.connect}/manage/user-connections?statuses=connected" -H "Authorization: Bearer $TOKEN"

  # 5. run the demo workflow: async (200, body null, X-Pf-Run-Id / X-Pf-Automation-Id headers)
  curl -si -X POST ${u.triggers}/ext/triggers/${b.demo.apiTriggerId} -H 'X-API-KEY: ${b.apiKey}' -H 'Content-Type: application/json' -d '{"name":"Ada"}'

  # 6. sync (waits up to 60 s): the results body, with designatedOutput.url to download report.md
  curl -s -X POST ${u.triggers}/ext/triggers/${b.demo.apiTriggerId} -H 'X-API-KEY: ${b.apiKey}' -H 'x-api-wait: true' -H 'Content-Type: application/json' -d '{"name":"Ada"}'

  # 7. poll a run (RUN_ID from the X-Pf-Run-Id header of step 5)
  curl -s ${u.triggers}/ext/webhook/${b.apiKey}/runs/${b.demo.automationId}/RUN_ID/status
  curl -s ${u.triggers}/ext/webhook/${b.apiKey}/runs/${b.demo.automationId}/RUN_ID/results

  # 8. the webhook trigger (the key is in the path: treat the URL as a secret)
  curl -s -X POST ${u.triggers}/ext/webhook/${b.apiKey}/triggers/${b.demo.webhookTriggerId} -H 'Content-Type: application/json' -d '{"name":"Grace"}'

  # 9. the tool gateway (JSON-RPC 2.0, spec 7-9): list the servers, then discover tools in plain language
  curl -s -X POST ${u.mcp}/mcp -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -H 'Accept: application/json' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"listServers","arguments":{}}}'
  curl -s -X POST ${u.mcp}/svc-sidekick -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -H 'Accept: application/json' \
    -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"capabilities_discover","arguments":{"request":"create an agent"}}}'
  # 10. talk to the demo agent over its API channel (spec 5; needs DEFAULT_MODEL, see the README "Agents")
  curl -si -X POST ${u.triggers}/ext/triggers/${b.demo.channelTriggerId} -H 'X-API-Key: ${b.demo.channelApiKey}' -H 'Content-Type: application/json' -d '{"message":"Which tools can you use?"}'
  # 11. the demo queue (spec 15): CSV rows become runs of the demo workflow, two at a time
  curl -s ${u.triggers}/v1/queues/${b.demo.queueId} -H "Authorization: Bearer $TOKEN"
  # MCP clients connect to ${u.mcp}/<server-path> over Streamable HTTP with the same Bearer token, e.g.
  #   npx @modelcontextprotocol/inspector --cli ${u.mcp}/gateway --transport http --header "Authorization: Bearer $TOKEN" --method tools/list
`;
}
export {
  BOOTSTRAP_FILE,
  checkPostmanValues,
  freshPostmanValues,
  postmanEnvironment,
  readBootstrapFile,
  valuesFromBootstrap,
  writePostmanEnvironment,
} from './postman-env.js';
