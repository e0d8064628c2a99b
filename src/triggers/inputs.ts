import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { AppError } from '../errors/index.js';
import type { WorkflowDefinition } from '../engine/index.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const ajv = addFormats(new Ajv2020({ allErrors: true, strict: false }));
/** Compiled input schemas by their text (a workflow version's schema never changes). */
const compiled = new Map<string, ValidateFunction>();
/** The same, by definition object: pinned versions are memoised, so the hot path skips the text key. */
const byDefinition = new WeakMap<object, ValidateFunction>();

/**
 * A workflow may declare `inputSchema` (schemas/workflow/definition.schema.json): a trigger
 * call whose inputs do not match it is refused with 400 before any run exists. Query inputs
 * were converted to the declared types beforehand (query-inputs.ts); JSON and form bodies are
 * checked as sent.
 */
export function checkInputs(definition: WorkflowDefinition, inputs: Record<string, unknown>): void {
  if (!definition.inputSchema) return;
  let validate = byDefinition.get(definition.inputSchema);
  const key = validate ? '' : JSON.stringify(definition.inputSchema);
  validate ??= compiled.get(key);
  if (!validate) {
    try {
      validate = ajv.compile(definition.inputSchema);
    } catch {
      return; // an uncompilable schema was refused at deploy time; never block runs on it here
    }
    if (compiled.size > 1000) compiled.clear();
    compiled.set(key, validate);
  }
  byDefinition.set(definition.inputSchema, validate);
  if (!validate(inputs)) {
    const details = (validate.errors ?? []).map((e) => ({
      path: e.instancePath || '/',
      message: e.message ?? 'invalid',
    }));
    throw new AppError('ERR_INPUTS_INVALID', {
      message: `The inputs do not match the workflow's input schema: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`,
      details,
    });
  }
}
