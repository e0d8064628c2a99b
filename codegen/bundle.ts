import path from 'node:path';
import { ROOT, listFiles, readYamlOrJson, jsonEqual, rel } from './lib.js';

type Json = Record<string, unknown>;
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/**
 * Merges the standalone OpenAPI 3.1 documents in openapi/ into one bundle. Paths must not
 * collide; same-named components must be identical (DESIGN.md section 2).
 */
export function bundleOpenapi(): Json {
  const files = listFiles(path.join(ROOT, 'openapi'), (f) => /\.(ya?ml|json)$/.test(f));
  if (files.length === 0) throw new Error('openapi/ holds no documents');
  const bundle: Json = {
    openapi: '3.1.0',
    info: {
      title: 'Switchyard API',
      version: '1.0.0',
      description:
        'Bundle of every Switchyard HTTP surface (generated from openapi/*.yaml; DO NOT EDIT — regenerate with `npm run codegen`). ' +
        'Workflow triggers and run polling, agent API channel, tokens, connections, resources and events, queues, run files, and the /v1 management API.',
      license: { name: 'UNLICENSED', identifier: 'UNLICENSED' },
    },
    servers: [{ url: 'http://localhost:8080', description: 'Default single-port deployment' }],
    tags: [] as Json[],
    paths: {} as Json,
    components: {} as Record<string, Json>,
  };
  const tags = bundle.tags as Json[];
  const paths = bundle.paths as Json;
  const components = bundle.components as Record<string, Json>;
  const operationIds = new Map<string, string>();

  for (const file of files) {
    const doc = readYamlOrJson(file) as Json;
    const source = rel(file);
    if (doc.openapi !== '3.1.0') throw new Error(`${source}: openapi must be 3.1.0`);
    for (const tag of (doc.tags as Json[] | undefined) ?? []) {
      const existing = tags.find((t) => t.name === tag.name);
      if (!existing) tags.push(tag);
    }
    for (const [p, item] of Object.entries((doc.paths as Json | undefined) ?? {})) {
      if (paths[p]) throw new Error(`${source}: path ${p} is already defined by another document`);
      const pathItem = structuredClone(item) as Json;
      for (const m of METHODS) {
        const op = pathItem[m] as Json | undefined;
        if (!op) continue;
        const id = op.operationId as string | undefined;
        if (!id) throw new Error(`${source}: ${m.toUpperCase()} ${p} has no operationId`);
        if (operationIds.has(id)) throw new Error(`${source}: operationId ${id} also in ${operationIds.get(id)}`);
        operationIds.set(id, source);
        op['x-source'] = source;
        if (op.security === undefined && doc.security !== undefined) op.security = doc.security;
      }
      paths[p] = pathItem;
    }
    for (const [kind, entries] of Object.entries((doc.components as Record<string, Json> | undefined) ?? {})) {
      components[kind] ??= {};
      for (const [name, def] of Object.entries(entries)) {
        const existing = components[kind][name];
        if (existing !== undefined && !jsonEqual(existing, def)) {
          throw new Error(`${source}: components.${kind}.${name} differs from the definition in another document`);
        }
        components[kind][name] = def;
      }
    }
  }
  tags.sort((a, b) => String(a.name).localeCompare(String(b.name)));
  for (const kind of Object.keys(components)) components[kind] = sortKeys(components[kind]!);
  bundle.paths = sortKeys(paths);
  bundle.components = sortKeys(components);
  return bundle;
}

function sortKeys<T extends Json>(o: T): T {
  return Object.fromEntries(
    Object.keys(o)
      .sort()
      .map((k) => [k, o[k]]),
  ) as T;
}

export interface OperationInfo {
  operationId: string;
  method: (typeof METHODS)[number];
  path: string;
  expressPath: string;
  security: string[];
  requestContentTypes: string[];
  requestBodyRequired: boolean;
  tags: string[];
  source: string;
}

export function listOperations(bundle: Json): OperationInfo[] {
  const out: OperationInfo[] = [];
  for (const [p, item] of Object.entries(bundle.paths as Json)) {
    for (const m of METHODS) {
      const op = (item as Json)[m] as Json | undefined;
      if (!op) continue;
      const security = ((op.security as Json[] | undefined) ?? []).flatMap((req) => Object.keys(req));
      const body = op.requestBody as Json | undefined;
      out.push({
        operationId: op.operationId as string,
        method: m,
        path: p,
        // express 5 (path-to-regexp 8) parameter syntax; dots in names are literal.
        expressPath: p.replace(/\{([^}]+)\}/g, ':$1'),
        security: [...new Set(security)],
        requestContentTypes: body ? Object.keys((body.content as Json | undefined) ?? {}) : [],
        requestBodyRequired: Boolean(body?.required),
        tags: (op.tags as string[] | undefined) ?? [],
        source: op['x-source'] as string,
      });
    }
  }
  return out.sort((a, b) => a.operationId.localeCompare(b.operationId));
}
