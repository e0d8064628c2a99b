/**
 * An agent's output schema on the wire (src/agents/runtime/turn.ts, providers.ts): the real AI
 * SDK providers, built from the configuration as the service builds them, talking to the
 * scripted model server on loopback. openai-compatible sends the schema as the native
 * `response_format: {type: "json_schema"}` on every model call of the turn;
 * OPENAI_COMPATIBLE_STRUCTURED_OUTPUTS=false and the anthropic provider leave it to the prompt.
 * Either way the answer is validated, with exactly one corrective retry.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { jsonSchema, tool, type ToolSet } from 'ai';
import { loadConfig, type ModelConfig } from '../../../src/config/index.js';
import type { AgentConfig } from '../../../src/agents/agents.js';
import { resolveModel } from '../../../src/agents/runtime/providers.js';
import { runTurn, TurnFailure, type TurnResult } from '../../../src/agents/runtime/turn.js';
import { reply, startModelServer, type ModelServer } from '../../helpers/model-server.js';

const SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  required: ['invoice', 'overdue'],
  properties: {
    invoice: { type: 'string', pattern: '^INV-' },
    overdue: { type: 'boolean' },
    note: { type: 'string' },
  },
  additionalProperties: false,
};
const { $schema: _dialect, ...SENT_SCHEMA } = SCHEMA;
const SCHEMA_IN_PROMPT = JSON.stringify(SCHEMA);

describe('agents: structured output on the wire', function () {
  this.timeout(30_000);
  let model: ModelServer;
  let dataDir: string;
  const lookups: string[] = [];
  const tools: ToolSet = {
    invoice_lookup: tool({
      description: 'Look an invoice up',
      inputSchema: jsonSchema<{ id: string }>({
        type: 'object',
        properties: { id: { type: 'string' } },
        required: ['id'],
      }),
      execute: async ({ id }) => {
        lookups.push(id);
        return { id, dueDate: '2026-01-31', paid: false };
      },
    }),
  };

  /** The models part of the configuration, read from the environment as the service reads it. */
  const models = (env: Record<string, string> = {}): ModelConfig =>
    loadConfig({
      DATA_DIR: dataDir,
      OPENAI_COMPATIBLE_BASE_URL: model.baseUrl,
      ANTHROPIC_API_KEY: 'sk-ant-test',
      ANTHROPIC_BASE_URL: model.baseUrl,
      ...env,
    }).models;
  const agent = (outputSchema: Record<string, unknown> | null = SCHEMA): AgentConfig => ({
    name: 'Extractor',
    description: '',
    instructions: 'Extract the invoice.',
    servers: [],
    model: null,
    outputSchema,
    introMessage: null,
  });
  const turn = (
    config: ModelConfig,
    modelId: string,
    opts: { agent?: AgentConfig; stream?: boolean } = {},
  ): Promise<TurnResult> => {
    const resolved = resolveModel(config, 'org_test', modelId);
    return runTurn({
      orgId: 'org_test',
      model: resolved.model,
      structuredOutput: resolved.structuredOutput,
      config: opts.agent ?? agent(),
      history: [],
      message: 'Invoice INV-42 is late, is it overdue?',
      tools,
      maxSteps: 3,
      signal: AbortSignal.timeout(20_000),
      onTextDelta: opts.stream ? () => undefined : undefined,
    });
  };
  const systemOf = (body: Record<string, any>): string =>
    typeof body.system === 'string'
      ? body.system
      : Array.isArray(body.system)
        ? body.system.map((b: { text: string }) => b.text).join('\n')
        : body.messages[0].content;

  before(async () => {
    model = await startModelServer();
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-structured-'));
  });
  after(async () => {
    await model?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  beforeEach(() => {
    model.requests.length = 0;
    lookups.length = 0;
  });

  for (const stream of [false, true]) {
    it(`openai-compatible (${stream ? 'streamed' : 'whole'}): every model call carries response_format json_schema with the schema; the output validates`, async () => {
      model.setScript([
        reply.toolCall('invoice_lookup', { id: 'INV-42' }),
        reply.json({ invoice: 'INV-42', overdue: true }),
      ]);
      const result = await turn(models(), 'openai-compatible/scripted', { stream });
      expect(result.output).to.deep.equal({ invoice: 'INV-42', overdue: true });
      expect(JSON.parse(result.reply)).to.deep.equal(result.output);
      expect(lookups).to.deep.equal(['INV-42']);
      expect(model.requests).to.have.length(2);
      for (const { body } of model.requests) {
        expect(body.response_format).to.deep.equal({
          type: 'json_schema',
          json_schema: { name: 'output', schema: SENT_SCHEMA, strict: false },
        });
        // Tools still go with it: the agent may call them before it answers.
        expect(body.tools.map((t: { function: { name: string } }) => t.function.name)).to.deep.equal([
          'invoice_lookup',
        ]);
        // The prompt keeps the instruction, for a server that ignores response_format.
        expect(systemOf(body)).to.include(SCHEMA_IN_PROMPT);
      }
    });
  }

  it('openai-compatible: an invalid answer gets exactly one retry, with the native request again, then invalid_output', async () => {
    model.setScript([reply.json({ invoice: '42', overdue: 'yes' }), reply.json({ invoice: 'INV-42', overdue: false })]);
    const fixed = await turn(models(), 'openai-compatible/scripted');
    expect(fixed.output).to.deep.equal({ invoice: 'INV-42', overdue: false });
    expect(model.requests).to.have.length(2);
    const retry = model.requests[1]!.body;
    expect(retry.response_format.type).to.equal('json_schema');
    expect(retry.messages.at(-1).content).to.match(/not valid against the output schema.*\/invoice must match pattern/);

    model.requests.length = 0;
    model.setScript([reply.text('The invoice is overdue.'), reply.json({ overdue: true })]);
    const failure = await turn(models(), 'openai-compatible/scripted').then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).to.be.instanceOf(TurnFailure);
    expect((failure as TurnFailure).code).to.equal('invalid_output');
    expect((failure as TurnFailure).message).to.match(/after one retry: .*must have required property 'invoice'/);
    expect(model.requests).to.have.length(2);
    expect(model.requests.every((r) => r.body.response_format?.type === 'json_schema')).to.equal(true);
  });

  it('OPENAI_COMPATIBLE_STRUCTURED_OUTPUTS=false: no response_format, the schema goes in the prompt, the output still validates and retries once', async () => {
    const config = models({ OPENAI_COMPATIBLE_STRUCTURED_OUTPUTS: 'false' });
    expect(config.openaiCompatibleStructuredOutputs).to.equal(false);
    model.setScript([reply.text('nope'), reply.text('```json\n{"invoice": "INV-7", "overdue": false}\n```')]);
    const result = await turn(config, 'openai-compatible/scripted');
    expect(result.output).to.deep.equal({ invoice: 'INV-7', overdue: false });
    expect(model.requests).to.have.length(2);
    for (const { body } of model.requests) {
      expect(body).to.not.have.property('response_format');
      expect(systemOf(body)).to.include(SCHEMA_IN_PROMPT);
    }
  });

  it('anthropic: the prompt carries the schema; no output format, no forced JSON tool', async () => {
    model.setScript([reply.json({ invoice: 'INV-9', overdue: true })]);
    const result = await turn(models(), 'anthropic/scripted');
    expect(result.output).to.deep.equal({ invoice: 'INV-9', overdue: true });
    const body = model.requests[0]!.body;
    expect(systemOf(body)).to.include(SCHEMA_IN_PROMPT);
    expect(body).to.not.have.property('output_format');
    expect(body).to.not.have.property('output_config');
    expect(body.tool_choice ?? { type: 'auto' }).to.deep.equal({ type: 'auto' });
    expect(body.tools.map((t: { name: string }) => t.name)).to.deep.equal(['invoice_lookup']);
  });

  it('an agent without an output schema sends no response_format and answers plain text', async () => {
    model.setScript([reply.text('It is overdue.')]);
    const result = await turn(models(), 'openai-compatible/scripted', { agent: agent(null) });
    expect([result.reply, result.output]).to.deep.equal(['It is overdue.', null]);
    expect(model.requests[0]!.body).to.not.have.property('response_format');
  });
});
