/**
 * executeStep's dispatch: tool and agent steps fail clearly until their issues land, unknown
 * types are invalid, and the schema's example workflow runs step after step.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { executeStep, type PriorStep } from '../../../src/engine/execute-step.js';
import { NOT_IMPLEMENTED } from '../../../src/engine/steps/not-implemented.js';
import { SandboxPool } from '../../../src/engine/sandbox/pool.js';
import type { WorkflowDefinition, WorkflowStep } from '../../../src/engine/definition.js';
import { silentLog } from './sandbox-helpers.js';

const ctx = { inputs: {}, steps: [], runId: 'run_1', automationId: 'wf_1', stepIndex: 0 };

describe('engine steps: dispatch', function () {
  this.timeout(30_000);
  let pool: SandboxPool;
  before(() => {
    pool = new SandboxPool({ size: 1, log: silentLog });
  });
  after(() => pool.close());

  it('a tool step without the gateway (a worker started without one) fails as an invalid step', async () => {
    const step: WorkflowStep = { type: 'tool', name: 'Post', server: 'slack', tool: 'slack_message_send', arguments: { text: '{{ inputs.x }}' } };
    const out = await executeStep(step, ctx, { sandbox: pool, log: silentLog });
    expect(out).to.deep.include({ status: 'FAILED', resultType: 'error', exitCode: 2 });
    expect(out.result).to.match(/^Invalid step: tool steps need the gateway/);
  });

  it('an agent step fails: not implemented until the agents issue', async () => {
    const step: WorkflowStep = { type: 'agent', name: 'Summarise', agentId: 'agt_1', message: 'hi' };
    const out = await executeStep(step, ctx, { sandbox: pool, log: silentLog });
    expect(out).to.include({ status: 'FAILED', resultType: 'error', exitCode: 2, result: NOT_IMPLEMENTED.agent });
    expect(out.result).to.equal('Not implemented yet: agent steps arrive with the agents issue');
  });

  it('an unknown step type is an invalid step', async () => {
    const out = await executeStep({ type: 'shell' as never, name: 'x' }, ctx, { sandbox: pool, log: silentLog });
    expect(out).to.include({ status: 'FAILED', resultType: 'error', exitCode: 2 });
    expect(out.result).to.match(/unknown step type "shell"/);
  });

  it("runs the schema's example workflow: a greeting, then a report file using it", async () => {
    const schema = JSON.parse(readFileSync('schemas/workflow/definition.schema.json', 'utf8')) as { examples: WorkflowDefinition[] };
    const def = schema.examples[0]!;
    const prior: PriorStep[] = [];
    const outcomes = [];
    for (const [stepIndex, step] of def.steps.entries()) {
      const out = await executeStep(step, { inputs: { name: 'Ada' }, steps: prior, runId: 'run_1', automationId: 'wf_1', stepIndex }, { sandbox: pool, log: silentLog });
      outcomes.push(out);
      prior.push({ stepIndex, name: step.name, status: out.status, resultType: out.resultType, result: out.result, exitCode: out.exitCode });
    }
    expect(outcomes[0]).to.include({ status: 'COMPLETE', resultType: 'plaintext', result: 'Hello, Ada!' });
    expect(outcomes[1]).to.include({ status: 'COMPLETE', result: 'report.md written' });
    expect(outcomes[1]!.logs).to.deep.equal(['writing report']);
    expect(outcomes[1]!.files).to.have.length(1);
    expect(outcomes[1]!.files[0]).to.deep.include({ fileName: def.output!.fileName, mimeType: 'text/markdown' });
    expect(outcomes[1]!.files[0]!.data.toString()).to.equal('# Report\n\nHello, Ada!\n');
  });
});
