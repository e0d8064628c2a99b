/**
 * The contract test: every operation in openapi/ has a handler and an HTTP test, documents its
 * answers with examples, and every list accepts its own example cursor.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { operations, operationIds, type OperationId } from '../../generated/openapi/operations.js';
import { allHandlers } from '../../src/app.js';
import { startTestServer, createTestOrg, call, type TestServer, type TestOrg } from '../helpers/server.js';
import { listTestFiles } from '../helpers/files.js';
import { createWorkflow } from '../../src/engine/index.js';
import { createCollection } from '../../src/events/index.js';
import { demoWorkflow } from '../../src/bootstrap/demo-workflow.js';
import { makeQueue, uploadCsv } from '../helpers/queues.js';

type Json = Record<string, any>;
const bundle = JSON.parse(
  readFileSync(new URL('../../generated/openapi/switchyard.json', import.meta.url), 'utf8'),
) as Json;

function operationObject(id: OperationId): Json {
  const meta = operations[id];
  return bundle.paths[meta.path][meta.method] as Json;
}

function resolve(obj: Json): Json {
  if (obj && typeof obj.$ref === 'string') {
    const parts = (obj.$ref as string).replace(/^#\//, '').split('/');
    return parts.reduce((o: Json, k) => o[k], bundle);
  }
  return obj;
}

function exampleOf(holder: Json | undefined): unknown {
  if (!holder) return undefined;
  if (holder.example !== undefined) return holder.example;
  const first = holder.examples && Object.values(holder.examples as Json)[0];
  if (first !== undefined) return resolve(first as Json).value;
  const schema = holder.schema ? resolve(holder.schema) : undefined;
  if (schema?.examples?.[0] !== undefined) return schema.examples[0];
  if (schema?.example !== undefined) return schema.example;
  return undefined;
}

/** A request built from the operation's own examples, so it passes validation and reaches the handler. */
function exampleRequest(
  id: OperationId,
  org: TestOrg,
): { method: string; url: string; headers: Record<string, string>; body?: string | Uint8Array } {
  const meta = operations[id];
  const op = operationObject(id);
  let url: string = meta.path;
  const query = new URLSearchParams();
  const headers: Record<string, string> = {};
  const pathItem = bundle.paths[meta.path] as Json;
  for (const p of [...(pathItem.parameters ?? []), ...(op.parameters ?? [])].map((x: Json) => resolve(x))) {
    const value = exampleOf(p) ?? (p.schema && resolve(p.schema).type === 'integer' ? 1 : 'example');
    if (p.in === 'path') url = url.replace(`{${p.name}}`, encodeURIComponent(String(value)));
    else if (p.in === 'query' && p.required) query.set(p.name, String(value));
    else if (p.in === 'header' && p.required) headers[p.name] = String(value);
  }
  if ((meta.security as readonly string[]).includes('bearerAuth')) headers.authorization = `Bearer ${org.token}`;
  let body: string | Uint8Array | undefined;
  const content = (op.requestBody?.content ?? {}) as Json;
  const type = Object.keys(content)[0];
  if (type) {
    headers['content-type'] = type === 'multipart/form-data' ? 'multipart/form-data; boundary=x' : type;
    const example = exampleOf(content[type]);
    if (type === 'application/json') body = JSON.stringify(example ?? {});
    else if (type === 'application/x-www-form-urlencoded')
      body = new URLSearchParams((example ?? {}) as Record<string, string>).toString();
    else if (type === 'multipart/form-data')
      body = '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nb\r\n--x--\r\n';
    else body = typeof example === 'string' ? example : 'a,b\n1,2\n';
  }
  const qs = query.toString();
  return { method: meta.method.toUpperCase(), url: qs ? `${url}?${qs}` : url, headers, body };
}

describe('contract: operations, handlers and tests', () => {
  it('every operation has a handler, and every handler an operation', () => {
    const handlers = allHandlers();
    expect(Object.keys(handlers).sort()).to.deep.equal([...operationIds].sort());
    for (const id of operationIds) expect(handlers[id], id).to.be.a('function');
  });

  it('every implemented operation is exercised by at least one HTTP test', () => {
    const sources = listTestFiles()
      .filter((f) => !f.endsWith(path.join('contract', 'operations.test.ts')))
      .map((f) => readFileSync(f, 'utf8'))
      .join('\n');
    const untested = operationIds.filter((id) => !sources.includes(`op:${id}`));
    expect(untested, 'operations without a test tagged op:<operationId>').to.deep.equal([]);
  });

  it('every operation documents a summary, tags, a 4xx or 5xx answer and its examples', () => {
    for (const id of operationIds) {
      const op = operationObject(id);
      expect(op.summary, `${id} summary`).to.be.a('string').and.not.equal('');
      expect(op.tags, `${id} tags`).to.be.an('array').that.is.not.empty;
      const codes = Object.keys(op.responses);
      // Liveness has no failure answer: a process that cannot answer is not alive.
      if (id !== 'getHealth')
        expect(
          codes.some((c) => /^[45]/.test(c)),
          `${id} documents an error response`,
        ).to.equal(true);
      for (const [code, r] of Object.entries(op.responses as Json)) {
        for (const [type, media] of Object.entries((resolve(r as Json).content ?? {}) as Json)) {
          if (type.includes('json'))
            expect(exampleOf(media as Json), `${id} ${code} ${type} example`).to.not.equal(undefined);
        }
      }
    }
  });

  describe('every example cursor is accepted by its own list (sqlite)', () => {
    let server: TestServer;
    let org: TestOrg;
    let automationId: string;
    let collectionId: string;
    let queueId: string;
    let batchId: string;
    before(async () => {
      server = await startTestServer('sqlite');
      org = await createTestOrg(server);
      ({ automationId } = await createWorkflow(server.app.services.db, org.orgId, demoWorkflow));
      ({ id: collectionId } = await createCollection(server.app.services.db, org.orgId, {
        name: 'Contract',
        type: 'structured_datastore',
      }));
      const trigger = await call(server.baseUrl, 'POST', '/v1/triggers', {
        token: org.token,
        body: { automationId, kind: 'api' },
      });
      expect(trigger.status, trigger.text).to.equal(201);
      queueId = (await makeQueue(server, org, { name: 'Contract', triggerId: trigger.body.triggerId, paused: true }))
        .id;
      const csvKey = await uploadCsv(server, org, queueId, 'name\nAda\n');
      const batch = await call(server.baseUrl, 'POST', `/api/queues/${queueId}/items/csv`, {
        token: org.token,
        body: { csvKey, triggerId: trigger.body.triggerId },
      });
      expect(batch.status, batch.text).to.equal(202);
      batchId = batch.body.batchId;
    });
    after(async () => server.close());
    afterEach(() => server.assertResponsesValid());

    const lists = operationIds.filter((id) =>
      ((operationObject(id).parameters ?? []) as Json[]).some((p) => resolve(p).name === 'cursor'),
    );
    it('the bundle has paginated lists', () => expect(lists.length).to.be.greaterThan(5));
    for (const id of lists) {
      it(`${id}: its documented cursor example pages instead of answering 400`, async () => {
        const cursor = exampleOf(
          ((operationObject(id).parameters ?? []) as Json[]).map(resolve).find((p) => p.name === 'cursor'),
        );
        expect(cursor, `${id} documents a cursor example`).to.be.a('string');
        const req = exampleRequest(id, org);
        const url = req.url
          .replace(
            encodeURIComponent(String(exampleOf(resolve({ $ref: '#/components/parameters/WorkflowIdParam' })))),
            automationId,
          )
          .replace(
            encodeURIComponent(String(exampleOf(resolve({ $ref: '#/components/parameters/CollectionIdParam' })))),
            collectionId,
          )
          .replace(
            encodeURIComponent(String(exampleOf(resolve({ $ref: '#/components/parameters/QueueIdParam' })))),
            queueId,
          )
          .replace(
            encodeURIComponent(String(exampleOf(resolve({ $ref: '#/components/parameters/QueueIdPath' })))),
            queueId,
          )
          .replace(
            encodeURIComponent(String(exampleOf(resolve({ $ref: '#/components/parameters/QueueBatchIdPath' })))),
            batchId,
          );
        const res = await call(
          server.baseUrl,
          'GET',
          `${url}${url.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(String(cursor))}`,
          { headers: req.headers },
        );
        expect(res.status, `${id}: ${res.text}`).to.equal(200);
        expect(res.body).to.have.property('items').that.is.an('array');
      });
    }
  });
});
