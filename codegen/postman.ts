/**
 * The Postman collection (DESIGN.md section 2), runnable as imported: collection variables
 * for everything a request uses, a collection pre-request script that fetches and caches
 * the runtime token, bearer auth inherited by bearer operations, requests ordered so ids
 * flow from one to the next (codegen/postman-flow.ts), optional parameters disabled, and a
 * test script on every request that checks the documented status, body schema and headers.
 *
 * openapi-to-postmanv2 supplies what it does well (descriptions, example bodies, saved
 * example responses); URLs, parameters, auth and scripts are built here from the bundle.
 */
import { createRequire } from 'node:module';
import { sha256 } from './lib.js';
import { listOperations, type OperationInfo } from './bundle.js';
import { flow, keyVariables, userVariables, scriptVariables, type FlowStep } from './postman-flow.js';
import { tokenPrerequest, testScript, type ResponseHeaderDoc } from './postman-scripts.js';
import { draft07Schema } from './postman-schema.js';

type Json = Record<string, unknown>;

const require = createRequire(import.meta.url);
const converter = require('openapi-to-postmanv2') as {
  convert: (
    input: { type: 'json'; data: unknown },
    options: Record<string, unknown>,
    cb: (
      err: Error | null,
      result: { result: boolean; reason?: string; output: { type: string; data: unknown }[] },
    ) => void,
  ) => void;
};

export const LEFTOVER_FOLDER = 'Not in the flow yet';

interface Variable {
  key: string;
  value: string;
  type: 'string';
  description: string;
}

/** Collection-wide state while items are built: declared variables, request names. */
class Builder {
  readonly variables = new Map<string, Variable>();
  readonly names = new Set<string>();
  constructor(
    readonly bundle: Json,
    readonly converted: Map<string, Json>,
  ) {}

  declare(key: string, value: string, description: string): void {
    if (!this.variables.has(key)) this.variables.set(key, { key, value, type: 'string', description });
  }
}

/** Postman collection of the whole API, with deterministic ids so codegen:check is stable. */
export async function generatePostman(bundle: Json): Promise<unknown> {
  const b = new Builder(bundle, await convertedItems(bundle));
  for (const v of userVariables) b.declare(v.key, v.key === 'baseUrl' ? 'http://localhost:8080' : '', v.description);
  for (const v of scriptVariables) b.declare(v.key, '', v.description);
  for (const folder of flow)
    for (const step of folder.steps) for (const c of step.captures ?? []) declareCapture(b, c, step);

  const ops = new Map(listOperations(bundle).map((o) => [o.operationId, o]));
  const inFlow = new Set(flow.flatMap((f) => f.steps.map((s) => s.op)));
  const folders = flow.map((f) => ({
    name: f.name,
    description: f.description,
    item: f.steps.filter((s) => ops.has(s.op)).map((s) => buildItem(b, ops.get(s.op)!, s)),
  }));
  const leftovers = [...ops.values()].filter((o) => !inFlow.has(o.operationId));
  if (leftovers.length) {
    folders.push({
      name: LEFTOVER_FOLDER,
      description:
        'Operations codegen/postman-flow.ts does not place yet: generic requests with documented example values.',
      item: leftovers.map((o) => buildItem(b, o, { op: o.operationId })),
    });
  }
  checkDeclared(b, folders);

  const info = bundle.info as Json;
  const collection = {
    info: {
      _postman_id: uuidFrom('collection'),
      name: 'Switchyard API',
      description: `${String(info.description)}\n\n${USAGE}`,
      schema: 'https://schema.getpostman.com/json/collection/v2.1.0/collection.json',
    },
    auth: { type: 'bearer', bearer: [{ key: 'token', value: '{{accessToken}}', type: 'string' }] },
    event: [tokenPrerequest()],
    variable: [...b.variables.values()],
    item: folders,
  };
  return withIds(collection, 'root');
}

const USAGE = [
  'Set up: `npx switchyard postman-env > switchyard.postman_environment.json` on the server (or use',
  'DATA_DIR/postman_environment.json written on first start), import it next to this collection and',
  'select it. The collection pre-request script fetches a runtime token from `/oauth/token` with',
  '`clientId`/`clientSecret`/`orgId` and refreshes it before it expires; trigger calls use `apiKey`.',
  'Run the folders in order: ids created by one request flow into the next. Headless:',
  '`npx newman run switchyard.postman_collection.json -e switchyard.postman_environment.json`.',
].join('\n');

async function convertedItems(bundle: Json): Promise<Map<string, Json>> {
  const result = await new Promise<{ result: boolean; reason?: string; output: { data: unknown }[] }>(
    (resolve, reject) =>
      converter.convert(
        { type: 'json', data: structuredClone(bundle) },
        { folderStrategy: 'Tags', requestParametersResolution: 'Example', exampleParametersResolution: 'Example' },
        (err, res) => (err ? reject(err) : resolve(res)),
      ),
  );
  if (!result.result) throw new Error(`openapi-to-postmanv2: ${result.reason}`);
  const out = new Map<string, Json>();
  const walk = (items: Json[]) => {
    for (const it of items) {
      if (Array.isArray(it.item)) walk(it.item as Json[]);
      else {
        const req = it.request as Json;
        const url = req.url as { path: string[] };
        out.set(`${String(req.method)} /${url.path.join('/')}`, it);
      }
    }
  };
  walk((result.output[0]!.data as Json).item as Json[]);
  return out;
}

function resolve(bundle: Json, node: unknown): Json {
  let n = node as Json;
  while (n && typeof n.$ref === 'string')
    n = (n.$ref as string)
      .slice(2)
      .split('/')
      .reduce<Json>((o, k) => o[k] as Json, bundle);
  return n;
}

function operationObject(b: Builder, op: OperationInfo): { item: Json; op: Json } {
  const item = (b.bundle.paths as Json)[op.path] as Json;
  return { item, op: item[op.method] as Json };
}

function parametersOf(b: Builder, op: OperationInfo): Json[] {
  const { item, op: o } = operationObject(b, op);
  const byKey = new Map<string, Json>();
  for (const p of [...((item.parameters as unknown[]) ?? []), ...((o.parameters as unknown[]) ?? [])].map((x) =>
    resolve(b.bundle, x),
  )) {
    byKey.set(`${String(p.in)}:${String(p.name).toLowerCase()}`, p);
  }
  return [...byKey.values()];
}

function exampleOf(b: Builder, holder: Json): unknown {
  if (holder.example !== undefined) return holder.example;
  const first = holder.examples && Object.values(holder.examples as Json)[0];
  if (first !== undefined) return resolve(b.bundle, first).value;
  const schema = holder.schema ? resolve(b.bundle, holder.schema) : undefined;
  return (schema?.examples as unknown[] | undefined)?.[0] ?? schema?.example;
}

const text = (v: unknown): string => (v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v));

function buildItem(b: Builder, op: OperationInfo, step: FlowStep): Json {
  const { op: o } = operationObject(b, op);
  const name = step.name ?? String(o.summary ?? op.operationId);
  if (b.names.has(name))
    throw new Error(`postman: two requests named "${name}" (names must be unique: polling re-runs a request by name)`);
  b.names.add(name);
  const params = parametersOf(b, op);
  const status = expectedStatus(op, o, step);
  const converted = b.converted.get(`${op.method.toUpperCase()} ${op.path.replace(/\{([^}]+)\}/g, ':$1')}`);
  const body = requestBody(op, step, converted);
  const header = [...headers(b, op, params, step), ...contentHeaders(b, o, status, body)];
  const request: Json = {
    method: op.method.toUpperCase(),
    header,
    url: url(b, op, params, step),
    description: description(o, op, step, status),
  };
  if (body) request.body = body.body;
  if (!op.security.includes('bearerAuth')) request.auth = { type: 'noauth' };
  return {
    name,
    event: [testScript({ operationId: op.operationId, status, ...responseDoc(b, o, status), step })],
    request,
    response: savedExamples(converted),
  };
}

function expectedStatus(op: OperationInfo, o: Json, step: FlowStep): number {
  const documented = Object.keys(o.responses as Json);
  const status = step.expect ?? Number(documented.find((s) => /^2\d\d$/.test(s)));
  if (!documented.includes(String(status)))
    throw new Error(`postman: ${op.operationId} expects ${status}, which the operation does not document`);
  return status;
}

function url(b: Builder, op: OperationInfo, params: Json[], step: FlowStep): Json {
  const variable: Json[] = [];
  const query: Json[] = [];
  for (const p of params) {
    const pname = String(p.name);
    if (p.in === 'path') {
      const value = step.path?.[pname] ?? `{{${pname}}}`;
      declareExample(b, value, p);
      variable.push({ key: pname, value, description: String(p.description ?? '') });
    } else if (p.in === 'query') {
      const schema = resolve(b.bundle, p.schema);
      // A form-exploded object (the trigger inputs) is one query pair per property.
      const pairs: [string, string][] =
        schema.type === 'object' && p.explode !== false
          ? Object.entries((exampleOf(b, p) as Json | undefined) ?? {}).map(([k, v]) => [k, text(v)])
          : [[pname, text(exampleOf(b, p))]];
      for (const [key, example] of pairs) {
        if (step.query?.[key] !== undefined) continue;
        if (p.required) declareExample(b, `{{${key}}}`, p, example);
        query.push({
          key,
          value: p.required ? `{{${key}}}` : example,
          description: String(p.description ?? ''),
          ...(p.required ? {} : { disabled: true }),
        });
      }
    }
  }
  const documentedQuery = new Set(params.filter((p) => p.in === 'query').map((p) => String(p.name)));
  const explodes = params.some((p) => p.in === 'query' && resolve(b.bundle, p.schema).type === 'object');
  const given = Object.entries(step.query ?? {}).map(([key, value]) => {
    if (!documentedQuery.has(key) && !explodes)
      throw new Error(`postman: ${op.operationId} has no query parameter ${key}`);
    const p = params.find((x) => x.in === 'query' && x.name === key);
    if (p) declareExample(b, value, p);
    return { key, value };
  });
  query.unshift(...given);
  for (const k of Object.keys(step.path ?? {})) {
    if (!variable.some((v) => v.key === k)) throw new Error(`postman: ${op.operationId} has no path parameter ${k}`);
  }
  const path = op.path
    .slice(1)
    .split('/')
    .map((s) => s.replace(/^\{([^}]+)\}$/, ':$1'));
  const enabled = query.filter((q) => !q.disabled).map((q) => `${String(q.key)}=${String(q.value)}`);
  return {
    raw: `{{baseUrl}}/${path.join('/')}${enabled.length ? `?${enabled.join('&')}` : ''}`,
    host: ['{{baseUrl}}'],
    path,
    ...(query.length ? { query } : {}),
    ...(variable.length ? { variable } : {}),
  };
}

function headers(b: Builder, op: OperationInfo, params: Json[], step: FlowStep): Json[] {
  const schemes = (b.bundle.components as Json).securitySchemes as Record<string, Json>;
  const keyHeaders = new Map<string, string>();
  for (const s of op.security) {
    const scheme = schemes[s];
    if (scheme?.type !== 'apiKey' || scheme.in !== 'header') continue;
    const keyVar = keyVariables[s] ?? s;
    keyHeaders.set(String(scheme.name).toLowerCase(), keyVar);
    b.declare(keyVar, '', `Key of the ${s} security scheme (${String(scheme.name)} header)`);
  }
  const out: Json[] = [];
  const given = new Map(Object.entries(step.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  for (const p of params.filter((x) => x.in === 'header')) {
    const hname = String(p.name);
    const lower = hname.toLowerCase();
    const keyVar = keyHeaders.get(lower);
    keyHeaders.delete(lower);
    const flowValue = given.get(lower);
    given.delete(lower);
    // Optional headers stay disabled; X-Selected-Org points at {{orgId}} so enabling it just works.
    const value =
      flowValue ?? (keyVar ? `{{${keyVar}}}` : lower === 'x-selected-org' ? '{{orgId}}' : text(exampleOf(b, p)));
    const enabled = flowValue !== undefined || keyVar !== undefined || p.required === true;
    out.push({ key: hname, value, description: String(p.description ?? ''), ...(enabled ? {} : { disabled: true }) });
  }
  for (const [lower, keyVar] of keyHeaders)
    out.push({ key: lower, value: `{{${keyVar}}}`, description: 'Key of the security scheme' });
  if (given.size) throw new Error(`postman: ${op.operationId} documents no header ${[...given.keys()].join(', ')}`);
  return out;
}

interface Body {
  contentType: string;
  body: Json;
}

function requestBody(op: OperationInfo, step: FlowStep, converted: Json | undefined): Body | undefined {
  const check = (t: string) => {
    if (!op.requestContentTypes.includes(t)) throw new Error(`postman: ${op.operationId} does not accept ${t}`);
  };
  if (step.json !== undefined) {
    check('application/json');
    return {
      contentType: 'application/json',
      body: { mode: 'raw', raw: JSON.stringify(step.json, null, 2), options: { raw: { language: 'json' } } },
    };
  }
  if (step.form) {
    check('application/x-www-form-urlencoded');
    return {
      contentType: 'application/x-www-form-urlencoded',
      body: { mode: 'urlencoded', urlencoded: Object.entries(step.form).map(([key, value]) => ({ key, value })) },
    };
  }
  if (step.raw) {
    // A media type's parameters (a multipart boundary) are not part of what the operation lists.
    check(step.raw.contentType.split(';')[0]!.trim());
    return { contentType: step.raw.contentType, body: { mode: 'raw', raw: step.raw.text } };
  }
  const body = (converted?.request as Json | undefined)?.body as Json | undefined;
  if (!body || op.requestContentTypes.length === 0) return undefined;
  const contentType = op.requestContentTypes[0]!;
  // Postman sets the multipart boundary itself; an explicit Content-Type would drop it.
  if (body.mode === 'formdata') return { contentType: '', body };
  return { contentType, body };
}

function contentHeaders(b: Builder, o: Json, status: number, body: Body | undefined): Json[] {
  const out: Json[] = [];
  if (body?.contentType) out.push({ key: 'Content-Type', value: body.contentType });
  const content = resolve(b.bundle, (o.responses as Json)[String(status)]).content as Json | undefined;
  const accept = content ? Object.keys(content)[0] : undefined;
  if (accept) out.push({ key: 'Accept', value: accept });
  return out;
}

function responseDoc(
  b: Builder,
  o: Json,
  status: number,
): { schema: Json | undefined; empty: boolean; headers: ResponseHeaderDoc[] } {
  const res = resolve(b.bundle, (o.responses as Json)[String(status)]);
  const content = res.content as Record<string, Json> | undefined;
  const where = `${String(o.operationId)} ${status}`;
  const json = content?.['application/json'];
  const headers = Object.entries((res.headers as Json | undefined) ?? {}).map(([hname, h]) => {
    const doc = resolve(b.bundle, h);
    return {
      name: hname,
      required: doc.required === true,
      schema: doc.schema ? draft07Schema(b.bundle, doc.schema, `${where} header ${hname}`) : undefined,
    };
  });
  return { schema: json?.schema ? draft07Schema(b.bundle, json.schema, where) : undefined, empty: !content, headers };
}

function description(o: Json, op: OperationInfo, step: FlowStep, status: number): string {
  const parts = [
    `\`${op.method.toUpperCase()} ${op.path}\` — operationId \`${op.operationId}\`; the test script expects ${status}.`,
  ];
  if (step.note) parts.push(step.note);
  parts.push(String(o.description ?? '').trim());
  return parts.join('\n\n');
}

/** Saved example responses (Postman shows them next to the request); their example requests are left out. */
function savedExamples(converted: Json | undefined): Json[] {
  return ((converted?.response as Json[] | undefined) ?? []).map((r) => {
    const { originalRequest: _omit, ...rest } = r;
    return rest;
  });
}

/**
 * A parameter filled by a variable no step captures (the 501 operations have nothing to
 * create ids with) starts with the documented example, so the request is still valid.
 */
function declareExample(b: Builder, value: string, p: Json, example = text(exampleOf(b, p))): void {
  const m = /^\{\{([^{}$]+)\}\}$/.exec(value);
  if (m)
    b.declare(
      m[1]!,
      example,
      `${String(p.in)} parameter ${String(p.name)}: the documented example (no request captures it)`,
    );
}

function declareCapture(b: Builder, c: NonNullable<FlowStep['captures']>[number], step: FlowStep): void {
  const by = step.name ?? step.op;
  if ('signedUrl' in c) {
    for (const v of Object.values(c.vars)) b.declare(v, '', `Captured from ${c.signedUrl} by "${by}"`);
  } else b.declare(c.var, '', `Captured by "${by}"`);
}

/** Every `{{name}}` a request sends must be a declared variable (Postman dynamic `{{$…}}` aside; descriptions are prose). */
function checkDeclared(b: Builder, folders: { item: Json[] }[]): void {
  const sent = folders.flatMap((f) => f.item.map((i) => ({ ...(i.request as Json), description: undefined })));
  const used = new Set([...JSON.stringify(sent).matchAll(/\{\{([^{}$][^{}]*)\}\}/g)].map((m) => m[1]!));
  const missing = [...used].filter((k) => !b.variables.has(k));
  if (missing.length) throw new Error(`postman: variables used but not declared: ${missing.join(', ')}`);
}

/** Deterministic ids from the position in the collection (Postman needs ids; random ones break codegen:check). */
function withIds(value: unknown, trail: string): unknown {
  if (Array.isArray(value)) return value.map((v, i) => withIds(v, `${trail}/${i}`));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    const o = value as Json;
    if (trail !== 'root' && ('request' in o || 'item' in o)) out.id = uuidFrom(trail);
    for (const [k, v] of Object.entries(o)) if (k !== 'id') out[k] = withIds(v, `${trail}/${k}`);
    return out;
  }
  return value;
}

function uuidFrom(trail: string): string {
  const h = sha256(trail);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}
