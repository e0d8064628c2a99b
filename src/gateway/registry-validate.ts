/**
 * Validation of application server registrations (spec section 7: servers are embedded or
 * application servers proxied to external services with a connection id, PCID). Rules the
 * spec leaves open are ours and are written into openapi/management.yaml.
 */
import { SERVICE_KEY_PATTERN } from '../connections/index.js';
import { AppError } from '../errors/index.js';
import type { OutboundPolicy } from '../kernel/outbound.js';

/** Paths of the embedded servers (spec sections 7, 8, 9, 11, 12); never registrable. */
export const EMBEDDED_PATHS: readonly string[] = [
  'mcp',
  'svc-sidekick',
  'gateway',
  'agent-management',
  'browser-automation',
];
export const SERVER_PATH_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;
const HEADER_NAME_PATTERN = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;

export type McpUpstream = { type: 'mcp'; url: string; transport: 'streamable-http' | 'sse' };
export type OpenapiUpstream = { type: 'openapi'; baseUrl: string; document: Record<string, unknown> };
/** The coding-agent application-server template (spec section 13): one launch tool, `POST <baseUrl>/v0/agents`. */
export type CodingAgentUpstream = { type: 'coding-agent'; baseUrl: string };
export type Upstream = McpUpstream | OpenapiUpstream | CodingAgentUpstream;
export type AuthScheme = 'bearer' | 'header' | 'basic' | 'none';
export interface UpstreamAuth {
  scheme: AuthScheme;
  /** Header carrying the connection secret; only (and always) with scheme `header`. */
  headerName?: string;
}

const invalid = (message: string, field: string) =>
  new AppError('ERR_REQUEST_INVALID', { message, details: { field } });
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function httpUrl(v: unknown, field: string): string {
  try {
    if (typeof v !== 'string') throw new Error('not a string');
    const u = new URL(v);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
    return v;
  } catch {
    throw invalid(`${field} must be an absolute http(s) URL`, field);
  }
}

export function checkPath(path: unknown, field = 'path'): string {
  if (typeof path !== 'string' || !SERVER_PATH_PATTERN.test(path)) {
    throw invalid(`${field} must match ^[a-z0-9][a-z0-9-]{0,62}$`, field);
  }
  if (EMBEDDED_PATHS.includes(path)) {
    throw invalid(`${field} "${path}" is reserved for an embedded server`, field);
  }
  return path;
}

export function checkName(v: unknown): void {
  if (typeof v !== 'string' || v.trim() === '' || v.length > 200)
    throw invalid('name must be 1 to 200 characters', 'name');
}

export function checkDescription(v: unknown): void {
  if (v !== null && (typeof v !== 'string' || v.length > 2000))
    throw invalid('description must be a string of at most 2000 characters', 'description');
}

export function checkServiceKey(v: unknown): void {
  if (typeof v !== 'string' || !SERVICE_KEY_PATTERN.test(v)) {
    throw invalid('service_key must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$', 'service_key');
  }
}

export function checkUpstream(v: unknown): Upstream {
  if (!isObject(v)) throw invalid('upstream must be an object', 'upstream');
  if (v.type === 'mcp') {
    if (v.transport !== 'streamable-http' && v.transport !== 'sse') {
      throw invalid('upstream.transport must be streamable-http or sse', 'upstream.transport');
    }
    return { type: 'mcp', url: httpUrl(v.url, 'upstream.url'), transport: v.transport };
  }
  if (v.type === 'openapi') {
    const doc = v.document;
    if (
      !isObject(doc) ||
      typeof doc.openapi !== 'string' ||
      !/^3\.[01]\.\d+$/.test(doc.openapi) ||
      !isObject(doc.info)
    ) {
      throw invalid('upstream.document must be an OpenAPI 3.0 or 3.1 document (openapi, info)', 'upstream.document');
    }
    return { type: 'openapi', baseUrl: httpUrl(v.baseUrl, 'upstream.baseUrl'), document: doc };
  }
  if (v.type === 'coding-agent') {
    return { type: 'coding-agent', baseUrl: httpUrl(v.baseUrl, 'upstream.baseUrl') };
  }
  throw invalid('upstream.type must be mcp, openapi or coding-agent', 'upstream.type');
}

export function checkAuth(v: unknown): UpstreamAuth {
  if (!isObject(v)) throw invalid('auth must be an object', 'auth');
  const scheme = v.scheme;
  if (scheme !== 'bearer' && scheme !== 'header' && scheme !== 'basic' && scheme !== 'none') {
    throw invalid('auth.scheme must be bearer, header, basic or none', 'auth.scheme');
  }
  if (scheme === 'header') {
    if (typeof v.headerName !== 'string' || !HEADER_NAME_PATTERN.test(v.headerName)) {
      throw invalid('auth.headerName (an HTTP header name) is required with scheme header', 'auth.headerName');
    }
    return { scheme, headerName: v.headerName };
  }
  if (v.headerName !== undefined)
    throw invalid('auth.headerName is only allowed with scheme header', 'auth.headerName');
  return { scheme };
}

/** The field of an upstream that holds the URL the gateway calls. */
function urlField(u: Upstream): { field: 'url' | 'baseUrl'; url: string } {
  return u.type === 'mcp' ? { field: 'url', url: u.url } : { field: 'baseUrl', url: u.baseUrl };
}

/**
 * The outbound policy's judgement of an upstream at registration (src/kernel/outbound.ts
 * registrationRefusal; the rules are written on createAppServer in openapi/management.yaml).
 * A refused address is a 400 with the reason, in the shape of the pipeline's validation
 * failures (`details: [{where, path, message}]`, as trigger URLs are refused); a malformed
 * upstream gets checkUpstream's error. Connect time checks again, on the address connected to.
 */
export async function checkUpstreamAddress(v: unknown, outbound: OutboundPolicy): Promise<void> {
  const { field, url } = urlField(checkUpstream(v));
  const refusal = await outbound.registrationRefusal(new URL(url));
  if (!refusal) return;
  const message = `upstream.${field} is refused: ${refusal}`;
  throw new AppError('ERR_REQUEST_INVALID', {
    message,
    details: [{ where: 'body', path: `/upstream/${field}`, message }],
  });
}
