/**
 * The Postman environment for generated/postman/switchyard.postman_collection.json: the
 * values the collection's variables need (baseUrl, clientId, clientSecret, orgId, apiKey,
 * demo ids). Written on first start next to bootstrap.json and by `switchyard postman-env`.
 * It holds secrets (the client secret and the API key): files are mode 0600 and the
 * secret values are typed `secret` so Postman masks them.
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import {
  authenticateClient,
  createApiKey,
  createCredential,
  getOrganization,
  settleUsageWrites,
  verifyApiKey,
} from '../auth/index.js';
import { findWorkflow, listWorkflows } from '../engine/index.js';
import { findTrigger, listTriggers } from '../triggers/index.js';
import { demoWorkflow } from './demo-workflow.js';
import type { BootstrapFile } from './index.js';

export const BOOTSTRAP_FILE = 'bootstrap.json';
export const POSTMAN_ENV_FILE = 'postman_environment.json';

export interface PostmanEnvValues {
  baseUrl: string;
  orgId: string;
  clientId: string;
  clientSecret: string;
  apiKey: string;
  demo: { automationId: string; apiTriggerId: string; webhookTriggerId: string } | undefined;
}

export interface PostmanEnvironment {
  id: string;
  name: string;
  values: { key: string; value: string; type: 'default' | 'secret'; enabled: true }[];
  _postman_variable_scope: 'environment';
}

/** The environment document Postman imports (its variable names are the collection's). */
export function postmanEnvironment(v: PostmanEnvValues): PostmanEnvironment {
  const entry = (key: string, value: string, { secret = false }: { secret?: boolean } = {}) => ({
    key,
    value,
    type: secret ? ('secret' as const) : ('default' as const),
    enabled: true as const,
  });
  return {
    id: randomUUID(),
    name: `Switchyard (${v.baseUrl})`,
    values: [
      entry('baseUrl', v.baseUrl),
      entry('orgId', v.orgId),
      entry('clientId', v.clientId),
      entry('clientSecret', v.clientSecret, { secret: true }),
      entry('apiKey', v.apiKey, { secret: true }),
      entry('demoAutomationId', v.demo?.automationId ?? ''),
      entry('demoApiTriggerId', v.demo?.apiTriggerId ?? ''),
      entry('demoWebhookTriggerId', v.demo?.webhookTriggerId ?? ''),
    ],
    _postman_variable_scope: 'environment',
  };
}

/** A JSON file that holds secrets: mode 0600, also when it already existed with another mode. */
export function writeSecretJson(file: string, value: unknown): string {
  writeFileSync(file, JSON.stringify(value, null, 2) + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
  return file;
}

/** Writes the environment with mode 0600 (it carries the client secret and the API key). */
export function writePostmanEnvironment(file: string, env: PostmanEnvironment): string {
  return writeSecretJson(file, env);
}

export function readBootstrapFile(dataDir: string): BootstrapFile | undefined {
  const file = path.join(dataDir, BOOTSTRAP_FILE);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as BootstrapFile) : undefined;
}

export function valuesFromBootstrap(baseUrl: string, b: BootstrapFile): PostmanEnvValues {
  return {
    baseUrl,
    orgId: b.orgId,
    clientId: b.clientId,
    clientSecret: b.clientSecret,
    apiKey: b.apiKey,
    demo: b.demo,
  };
}

/**
 * What in the values no longer works against the store: a revoked credential or API key
 * makes the whole collection fail, a deleted demo only the trigger folder.
 */
export async function checkPostmanValues(
  db: Knex,
  v: PostmanEnvValues,
): Promise<{ fatal: string[]; warnings: string[] }> {
  const fatal: string[] = [];
  const warnings: string[] = [];
  const client = await authenticateClient(db, v.clientId, v.clientSecret);
  if (!client || client.orgId !== v.orgId)
    fatal.push(`the credential ${v.clientId} is revoked or its secret no longer matches`);
  const key = await verifyApiKey(db, v.apiKey);
  if (!key || key.orgId !== v.orgId) fatal.push('the API key is revoked');
  await settleUsageWrites();
  if (v.demo) {
    const wf = await findWorkflow(db, v.orgId, v.demo.automationId);
    const api = await findTrigger(db, v.orgId, v.demo.apiTriggerId);
    const hook = await findTrigger(db, v.orgId, v.demo.webhookTriggerId);
    if (!wf || !api || !hook)
      warnings.push(
        'the demo workflow or one of its triggers was deleted: the "Run the demo workflow" folder will fail',
      );
  }
  return { fatal, warnings };
}

/**
 * A new credential and API key for Postman in `orgId` (the client secret is stored only as a
 * hash, so the bootstrap one cannot be recovered). Demo ids are looked up by the demo's name.
 */
export async function freshPostmanValues(db: Knex, baseUrl: string, orgId: string): Promise<PostmanEnvValues> {
  if (!(await getOrganization(db, orgId))) throw new Error(`no organisation ${orgId}`);
  const { credential, clientSecret } = await createCredential(db, orgId, { label: 'Postman environment' });
  const { secret } = await createApiKey(db, orgId, { label: 'Postman environment' });
  return {
    baseUrl,
    orgId,
    clientId: credential.clientId,
    clientSecret,
    apiKey: secret,
    demo: await findDemo(db, orgId),
  };
}

async function findDemo(db: Knex, orgId: string): Promise<PostmanEnvValues['demo']> {
  const workflows = await listWorkflows(db, orgId, { limit: 200 });
  const wf = workflows.items.find((w) => w.name === demoWorkflow.name);
  if (!wf) return undefined;
  const triggers = await listTriggers(db, orgId, { automationId: wf.automationId }, { limit: 200 });
  const api = triggers.items.find((t) => t.kind === 'api');
  const hook = triggers.items.find((t) => t.kind === 'webhook');
  return api && hook
    ? { automationId: wf.automationId, apiTriggerId: api.triggerId, webhookTriggerId: hook.triggerId }
    : undefined;
}
