/**
 * Shared fixtures of the management tests (engine, triggers, connections, gateway): seeded
 * organisations, definitions, a handler context, error capture and OpenAPI reply checks.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import type { Knex } from 'knex';
import { readFileSync } from 'node:fs';
import YAML from 'yaml';
import type { Config } from '../../../src/config/index.js';
import { createLogger } from '../../../src/config/logger.js';
import { AppError } from '../../../src/errors/index.js';
import { ResponseValidator } from '../../../src/http/response-validator.js';
import type { WorkflowDefinition } from '../../../src/engine/index.js';
import type { Handler, HandlerContext, HandlerRequest, Reply } from '../../../src/engine/handlers/types.js';

export const ORG_A = 'org_a';
export const ORG_B = 'org_b';

/** Organisations are owned by the auth context; tests insert the rows directly. */
export async function seedOrgs(db: Knex, ...ids: string[]): Promise<void> {
  const list = ids.length ? ids : [ORG_A, ORG_B];
  await db('organizations').insert(list.map((id) => ({ id, name: `Org ${id}`, created_at: new Date().toISOString() })));
}

export function codeStep(name: string, code = `return '${name}';`): Record<string, unknown> {
  return { type: 'code', name, code };
}

export function definition(steps = 2, extra: Partial<WorkflowDefinition> = {}): WorkflowDefinition {
  return {
    name: 'Greeting report',
    steps: Array.from({ length: steps }, (_, i) => codeStep(`step ${i}`)) as WorkflowDefinition['steps'],
    ...extra,
  };
}

export function testConfig(): Config {
  return {
    port: 0, host: '127.0.0.1', dataDir: '/tmp', databaseUrl: undefined, redisUrl: undefined,
    publicUrl: 'http://localhost:8080',
    baseUrls: {
      triggers: 'http://triggers.test', auth: 'http://auth.test', mcp: 'http://mcp.test/mcp',
      connect: 'http://connect.test', runFiles: 'http://files.test',
    },
    secretKey: randomBytes(32), logLevel: 'silent', tokenTtlSeconds: 3600, revocationCacheMs: 0,
    signingKeyMaxAgeDays: 30, tokenAudience: 'switchyard', validateResponses: true, seedDemo: false,
  };
}

export function context(db: Knex, orgId: string, config: Config = testConfig()): HandlerContext {
  const log = createLogger('silent');
  return { services: { config, db, log }, log, requestId: 'req-test', auth: { orgId, credentialId: 'cred_test', clientId: 'cli_test' } };
}

export function request(parts: Partial<HandlerRequest> = {}): HandlerRequest {
  return { params: {}, query: {}, headers: {}, body: undefined, ...parts };
}

/** Awaits a promise that must fail with an AppError of the given wire code and status. */
export async function expectAppError(p: Promise<unknown>, code: string, status: number): Promise<AppError> {
  try {
    await p;
  } catch (e) {
    expect(e, String(e)).to.be.instanceOf(AppError);
    const err = e as AppError;
    expect({ code: err.code, status: err.status }).to.deep.equal({ code, status });
    return err;
  }
  throw new Error(`expected ${code} (${status}) but the call succeeded`);
}

const validators = new Map<string, Promise<ResponseValidator>>();

/** Validator of one document of openapi/ (not the bundle: other documents may be mid-edit). */
function validatorFor(operationId: string): Promise<ResponseValidator> {
  const file = operationId === 'listUserConnections' ? 'connect.yaml' : 'management.yaml';
  let v = validators.get(file);
  if (!v) {
    const doc = YAML.parse(readFileSync(new URL(`../../../openapi/${file}`, import.meta.url), 'utf8')) as Record<string, unknown>;
    v = ResponseValidator.create(doc);
    validators.set(file, v);
  }
  return v;
}

/**
 * Runs a handler and renders a thrown AppError as the pipeline does ({error, message,
 * details}); the reply must match openapi/ for its operation and status.
 */
export async function call(operationId: string, handler: Handler, req: HandlerRequest, ctx: HandlerContext): Promise<Reply> {
  let reply: Reply;
  try {
    reply = await handler(req, ctx);
  } catch (e) {
    if (!(e instanceof AppError)) throw e;
    reply = { status: e.status, body: { error: e.code, message: e.message, ...(e.details === undefined ? {} : { details: e.details }) } };
  }
  const problem = (await validatorFor(operationId)).check(operationId, reply);
  expect(problem?.message, 'reply conforms to openapi/').to.equal(undefined);
  return reply;
}
