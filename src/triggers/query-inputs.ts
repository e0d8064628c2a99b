/**
 * Query inputs of a trigger call (openapi/triggers.yaml, parameter `inputs`). Every query pair
 * is a run input by its plain name. Clients that serialise the `inputs` object as a
 * deepObject (openapi-fetch's default) send `inputs[name]`, `inputs[name][]` or
 * `inputs[name][0]`: those are read as `name`. Values are strings on the wire; when the
 * workflow declares an input schema they are converted to the declared types (numbers,
 * integers, booleans, null, arrays from repeated names), and what does not convert is left
 * for the input check to refuse with its own path and message.
 */
import type { ValidateFunction } from 'ajv';
import type { WorkflowDefinition } from '../engine/index.js';
import { compileOwnSchema } from '../kernel/own-schemas.js';

/** The name of the query parameter object in openapi/triggers.yaml. */
const WRAPPER = 'inputs';
const WRAPPED = new RegExp(`^${WRAPPER}\\[([^\\[\\]]+)\\](?:\\[\\d*\\])?$`);

type QueryValue = string | string[];

/** Plain names for every query pair; values of a name given several times are kept in order. */
export function unwrapQuery(query: Record<string, unknown>): Record<string, QueryValue> {
  // A Map, then fromEntries: a name such as `__proto__` stays an ordinary input.
  const byName = new Map<string, string[]>();
  for (const [rawName, value] of Object.entries(query)) {
    const name = WRAPPED.exec(rawName)?.[1] ?? rawName;
    const values = (Array.isArray(value) ? value : [value]).map(String);
    byName.set(name, [...(byName.get(name) ?? []), ...values]);
  }
  return Object.fromEntries([...byName].map(([name, all]) => [name, all.length === 1 ? all[0]! : all]));
}

type Schema = Record<string, unknown>;

/**
 * Converters by schema object (a pinned workflow version's; one organisation's). Each is compiled
 * alone (kernel/own-schemas.ts), with type coercion: used only on query inputs (body inputs are
 * never converted).
 */
const converters = new WeakMap<object, ValidateFunction | null>();

/** A validator of the declared property types only: required, formats and ranges are the input check's job. */
function converterFor(inputSchema: Schema): ValidateFunction | null {
  let v = converters.get(inputSchema);
  if (v !== undefined) return v;
  const properties = inputSchema.properties;
  v = null;
  if (properties && typeof properties === 'object') {
    try {
      v = compileOwnSchema(
        { type: 'object', properties, $defs: inputSchema.$defs, definitions: inputSchema.definitions },
        { coerceTypes: 'array' },
      );
    } catch {
      v = null; // a schema Ajv cannot compile here stays unconverted; the input check reports it
    }
  }
  converters.set(inputSchema, v);
  return v;
}

function declaresArray(property: unknown): boolean {
  if (!property || typeof property !== 'object') return false;
  const type = (property as Schema).type;
  return type === 'array' || (Array.isArray(type) && type.includes('array'));
}

/**
 * Query inputs typed by the workflow's input schema. A repeated name stays an array only
 * where the property is declared an array; elsewhere the last value wins (as in form bodies).
 */
export function queryInputs(
  query: Record<string, unknown>,
  definition: WorkflowDefinition | undefined,
): Record<string, unknown> {
  const plain = unwrapQuery(query);
  const inputSchema = definition?.inputSchema as Schema | undefined;
  const properties = (inputSchema?.properties ?? {}) as Record<string, unknown>;
  const out: Record<string, unknown> = Object.fromEntries(
    Object.entries(plain).map(([name, value]) => [
      name,
      Array.isArray(value) && !declaresArray(Object.hasOwn(properties, name) ? properties[name] : undefined)
        ? value[value.length - 1]
        : value,
    ]),
  );
  if (inputSchema) converterFor(inputSchema)?.(out);
  return out;
}
