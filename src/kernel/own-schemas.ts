/**
 * Compiling JSON Schemas that an organisation wrote (a workflow's `inputSchema`, an agent's
 * `outputSchema`). Each one is compiled by an Ajv instance of its own. An Ajv instance keeps
 * every schema it compiled in a registry by `$id` (nested ones included) for later `$ref`s: in
 * an instance shared by the service, an organisation's schema could `$ref` the `$id` of another
 * organisation's schema and read that schema's property names from its own validation errors,
 * and a schema reusing an `$id` already seen would fail to compile. A schema compiled alone
 * resolves `$ref` within itself only, and its instance goes away with its validator.
 *
 * Whether it is a JSON Schema at all is checked against the 2020-12 meta-schema by one shared
 * instance that validates schemas as data and registers none of them.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

const meta = new Ajv2020({ allErrors: true, strict: false });

export interface OwnSchemaOptions {
  /** Check `format` (email, date-time …) with ajv-formats. */
  formats?: boolean;
  /** Ajv's `coerceTypes` (query inputs). */
  coerceTypes?: 'array';
}

/**
 * A validator of `schema` from an Ajv instance of its own; throws (with Ajv's message) when it
 * is not a valid JSON Schema or does not compile.
 */
export function compileOwnSchema(schema: Record<string, unknown>, opts: OwnSchemaOptions = {}): ValidateFunction {
  if (!meta.validateSchema(schema)) throw new Error(`schema is invalid: ${meta.errorsText(meta.errors)}`);
  // The meta-schema check is done above: an instance made to compile one schema skips building its own.
  const ajv = new Ajv2020({
    allErrors: true,
    strict: false,
    validateSchema: false,
    ...(opts.coerceTypes ? { coerceTypes: opts.coerceTypes } : {}),
    ...(opts.formats ? {} : { validateFormats: false }),
  });
  if (opts.formats) addFormats(ajv);
  return ajv.compile(schema);
}
