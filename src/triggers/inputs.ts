import type { ValidateFunction } from 'ajv';
import { AppError } from '../errors/index.js';
import type { WorkflowDefinition } from '../engine/index.js';
import { OrgMemo } from '../kernel/org-memo.js';
import { compileOwnSchema } from '../kernel/own-schemas.js';

/**
 * Compiled input schemas per organisation and schema text (a workflow version's schema never
 * changes). Keyed by organisation: another organisation's identical schema is compiled again,
 * so no organisation can tell by a call's timing which schemas others use.
 */
const compiled = new OrgMemo<ValidateFunction | 'invalid'>(1000);
/** The same, by schema object: pinned versions are memoised, so the hot path skips the text key. */
const bySchema = new WeakMap<object, ValidateFunction | 'invalid'>();

/**
 * The organisation's validator of an input schema, compiled alone (kernel/own-schemas.ts);
 * undefined when it does not compile.
 */
export function inputValidator(orgId: string, schema: Record<string, unknown>): ValidateFunction | undefined {
  let validate = bySchema.get(schema);
  if (!validate) {
    validate = compiled.get(orgId, JSON.stringify(schema), () => {
      try {
        return compileOwnSchema(schema, { formats: true });
      } catch {
        return 'invalid';
      }
    });
    // A schema object belongs to one workflow version of one organisation.
    bySchema.set(schema, validate);
  }
  return validate === 'invalid' ? undefined : validate;
}

/**
 * A workflow may declare `inputSchema` (schemas/workflow/definition.schema.json): a trigger
 * call whose inputs do not match it is refused with 400 before any run exists. Query inputs
 * were converted to the declared types beforehand (query-inputs.ts); JSON and form bodies are
 * checked as sent.
 */
export function checkInputs(orgId: string, definition: WorkflowDefinition, inputs: Record<string, unknown>): void {
  if (!definition.inputSchema) return;
  const validate = inputValidator(orgId, definition.inputSchema);
  // Deploying a workflow refuses a schema that does not compile (src/engine/definition.ts); one
  // stored before that check (a `$ref` that resolves to nothing, say) is not checked against.
  if (!validate) return;
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
