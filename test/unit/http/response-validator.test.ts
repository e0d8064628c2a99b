/**
 * The response check of tests (src/http/response-validator.ts), which compiles each operation's
 * schemas when a reply of it is first checked: a reply must have a documented status (or its
 * `2XX` range or `default`), a documented content type, a JSON body that matches its schema
 * (through `$ref`s, recursive ones included), and every required header; each failure is named
 * and recorded. The service's own bundle dereferences and checks one of its operations.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { ResponseValidator } from '../../../src/http/response-validator.js';

const DOC = {
  openapi: '3.1.0',
  info: { title: 'check', version: '1' },
  paths: {
    '/trees/{id}': {
      get: {
        operationId: 'getTree',
        responses: {
          '200': {
            description: 'a tree',
            headers: { ETag: { required: true, schema: { type: 'string' } } },
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Node' } } },
          },
          '4XX': {
            description: 'an error',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
          },
        },
      },
    },
    '/files/{id}': {
      get: {
        operationId: 'getFile',
        responses: { '200': { description: 'bytes', content: { 'application/*': {} } } },
      },
    },
  },
  components: {
    schemas: {
      Node: {
        type: 'object',
        required: ['name', 'children'],
        additionalProperties: false,
        properties: {
          name: { type: 'string', minLength: 1 },
          children: { type: 'array', items: { $ref: '#/components/schemas/Node' } },
        },
      },
      Error: { type: 'object', required: ['error'], properties: { error: { type: 'string' } } },
    },
  },
};

const tree = { name: 'root', children: [{ name: 'leaf', children: [] }] };

describe('response check of tests (compiled per operation when first checked)', () => {
  it('passes a documented reply, through a recursive $ref, and a status of a documented range', async () => {
    const v = await ResponseValidator.create(DOC);
    expect(v.check('getTree', { status: 200, body: tree, headers: { etag: '"1"' } })).to.equal(undefined);
    expect(v.check('getTree', { status: 404, body: { error: 'not_found' } })).to.equal(undefined);
    expect(v.check('getFile', { status: 200, contentType: 'application/pdf', stream: true } as never)).to.equal(
      undefined,
    );
    expect(v.failures).to.deep.equal([]);
  });

  it('names and records each failure: undocumented status, body against its schema deep in the recursion, missing header, content type', async () => {
    const v = await ResponseValidator.create(DOC);
    const deep = { name: 'root', children: [{ name: 'leaf', children: [{ name: '', children: [] }] }] };
    const bodyProblem = v.check('getTree', { status: 200, body: deep, headers: { ETag: '"1"' } });
    expect(bodyProblem?.message).to.match(/^Response of getTree \(200\) breaks the OpenAPI document: /);
    expect(JSON.stringify(bodyProblem?.problems)).to.include('/children/0/children/0/name');
    expect(v.check('getTree', { status: 500, body: { error: 'x' } })?.problems).to.deep.equal([
      'status 500 is not documented',
    ]);
    expect(v.check('getTree', { status: 200, body: tree })?.problems).to.deep.equal(['required header ETag missing']);
    expect(v.check('getTree', { status: 404, body: '<p>gone</p>', contentType: 'text/html' })?.problems).to.deep.equal([
      'content type text/html is not documented for 404',
    ]);
    expect(v.check('getFile', { status: 200, contentType: 'text/plain', body: 'x' })?.problems).to.deep.equal([
      'content type text/plain is not documented for 200',
    ]);
    expect(v.failures.map((f) => `${f.operationId} ${f.status}`)).to.deep.equal([
      'getTree 200',
      'getTree 500',
      'getTree 200',
      'getTree 404',
      'getFile 200',
    ]);
  });

  it("checks replies of the service's own bundle", async () => {
    const bundle = JSON.parse(
      readFileSync(new URL('../../../generated/openapi/switchyard.json', import.meta.url), 'utf8'),
    ) as Record<string, unknown>;
    const v = await ResponseValidator.create(bundle);
    expect(v.check('listRuns', { status: 200, body: { items: [], nextCursor: null } })).to.equal(undefined);
    const problem = v.check('listRuns', { status: 200, body: { items: [] } });
    expect(JSON.stringify(problem?.problems)).to.include("must have required property 'nextCursor'");
    const unknown = v.check('listRuns', { status: 418, body: { error: 'teapot', message: 'x' } });
    expect(unknown?.problems).to.deep.equal(['status 418 is not documented']);
  });
});
