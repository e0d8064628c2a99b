/**
 * executeStep's dispatch: tool and agent steps without their runtime fail as invalid steps,
 * unknown types are invalid, and the schema's example workflow runs step after step.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { executeStep, type PriorStep } from '../../../src/engine/execute-step.js';
import { SandboxPool } from '../../../src/engine/sandbox/pool.js';
import type { WorkflowDefinition, WorkflowStep } from '../../../src/engine/definition.js';
import { silentLog, testIsolation } from './sandbox-helpers.js';

const ctx = { inputs: {}, steps: [], runId: 'run_1', automationId: 'wf_1', stepIndex: 0 };

describe('engine steps: dispatch', function () {
  this.timeout(30_000);
  let pool: SandboxPool;
  before(async () => {
    pool = new SandboxPool({ isolation: await testIsolation(), size: 1, log: silentLog });
  });
  after(() => pool.close());

  it('a tool step without the gateway (a worker started without one) fails as an invalid step', async () => {
    const step: WorkflowStep = {
      type: 'tool',
      name: 'Post',
      server: 'slack',
      tool: 'slack_message_send',
      arguments: { text: '{{ inputs.x }}' },
    };
    const out = await executeStep(step, ctx, { sandbox: pool, log: silentLog });
    expect(out).to.deep.include({ status: 'FAILED', resultType: 'error', exitCode: 2 });
    expect(out.result).to.match(/^Invalid step: tool steps need the gateway/);
  });

  it('an agent step without the agents runtime fails as an invalid step', async () => {
    const step: WorkflowStep = { type: 'agent', name: 'Summarise', agentId: 'agt_1', message: 'hi' };
    const out = await executeStep(step, { ...ctx, orgId: 'org_1' }, { sandbox: pool, log: silentLog });
    expect(out).to.include({ status: 'FAILED', resultType: 'error', exitCode: 2 });
    expect(out.result).to.match(/^Invalid step: agent steps need the agents runtime/);
  });

  it('an agent step sends the templated message and keeps the turn as agent-turn.json', async () => {
    const step: WorkflowStep = {
      type: 'agent',
      name: 'Summarise',
      agentId: 'agt_1',
      message: 'Summarise {{ inputs.topic }}',
    };
    const calls: unknown[] = [];
    const invokeAgent = async (call: { orgId: string; agentId: string; message: string }) => {
      calls.push({ orgId: call.orgId, agentId: call.agentId, message: call.message });
      return {
        kind: 'ok' as const,
        chatId: 'chat_1',
        turnId: 'turn_1',
        reply: '**done**',
        output: null,
        messages: [{ role: 'user', content: call.message }],
      };
    };
    const out = await executeStep(
      step,
      { ...ctx, inputs: { topic: 'tides' }, orgId: 'org_1' },
      { sandbox: pool, log: silentLog, invokeAgent },
    );
    expect(calls).to.deep.equal([{ orgId: 'org_1', agentId: 'agt_1', message: 'Summarise tides' }]);
    expect(out).to.include({ status: 'COMPLETE', resultType: 'markdown', result: '**done**', exitCode: 0 });
    expect(out.files.map((f) => f.fileName)).to.deep.equal(['agent-turn.json']);
    expect(JSON.parse(out.files[0]!.data.toString())).to.deep.include({ chatId: 'chat_1', turnId: 'turn_1', ok: true });
  });

  it('an agent step maps refusals to exit 2 and failed turns to exit 1, structured output to json', async () => {
    const step: WorkflowStep = { type: 'agent', name: 'Extract', agentId: 'agt_1', message: 'x' };
    const run = (outcome: unknown) =>
      executeStep(
        step,
        { ...ctx, orgId: 'org_1' },
        { sandbox: pool, log: silentLog, invokeAgent: async () => outcome as never },
      );
    const refused = await run({ kind: 'refused', message: 'No agent agt_1 in this organisation' });
    expect(refused).to.include({
      status: 'FAILED',
      exitCode: 2,
      result: 'Agent step cannot run: No agent agt_1 in this organisation',
    });
    const failedTurn = await run({
      kind: 'failed',
      chatId: 'c',
      turnId: 't',
      error: 'step_limit',
      message: 'too many steps',
      messages: [],
    });
    expect(failedTurn).to.include({
      status: 'FAILED',
      exitCode: 1,
      result: 'Agent turn failed (step_limit): too many steps',
    });
    const structured = await run({
      kind: 'ok',
      chatId: 'c',
      turnId: 't',
      reply: '{"n":1}',
      output: { n: 1 },
      messages: [],
    });
    expect(structured).to.include({ status: 'COMPLETE', resultType: 'json', result: '{"n":1}' });
  });

  it('an unknown step type is an invalid step', async () => {
    const out = await executeStep({ type: 'shell' as never, name: 'x' }, ctx, { sandbox: pool, log: silentLog });
    expect(out).to.include({ status: 'FAILED', resultType: 'error', exitCode: 2 });
    expect(out.result).to.match(/unknown step type "shell"/);
  });

  it("runs the schema's example workflow: a greeting, then a report file using it", async () => {
    const schema = JSON.parse(readFileSync('schemas/workflow/definition.schema.json', 'utf8')) as {
      examples: WorkflowDefinition[];
    };
    const def = schema.examples[0]!;
    const prior: PriorStep[] = [];
    const outcomes = [];
    for (const [stepIndex, step] of def.steps.entries()) {
      const out = await executeStep(
        step,
        { inputs: { name: 'Ada' }, steps: prior, runId: 'run_1', automationId: 'wf_1', stepIndex },
        { sandbox: pool, log: silentLog },
      );
      outcomes.push(out);
      prior.push({
        stepIndex,
        name: step.name,
        status: out.status,
        resultType: out.resultType,
        result: out.result,
        exitCode: out.exitCode,
      });
    }
    expect(outcomes[0]).to.include({ status: 'COMPLETE', resultType: 'plaintext', result: 'Hello, Ada!' });
    expect(outcomes[1]).to.include({ status: 'COMPLETE', result: 'report.md written' });
    expect(outcomes[1]!.logs).to.deep.equal(['writing report']);
    expect(outcomes[1]!.files).to.have.length(1);
    expect(outcomes[1]!.files[0]).to.deep.include({ fileName: def.output!.fileName, mimeType: 'text/markdown' });
    expect(outcomes[1]!.files[0]!.data.toString()).to.equal('# Report\n\nHello, Ada!\n');
  });
});
