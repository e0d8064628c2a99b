/**
 * The coding-agent launch tool (spec section 13), an application-server template: upstream
 * `{type: 'coding-agent', baseUrl}`. Input is checked with the generated validator of
 * schemas/tools/coding-agent (byte limits included through x-maxBytes), then sent as
 * `POST <baseUrl>/v0/agents`. The request/response mapping is ours and documented on
 * AppServerCodingAgentUpstream in openapi/management.yaml.
 */
import type { ErrorObject } from 'ajv';
import { CodingAgentLaunchInput as validateLaunch } from '../../../generated/validators/schemas.js';
import { toolServers } from '../../../generated/tools/servers.js';
import type { CodingAgentLaunchInput } from '../../../generated/schemas/types.js';
import { GatewayError, RPC, jsonResult, type CallResult, type JsonSchemaObject, type ToolDef } from '../types.js';
import type { Deadline } from './deadline.js';
import { errorResult, send, toResult, type HttpUpstream } from './http-call.js';

type Json = Record<string, unknown>;
const template = toolServers.find((s) => s.path === 'coding-agent')!;
const launch = template.tools[0]!;
export const CODING_AGENT_TOOL = launch.name;

export const codingAgentTool: ToolDef = {
  name: launch.name,
  title: launch.title,
  description: launch.description,
  inputSchema: launch.inputSchema as unknown as JsonSchemaObject,
  outputSchema: launch.outputSchema as unknown as JsonSchemaObject,
  annotations: { ...launch.annotations },
};

/** Byte limits as the schema carries them (x-maxBytes), for messages. */
const envSchema = (
  launch.inputSchema as unknown as { properties: { envVars: { propertyNames: Json; additionalProperties: Json } } }
).properties.envVars;
const NAME_BYTES = envSchema.propertyNames['x-maxBytes'] as number;
const VALUE_BYTES = envSchema.additionalProperties['x-maxBytes'] as number;
const IMAGE_PATH = /^prompt\.images\[\d+\]$/;

/** "/prompt/images/0" → "prompt.images[0]". */
function fieldOf(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .reduce((acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part), '');
}

const clip = (s: string) => JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s);

function describeError(errors: ErrorObject[]): { field: string; message: string } {
  const anyOf = errors.find((e) => e.keyword === 'anyOf' && /^\/repos\/\d+$/.test(e.instancePath));
  if (anyOf) {
    const field = fieldOf(anyOf.instancePath);
    return { field: `${field}.url`, message: `${field}.url is required unless ${field}.prUrl is given` };
  }
  const e = errors.find((x) => x.keyword !== 'propertyNames') ?? errors[0]!;
  const field = fieldOf(e.instancePath);
  const name = (e as ErrorObject & { propertyName?: string }).propertyName;
  if (name !== undefined) {
    const where = `${field} name ${clip(name)}`;
    if (e.keyword === 'x-maxBytes') return { field, message: `${where} is longer than ${NAME_BYTES} bytes` };
    if (e.keyword === 'not') return { field, message: `${where} must not start with CURSOR_` };
    if (e.keyword === 'minLength') return { field, message: `${field} names must not be empty` };
    return { field, message: `${where} ${e.message ?? 'is invalid'}` };
  }
  const p = e.params as Json;
  switch (e.keyword) {
    case 'x-maxBytes':
      return { field, message: `${field} is longer than ${VALUE_BYTES} bytes` };
    case 'maxItems':
      return { field, message: `${field} must have at most ${String(p.limit)} item${p.limit === 1 ? '' : 's'}` };
    case 'minItems':
      return { field, message: `${field} must have at least ${String(p.limit)} item${p.limit === 1 ? '' : 's'}` };
    case 'minLength':
      return { field, message: `${field} must not be empty` };
    case 'maxLength':
      if (IMAGE_PATH.test(field))
        return { field, message: `${field} is larger than 15 MiB (${String(p.limit)} base64 characters)` };
      return { field, message: `${field} must be at most ${String(p.limit)} characters` };
    case 'pattern':
      if (IMAGE_PATH.test(field)) return { field, message: `${field} must be standard base64` };
      break;
    case 'required': {
      const missing = `${field ? `${field}.` : ''}${String(p.missingProperty)}`;
      return { field: missing, message: `${missing} is required` };
    }
    case 'additionalProperties': {
      const extra = `${field ? `${field}.` : ''}${String(p.additionalProperty)}`;
      return { field: extra, message: `${extra} is not a known argument` };
    }
    case 'format':
      return { field, message: `${field} must be a ${String(p.format).toUpperCase()}` };
  }
  return { field, message: `${field || 'arguments'} ${e.message ?? 'is invalid'}` };
}

/** Validates the launch input; GatewayError(-32000) naming the field otherwise. */
export function checkLaunchInput(input: Json): CodingAgentLaunchInput {
  if (!validateLaunch(input)) {
    const { field, message } = describeError(validateLaunch.errors ?? []);
    throw new GatewayError(RPC.SERVER, `invalid arguments: ${message}`, { field });
  }
  const images = (input as unknown as CodingAgentLaunchInput).prompt.images ?? [];
  images.forEach((img, i) => {
    // The schema checks alphabet and size; padded base64 also has a length that is a multiple of 4.
    if (img.length % 4 !== 0) {
      throw new GatewayError(RPC.SERVER, `invalid arguments: prompt.images[${i}] must be standard padded base64`, {
        field: `prompt.images[${i}]`,
      });
    }
  });
  return input as unknown as CodingAgentLaunchInput;
}

/** The upstream request body (mapping documented in openapi/management.yaml). */
export function launchBody(input: CodingAgentLaunchInput): Json {
  const repo = input.repos[0] as { url?: string; startingRef?: string; prUrl?: string };
  const prompt: Json = { text: input.prompt.text };
  if (input.prompt.images?.length) prompt.images = input.prompt.images.map((data) => ({ data }));
  const body: Json = {
    prompt,
    // spec section 13: with prUrl, url and startingRef are ignored.
    source: repo.prUrl
      ? { prUrl: repo.prUrl }
      : { repository: repo.url, ...(repo.startingRef ? { ref: repo.startingRef } : {}) },
  };
  if (input.model) {
    body.model = input.model.id;
    if (input.model.params) body.modelParams = input.model.params;
  }
  const target: Json = {};
  if (input.autoCreatePR !== undefined) target.autoCreatePr = input.autoCreatePR;
  if (input.branchName !== undefined) target.branchName = input.branchName;
  if (repo.prUrl && input.autoGenerateBranch !== undefined) target.autoBranch = input.autoGenerateBranch;
  if (input.autoCreatePR === true && input.skipReviewerRequest !== undefined)
    target.skipReviewerRequest = input.skipReviewerRequest;
  if (Object.keys(target).length) body.target = target;
  if (input.envVars && Object.keys(input.envVars).length) body.envVars = input.envVars;
  return body;
}

function launchResult(v: Json): CallResult {
  const agentId = typeof v.id === 'string' ? v.id : typeof v.agentId === 'string' ? v.agentId : undefined;
  const status = typeof v.status === 'string' ? v.status : undefined;
  if (!agentId || !status)
    return errorResult(undefined, 'the coding-agent service answered without an agent id and status');
  const target = v.target as Json | undefined;
  const url = typeof v.url === 'string' ? v.url : typeof target?.url === 'string' ? target.url : undefined;
  return jsonResult({ ...v, agentId, status, ...(url ? { url } : {}) });
}

export async function launchAgent(
  upstream: HttpUpstream,
  input: CodingAgentLaunchInput,
  deadline: Deadline,
): Promise<CallResult> {
  const url = `${upstream.baseUrl.replace(/\/+$/, '')}/v0/agents`;
  const headers = { accept: 'application/json', 'content-type': 'application/json', ...upstream.credential };
  const answer = await send(
    upstream.fetch,
    url,
    { method: 'POST', headers, body: JSON.stringify(launchBody(input)) },
    deadline,
  );
  return toResult(answer, launchResult);
}
