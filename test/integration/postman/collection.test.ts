/**
 * Contract checks on the generated Postman collection, without a server: every operation of
 * the bundle has a request placed by codegen/postman-flow.ts, every request is wired the way
 * an imported collection needs (declared variables, token auth, optional parameters off,
 * a test script).
 */
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { flow } from '../../../codegen/postman-flow.js';
import { LEFTOVER_FOLDER } from '../../../codegen/postman.js';
import { postmanEnvironment } from '../../../src/bootstrap/postman-env.js';
import { loadCollection, requestsOf } from './newman.js';

type Json = Record<string, any>;
const bundle = JSON.parse(
  readFileSync(new URL('../../../generated/openapi/switchyard.json', import.meta.url), 'utf8'),
) as Json;
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const operations = Object.entries(bundle.paths as Json).flatMap(([p, item]) =>
  METHODS.filter((m) => item[m]).map((m) => ({
    id: item[m].operationId as string,
    method: m.toUpperCase(),
    path: p,
    bearer: JSON.stringify(item[m].security ?? []).includes('bearerAuth'),
  })),
);
const collection = loadCollection();
const requests = requestsOf(collection);

/** The bundle path a request calls, from its URL (`:name` segments are path parameters). */
const templateOf = (r: Json) =>
  `/${(r.request.url.path as string[]).map((s) => s.replace(/^:(.+)$/, '{$1}')).join('/')}`;
const enabled = (list: Json[] | undefined) => (list ?? []).filter((x) => !x.disabled);

describe('Postman collection: contract with the bundle', () => {
  it('every operation in the bundle has a request (matched by method and path)', () => {
    const called = new Set(requests.map((r) => `${r.request!.method} ${templateOf(r)}`));
    const missing = operations.filter((o) => !called.has(`${o.method} ${o.path}`)).map((o) => o.id);
    expect(missing, 'operations without a request in generated/postman').to.deep.equal([]);
  });

  it('every operation is placed by codegen/postman-flow.ts (none left in the generic folder)', () => {
    const left = requests.filter((r) => r.folder === LEFTOVER_FOLDER).map((r) => r.name);
    expect(left, `add these to codegen/postman-flow.ts and run npm run codegen`).to.deep.equal([]);
    const unknown = flow.flatMap((f) => f.steps.map((s) => s.op)).filter((id) => !operations.some((o) => o.id === id));
    expect(unknown, 'flow steps naming operations the bundle does not have').to.deep.equal([]);
  });

  it('every {{variable}} a request sends is declared on the collection', () => {
    const declared = new Set(collection.variable.map((v) => v.key));
    const used = new Set(
      [
        ...JSON.stringify(requests.map((r) => ({ ...r.request, description: '' }))).matchAll(/\{\{([^{}$][^{}]*)\}\}/g),
      ].map((m) => m[1]!),
    );
    expect([...used].filter((k) => !declared.has(k))).to.deep.equal([]);
  });

  it('the environment written by postman-env fills declared collection variables', () => {
    const declared = new Set(collection.variable.map((v) => v.key));
    const env = postmanEnvironment({
      baseUrl: 'http://x',
      orgId: 'o',
      clientId: 'c',
      clientSecret: 's',
      apiKey: 'k',
      demo: undefined,
    });
    expect(env.values.map((v) => v.key).filter((k) => !declared.has(k))).to.deep.equal([]);
  });

  it('bearer operations inherit the collection token; the others send no Authorization', () => {
    expect(collection.auth).to.deep.equal({
      type: 'bearer',
      bearer: [{ key: 'token', value: '{{accessToken}}', type: 'string' }],
    });
    for (const r of requests) {
      const op = operations.find((o) => o.method === r.request!.method && o.path === templateOf(r))!;
      expect(r.request!.auth, r.name).to.deep.equal(op.bearer ? undefined : { type: 'noauth' });
    }
  });

  it('the pre-request script posts form credentials to /oauth/token, never Basic', () => {
    const script = collection.event.find((e: Json) => e.listen === 'prerequest').script.exec.join('\n') as string;
    expect(script).to.contain("'/oauth/token'").and.contain("mode: 'urlencoded'").and.contain("'scope', value: 'org:'");
    expect(script).not.to.match(/basic/i);
    const token = requests.find((r) => templateOf(r) === '/oauth/token')!;
    expect(enabled(token.request!.header).map((h) => h.key.toLowerCase())).not.to.include('authorization');
    expect(token.request!.body.urlencoded.map((p: Json) => p.key)).to.include.members([
      'client_id',
      'client_secret',
      'grant_type',
      'scope',
    ]);
  });

  it('optional parameters are off: X-Selected-Org, cursor, Idempotency-Key are never sent by default', () => {
    for (const r of requests) {
      const headers = enabled(r.request!.header).map((h) => h.key.toLowerCase());
      const query = enabled(r.request!.url.query).map((q) => q.key);
      if (!/legacy/i.test(r.name)) expect(headers, r.name).not.to.include('x-selected-org');
      expect(headers, r.name).not.to.include('idempotency-key');
      expect(query, r.name).not.to.include('cursor');
    }
  });

  it('every request has a test script asserting its status and, for JSON answers, its schema', () => {
    for (const r of requests) {
      const code = (r.event ?? [])
        .filter((e) => e.listen === 'test')
        .map((e) => e.script.exec.join('\n'))
        .join('\n');
      expect(code, r.name).to.match(/pm\.response\.to\.have\.status\(\d{3}\)/);
      const op = bundle.paths[templateOf(r)][r.request!.method.toLowerCase()];
      const status = /have\.status\((\d{3})\)/.exec(code)![1]!;
      expect(op.responses, `${r.name} expects a documented status`).to.have.property(status);
    }
  });

  it('request names are unique (polling re-runs a request by name)', () => {
    const names = requests.map((r) => r.name);
    expect(names.filter((n, i) => names.indexOf(n) !== i)).to.deep.equal([]);
  });
});
