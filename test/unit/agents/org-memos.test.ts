/**
 * What the agents context memoises from an organisation's own input is memoised per
 * organisation (README "Caches"): compiled output schemas (src/agents/validate.ts) and model
 * provider instances (src/agents/runtime/providers.ts). Another organisation's identical input
 * is a miss; each output schema is compiled alone.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { loadConfig } from '../../../src/config/index.js';
import { resolveModel } from '../../../src/agents/runtime/providers.js';
import { AgentConfigError, checkOutputSchema, outputValidator } from '../../../src/agents/validate.js';

const schema = () => ({ type: 'object', required: ['total'], properties: { total: { type: 'number' } } });

describe('agents: per-organisation memos', () => {
  let dataDir: string;
  before(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-org-memos-'));
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it("output schema validators: the organisation's own copy is a hit, another organisation's a miss", () => {
    const a = outputValidator('org_a', schema());
    expect(outputValidator('org_a', schema())).to.equal(a);
    const b = outputValidator('org_b', schema());
    expect(b).to.not.equal(a);
    expect(outputValidator('org_b', schema())).to.equal(b);
  });

  it("an output schema's $id is not reachable from another organisation's schema, which may use the same $id", () => {
    const id = `https://schemas.example/${Math.random()}`;
    const mine = { $id: id, type: 'object', required: ['salary'] };
    checkOutputSchema(mine);
    expect(outputValidator('org_a', mine)({})).to.equal(false);
    expect(() => checkOutputSchema({ type: 'object', $ref: id }))
      .to.throw(AgentConfigError)
      .with.property('message')
      .that.matches(/can't resolve reference/);
    expect(() => checkOutputSchema({ $id: id, type: 'object' })).to.not.throw();
    expect(outputValidator('org_b', { $id: id, type: 'object' })({})).to.equal(true);
  });

  it("model provider instances: the organisation's own repeat is a hit, another organisation's a miss", () => {
    const models = loadConfig({ DATA_DIR: dataDir, OPENAI_COMPATIBLE_BASE_URL: 'http://127.0.0.1:9/v1' }).models;
    const a = resolveModel(models, 'org_a', 'openai-compatible/llama');
    expect(a.modelId).to.equal('openai-compatible/llama');
    expect(resolveModel(models, 'org_a', 'openai-compatible/llama').model).to.equal(a.model);
    const b = resolveModel(models, 'org_b', 'openai-compatible/llama');
    expect(b.model).to.not.equal(a.model);
    expect(resolveModel(models, 'org_b', 'openai-compatible/llama').model).to.equal(b.model);
  });
});
