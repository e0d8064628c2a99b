import { Ajv2020 } from 'ajv/dist/2020.js';
import { _, type KeywordCxt } from 'ajv';
import standaloneModule from 'ajv/dist/standalone/index.js';
import addFormatsModule from 'ajv-formats';
import type { OperationInfo } from './bundle.js';
import { TS_HEADER } from './lib.js';

type Json = Record<string, unknown>;
// The CJS module's default export arrives as the function or as `{default}` depending on the loader.
const standaloneCode = ((standaloneModule as unknown as { default?: unknown }).default ?? standaloneModule) as (
  ajv: Ajv2020,
  map: Record<string, string>,
) => string;
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** OpenAPI 3.1 annotation keywords that are not JSON Schema vocabulary. */
const OPENAPI_KEYWORDS = ['example', 'discriminator', 'xml', 'externalDocs'];

/**
 * `coerce` validators (path, query, form fields: all strings on the wire) coerce types and fill
 * defaults; JSON bodies and schemas/ documents do neither — ajv's useDefaults inside oneOf
 * branches would write one branch's defaults into data that another branch then rejects.
 */
export function newAjv(coerce: boolean): Ajv2020 {
  const ajv = new Ajv2020({
    strict: true,
    strictTypes: false,
    strictRequired: false,
    allErrors: true,
    coerceTypes: coerce ? 'array' : false,
    useDefaults: coerce,
    code: { source: true, esm: true, lines: true },
  });
  addFormats(ajv);
  ajv.addFormat('binary', true);
  ajv.addVocabulary(OPENAPI_KEYWORDS);
  // Byte limits JSON Schema cannot express (spec section 13 envVars); generated as code so
  // standalone validators enforce them too.
  ajv.addKeyword({
    keyword: 'x-maxBytes',
    type: 'string',
    schemaType: 'number',
    code(cxt: KeywordCxt) {
      cxt.fail(_`Buffer.byteLength(${cxt.data}, "utf8") > ${cxt.schema as number}`);
    },
  });
  return ajv;
}

/** Copies a schema, dropping `x-` extensions and pointing component refs at one registry. */
export function cleanSchema(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(cleanSchema);
  if (value && typeof value === 'object') {
    const out: Json = {};
    for (const [k, v] of Object.entries(value)) {
      if (k.startsWith('x-')) continue;
      if (k === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/')) {
        out.$ref = `components#/$defs/${v.slice('#/components/schemas/'.length)}`;
        continue;
      }
      out[k] = cleanSchema(v);
    }
    return out;
  }
  return value;
}

function resolveParam(bundle: Json, p: Json): Json {
  if (typeof p.$ref === 'string') {
    const name = p.$ref.split('/').pop()!;
    return ((bundle.components as Json).parameters as Json)[name] as Json;
  }
  return p;
}

const PRIMITIVES = new Set(['string', 'number', 'integer', 'boolean', 'null']);

/**
 * On the wire a form-exploded object's member may be repeated (`?tags=a&tags=b`), and the
 * query parser gives an array of its values. A member schema of primitive types therefore
 * also accepts an array of them. Written as one type list, not anyOf: with type coercion,
 * an array branch would wrap every scalar.
 */
function repeatable(bundle: Json, member: unknown): unknown {
  let schema = member as Json;
  if (schema && typeof schema.$ref === 'string')
    schema = ((bundle.components as Json).schemas as Json)[schema.$ref.split('/').pop()!] as Json;
  const types = schema && (Array.isArray(schema.type) ? schema.type : [schema.type]);
  if (!types?.length || !types.every((t: unknown) => PRIMITIVES.has(String(t)))) return member;
  return { type: [...types, 'array'], items: { type: types } };
}

interface OpSchemas {
  params?: Json;
  query?: Json;
  json?: Json;
  form?: Json;
}

/** Request schemas per operation: path params, query, JSON body and form body. */
export function requestSchemas(bundle: Json, op: OperationInfo): OpSchemas {
  const item = (bundle.paths as Json)[op.path] as Json;
  const operation = item[op.method] as Json;
  const params = [...((item.parameters as Json[]) ?? []), ...((operation.parameters as Json[]) ?? [])].map((p) =>
    resolveParam(bundle, p),
  );
  const out: OpSchemas = {};
  const pathParams = params.filter((p) => p.in === 'path');
  if (pathParams.length) {
    out.params = {
      type: 'object',
      properties: Object.fromEntries(pathParams.map((p) => [p.name, p.schema ?? { type: 'string' }])),
      required: pathParams.map((p) => p.name),
    };
  }
  const queryParams = params.filter((p) => p.in === 'query');
  if (queryParams.length) {
    const properties: Json = {};
    const required: string[] = [];
    let additional: unknown = true;
    for (const p of queryParams) {
      const schema = (p.schema ?? { type: 'string' }) as Json;
      // A form-exploded object parameter spreads over the whole query string.
      if (schema.type === 'object' && p.explode !== false && (p.style ?? 'form') === 'form') {
        Object.assign(properties, (schema.properties as Json) ?? {});
        additional = repeatable(bundle, schema.additionalProperties ?? true);
        continue;
      }
      properties[p.name as string] = schema;
      if (p.required) required.push(p.name as string);
    }
    out.query = { type: 'object', properties, required, additionalProperties: additional };
  }
  const content = ((operation.requestBody as Json | undefined)?.content as Json | undefined) ?? {};
  const json = (content['application/json'] as Json | undefined)?.schema;
  if (json) out.json = json as Json;
  const form = (content['application/x-www-form-urlencoded'] as Json | undefined)?.schema;
  if (form) out.form = form as Json;
  return out;
}

/** ajv standalone module with one validator per operation part. */
export interface ValidatorModules {
  index: string;
  indexDts: string;
  strict: string;
  coerce: string;
  strictNames: string[];
  coerceNames: string[];
}

export function generateOperationValidators(bundle: Json, ops: OperationInfo[]): ValidatorModules {
  const components = cleanSchema(((bundle.components as Json).schemas as Json) ?? {}) as Json;
  const strictAjv = newAjv(false);
  const coerceAjv = newAjv(true);
  const strictMap: Record<string, string> = {};
  const coerceMap: Record<string, string> = {};
  const table: string[] = [];
  for (const ajv of [strictAjv, coerceAjv]) ajv.addSchema({ $id: 'components', $defs: components });
  for (const op of ops) {
    const schemas = requestSchemas(bundle, op);
    const parts: string[] = [];
    for (const [part, schema] of Object.entries(schemas) as [keyof OpSchemas, Json][]) {
      const name = `${op.operationId}_${part}`;
      const useCoerce = part !== 'json';
      (useCoerce ? coerceAjv : strictAjv).addSchema({ ...(cleanSchema(schema) as Json), $id: name });
      (useCoerce ? coerceMap : strictMap)[name] = name;
      parts.push(`${part}: ${useCoerce ? 'c' : 's'}.${name}`);
    }
    table.push(`  ${op.operationId}: { ${parts.join(', ')} },`);
  }
  const strictCode = standaloneCode(strictAjv, strictMap);
  const coerceCode = standaloneCode(coerceAjv, coerceMap);
  const js = [
    TS_HEADER,
    `import * as s from './openapi-strict.js';`,
    `import * as c from './openapi-coerce.js';`,
    `/** Request validators per operationId (params and query coerce types; JSON bodies do not). */`,
    `export const operationValidators = {`,
    ...table,
    `};`,
  ].join('\n');
  const dts = [
    TS_HEADER,
    `import type { ValidateFunction } from 'ajv';`,
    `export interface OperationValidators { params?: ValidateFunction; query?: ValidateFunction; json?: ValidateFunction; form?: ValidateFunction }`,
    `export declare const operationValidators: Record<string, OperationValidators>;`,
  ].join('\n');
  return {
    index: js,
    indexDts: dts,
    strict: shim(strictCode),
    coerce: shim(coerceCode),
    strictNames: Object.keys(strictMap),
    coerceNames: Object.keys(coerceMap),
  };
}

/** ajv's ESM output still calls require() for its runtime helpers (DESIGN.md section 6). */
export function shim(code: string): string {
  return `${TS_HEADER}import { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);\n${code}`;
}

/**
 * Declarations of standalone validators. With `typed`, the validators named in `typed.names`
 * are type guards of the type of the same name exported by the module `typed.from`.
 */
export function validatorDts(names: string[], typed?: { from: string; names: string[] }): string {
  const guarded = new Set(typed?.names ?? []);
  return [
    TS_HEADER,
    `import type { ValidateFunction } from 'ajv';`,
    ...(typed && guarded.size ? [`import type * as Types from '${typed.from}';`] : []),
    ...names.map((n) =>
      guarded.has(n)
        ? `export declare const ${n}: ValidateFunction<Types.${n}>;`
        : `export declare const ${n}: ValidateFunction;`,
    ),
  ].join('\n');
}
