import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { canonicalJson, nextStepMap, validateDefinition, type WorkflowDefinition } from '../../../src/engine/index.js';
import { codeStep, definition, expectAppError } from './fixtures.js';

type Detail = { instancePath: string; keyword: string; message: string };

async function details(input: unknown): Promise<Detail[]> {
  const err = await expectAppError(
    Promise.resolve().then(() => validateDefinition(input)),
    'invalid_request',
    400,
  );
  return err.details as Detail[];
}

describe('workflow definition validation (schemas/workflow/definition.schema.json)', () => {
  it('accepts the examples of the canonical schema', () => {
    const schema = JSON.parse(
      readFileSync(new URL('../../../schemas/workflow/definition.schema.json', import.meta.url), 'utf8'),
    ) as { examples: unknown[] };
    expect(schema.examples.length).to.be.greaterThan(0);
    for (const ex of schema.examples) expect(validateDefinition(ex)).to.equal(ex);
  });

  it('rejects a definition without steps', async () => {
    const d = await details({ name: 'x', steps: [] });
    expect(d).to.have.length(1);
    expect(d[0]).to.include({ instancePath: '/steps', keyword: 'minItems' });
  });

  it('rejects a missing steps array and a non-object body', async () => {
    expect((await details({ name: 'x' }))[0]).to.include({ keyword: 'required' });
    expect((await details(null))[0]).to.include({ keyword: 'type' });
  });

  it('reports one enum error for an unknown step type instead of every oneOf branch', async () => {
    const d = await details({ name: 'x', steps: [codeStep('ok'), { type: 'shell', name: 'bad', cmd: 'ls' }] });
    expect(d).to.deep.equal([
      {
        instancePath: '/steps/1/type',
        keyword: 'enum',
        message: 'must be one of code, http, tool, agent',
        params: { allowedValues: ['code', 'http', 'tool', 'agent'] },
      },
    ]);
  });

  it('reports the errors of the branch the step type selects', async () => {
    const d = await details({ name: 'x', steps: [{ type: 'http', name: 'h', request: { method: 'GET' } }] });
    expect(d).to.have.length(1);
    expect(d[0]).to.include({ instancePath: '/steps/0/request', keyword: 'required' });
    const extra = await details({ name: 'x', steps: [{ ...codeStep('c'), shell: true }] });
    expect(extra.map((e) => [e.instancePath, e.keyword])).to.deep.equal([['/steps/0', 'additionalProperties']]);
  });

  it('rejects output.stepIndex beyond the last step (semantic rule)', async () => {
    const d = await details(definition(2, { output: { stepIndex: 2, fileName: 'r.md' } }));
    expect(d).to.have.length(1);
    expect(d[0]).to.include({ instancePath: '/output/stepIndex', keyword: 'stepIndex' });
    expect(
      validateDefinition(definition(2, { output: { stepIndex: 1, fileName: 'r.md' } })).output?.stepIndex,
    ).to.equal(1);
  });

  it('rejects an inputSchema that is no JSON Schema or does not compile, at /inputSchema', async () => {
    const misspelt = await details(
      definition(1, { inputSchema: { type: 'object', properties: { a: { type: 'strin' } } } }),
    );
    expect(misspelt).to.have.length(1);
    expect(misspelt[0]).to.include({ instancePath: '/inputSchema', keyword: 'schema' });
    expect(misspelt[0]!.message).to.match(/^must be a JSON Schema \(2020-12\) that compiles: schema is invalid/);
    const unresolved = await details(definition(1, { inputSchema: { type: 'object', $ref: '#/$defs/missing' } }));
    expect(unresolved[0]).to.include({ instancePath: '/inputSchema', keyword: 'schema' });
    expect(unresolved[0]!.message).to.match(/can't resolve reference #\/\$defs\/missing/);
    const fine = definition(1, {
      inputSchema: { type: 'object', $defs: { n: { type: 'string' } }, properties: { name: { $ref: '#/$defs/n' } } },
    });
    expect(validateDefinition(fine)).to.equal(fine);
  });
});

describe('step versions (nextStepMap)', () => {
  const v1 = definition(3);

  it('starts every step at 1', () => {
    expect(nextStepMap(undefined, v1)).to.deep.equal({ 0: 1, 1: 1, 2: 1 });
  });

  it('bumps only changed steps, keeps others, starts new indexes at 1', () => {
    const prevMap = { 0: 1, 1: 4, 2: 2 };
    const next: WorkflowDefinition = {
      ...v1,
      steps: [v1.steps[0]!, codeStep('changed') as never, v1.steps[2]!, codeStep('new') as never],
    };
    expect(nextStepMap({ definition: v1, stepMap: prevMap }, next)).to.deep.equal({ 0: 1, 1: 5, 2: 2, 3: 1 });
  });

  it('ignores object key order when comparing steps', () => {
    const reordered = {
      ...v1,
      steps: v1.steps.map((s) => Object.fromEntries(Object.entries(s).reverse())),
    } as WorkflowDefinition;
    expect(nextStepMap({ definition: v1, stepMap: { 0: 2, 1: 2, 2: 2 } }, reordered)).to.deep.equal({
      0: 2,
      1: 2,
      2: 2,
    });
    expect(canonicalJson({ b: 1, a: [{ d: 1, c: 2 }] })).to.equal('{"a":[{"c":2,"d":1}],"b":1}');
  });
});
