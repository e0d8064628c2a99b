/**
 * What templates and code steps see of a run (schema: "each sees {inputs, steps}"): the run
 * inputs and the earlier steps' outcomes placed at their step index, so `steps[i]` is step i
 * whatever order the caller listed them in.
 */
import type { TemplateData } from '../template.js';
import type { PriorStep, StepRunContext } from './types.js';

export function stepsByIndex(steps: PriorStep[]): Array<PriorStep | null> {
  const out: Array<PriorStep | null> = [];
  for (const s of steps) {
    while (out.length < s.stepIndex) out.push(null);
    out[s.stepIndex] = s;
  }
  return out;
}

export function templateData(ctx: StepRunContext): TemplateData {
  return { inputs: ctx.inputs, steps: stepsByIndex(ctx.steps) };
}
