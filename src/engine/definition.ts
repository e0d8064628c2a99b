/**
 * Workflow definitions: the canonical validation is the JSON Schema in
 * schemas/workflow/definition.schema.json, compiled by codegen into standalone validators
 * (generated/validators/schemas.js), followed by the semantic checks a schema cannot express
 * (output.stepIndex must name an existing step; inputSchema must compile, as triggers check
 * inputs against it).
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import {
  WorkflowDefinition as validateWhole,
  WorkflowDefinitionCodeStep,
  WorkflowDefinitionHttpStep,
  WorkflowDefinitionToolStep,
  WorkflowDefinitionAgentStep,
} from '../../generated/validators/schemas.js';
import { AppError } from '../errors/index.js';
import { compileOwnSchema } from '../kernel/own-schemas.js';

export type StepType = 'code' | 'http' | 'tool' | 'agent';
export const STEP_TYPES: readonly StepType[] = ['code', 'http', 'tool', 'agent'];

export interface WorkflowStep {
  type: StepType;
  name: string;
  description?: string;
  [field: string]: unknown;
}

export interface WorkflowDefinition {
  name: string;
  description?: string;
  inputSchema?: Record<string, unknown>;
  steps: WorkflowStep[];
  timeoutMs?: number;
  /** Designated output of the workflow (0-based step index). */
  output?: { stepIndex: number; fileName: string };
}

/** Same shape as an Ajv error so callers see one kind of `details` entry. */
export type DefinitionError = Pick<ErrorObject, 'instancePath' | 'keyword' | 'message' | 'params'>;

interface Validators {
  whole: ValidateFunction;
  byType: Record<StepType, ValidateFunction>;
}

const validators: Validators = {
  whole: validateWhole,
  byType: {
    code: WorkflowDefinitionCodeStep,
    http: WorkflowDefinitionHttpStep,
    tool: WorkflowDefinitionToolStep,
    agent: WorkflowDefinitionAgentStep,
  },
};

function plain(e: ErrorObject, prefix = ''): DefinitionError {
  return { instancePath: prefix + e.instancePath, keyword: e.keyword, message: e.message, params: e.params };
}

/**
 * A step is a oneOf over four shapes, so Ajv reports every branch's failures. Errors inside a
 * step are replaced by those of the branch its `type` selects (or one enum error when the
 * type is unknown), which is what a caller can act on.
 */
function focusedErrors(def: unknown, errors: ErrorObject[], v: Validators): DefinitionError[] {
  const steps = def && typeof def === 'object' ? (def as { steps?: unknown }).steps : undefined;
  const out: DefinitionError[] = [];
  const seen = new Set<number>();
  for (const e of errors) {
    const m = /^\/steps\/(\d+)(?:\/|$)/.exec(e.instancePath);
    if (!m || !Array.isArray(steps)) {
      out.push(plain(e));
      continue;
    }
    const i = Number(m[1]);
    if (seen.has(i)) continue;
    seen.add(i);
    const step = steps[i] as { type?: unknown } | null;
    const type = step && typeof step === 'object' ? step.type : undefined;
    if (typeof type !== 'string' || !STEP_TYPES.includes(type as StepType)) {
      out.push({
        instancePath: `/steps/${i}/type`,
        keyword: 'enum',
        message: `must be one of ${STEP_TYPES.join(', ')}`,
        params: { allowedValues: STEP_TYPES },
      });
      continue;
    }
    const branch = v.byType[type as StepType];
    branch(step);
    for (const be of branch.errors ?? []) out.push(plain(be, `/steps/${i}`));
  }
  return out;
}

/** Semantic rules beyond the JSON Schema. */
function semanticErrors(def: WorkflowDefinition): DefinitionError[] {
  const out: DefinitionError[] = [];
  if (def.output && def.output.stepIndex >= def.steps.length) {
    out.push({
      instancePath: '/output/stepIndex',
      keyword: 'stepIndex',
      message: `must name an existing step (0 to ${def.steps.length - 1})`,
      params: { stepCount: def.steps.length },
    });
  }
  if (def.inputSchema) {
    // Compiled alone, as triggers compile it (src/triggers/inputs.ts): a `$ref` resolves within
    // the schema only, so one that names another schema's `$id` is refused here, not at a call.
    try {
      compileOwnSchema(def.inputSchema, { formats: true });
    } catch (err) {
      out.push({
        instancePath: '/inputSchema',
        keyword: 'schema',
        message: `must be a JSON Schema (2020-12) that compiles: ${(err as Error).message}`,
        params: {},
      });
    }
  }
  return out;
}

/** Validates a workflow definition; invalid → 400 invalid_request with the errors as details. */
export function validateDefinition(input: unknown): WorkflowDefinition {
  const v = validators;
  if (!v.whole(input)) {
    throw new AppError('ERR_REQUEST_INVALID', {
      message: 'The workflow definition is invalid',
      details: focusedErrors(input, v.whole.errors ?? [], v),
    });
  }
  const def = input as WorkflowDefinition;
  const semantic = semanticErrors(def);
  if (semantic.length) {
    throw new AppError('ERR_REQUEST_INVALID', { message: 'The workflow definition is invalid', details: semantic });
  }
  return def;
}

/** JSON with object keys sorted: equal step definitions compare equal whatever their key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .filter((k) => o[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * Step versions of a new workflow version (spec "Versioning": stepMap maps step index to
 * step version): a step keeps its version when its definition is unchanged versus the
 * previous version at the same index, is bumped when changed, and starts at 1 when new.
 */
export function nextStepMap(
  previous: { definition: WorkflowDefinition; stepMap: Record<string, number> } | undefined,
  next: WorkflowDefinition,
): Record<string, number> {
  const map: Record<string, number> = {};
  next.steps.forEach((step, i) => {
    const before = previous?.definition.steps[i];
    const beforeVersion = previous?.stepMap[String(i)] ?? 1;
    if (before === undefined) map[String(i)] = 1;
    else map[String(i)] = canonicalJson(before) === canonicalJson(step) ? beforeVersion : beforeVersion + 1;
  });
  return map;
}
