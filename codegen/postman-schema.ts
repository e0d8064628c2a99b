/**
 * Response schemas for the Postman test scripts. Newman 6.2.2 runs scripts in
 * postman-sandbox 4.7, whose `pm.response.to.have.jsonSchema` is Ajv 6 (draft-07): it
 * rejects `$schema: …/2020-12/schema` and throws on formats it does not know (`binary`).
 * Verified there: `type: [..., 'null']`, `const`, `not`, `oneOf` and `propertyNames`
 * validate and fail as they should. So each schema is dereferenced from the bundle and
 * written as draft-07: annotations and OpenAPI-only keywords dropped, unknown formats
 * dropped, and a keyword with no draft-07 meaning fails codegen instead of being ignored.
 */
type Json = Record<string, unknown>;

/** Validation keywords that mean the same in 2020-12 and draft-07 (Ajv 6). */
const KEPT = new Set([
  'type',
  'enum',
  'const',
  'properties',
  'required',
  'additionalProperties',
  'patternProperties',
  'propertyNames',
  'items',
  'minItems',
  'maxItems',
  'uniqueItems',
  'contains',
  'minLength',
  'maxLength',
  'pattern',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minProperties',
  'maxProperties',
  'allOf',
  'anyOf',
  'oneOf',
  'not',
  'if',
  'then',
  'else',
  'format',
]);
/** Annotations and OpenAPI extensions: no effect on validity. */
const DROPPED = new Set([
  'description',
  'title',
  'examples',
  'example',
  'default',
  'deprecated',
  'readOnly',
  'writeOnly',
  'discriminator',
  'xml',
  'externalDocs',
  'contentMediaType',
  'contentEncoding',
  'contentSchema',
  '$comment',
  '$schema',
  '$id',
]);
/** Formats Ajv 6 knows; any other would throw "unknown format" inside the sandbox. */
const AJV6_FORMATS = new Set([
  'date',
  'time',
  'date-time',
  'uri',
  'uri-reference',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'regex',
  'uuid',
]);
const SCHEMA_MAP = new Set(['properties', 'patternProperties']);
const SCHEMA_LIST = new Set(['allOf', 'anyOf', 'oneOf']);
const SCHEMA_ONE = new Set(['additionalProperties', 'items', 'contains', 'not', 'if', 'then', 'else', 'propertyNames']);

/** The schema at `schema` (which may be a `$ref` into the bundle) as a self-contained draft-07 schema. */
export function draft07Schema(bundle: Json, schema: unknown, where: string): Json {
  return convert(bundle, schema, where, []) as Json;
}

function resolveRef(bundle: Json, ref: string, where: string): unknown {
  if (!ref.startsWith('#/')) throw new Error(`${where}: only internal $refs are supported, got ${ref}`);
  const target = ref
    .slice(2)
    .split('/')
    .reduce<unknown>((o, k) => (o as Json | undefined)?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], bundle);
  if (target === undefined) throw new Error(`${where}: unresolved $ref ${ref}`);
  return target;
}

function convert(bundle: Json, node: unknown, where: string, refs: string[]): unknown {
  if (typeof node === 'boolean') return node;
  if (!node || typeof node !== 'object' || Array.isArray(node))
    throw new Error(`${where}: a schema must be an object or a boolean`);
  const s = node as Json;
  if (typeof s.$ref === 'string') {
    if (refs.includes(s.$ref)) throw new Error(`${where}: recursive schema ${s.$ref} cannot be inlined`);
    const siblings = Object.keys(s).filter((k) => k !== '$ref' && !DROPPED.has(k));
    if (siblings.length)
      throw new Error(`${where}: $ref with sibling keywords (${siblings.join(', ')}) is not supported`);
    return convert(bundle, resolveRef(bundle, s.$ref, where), `${where} → ${s.$ref}`, [...refs, s.$ref]);
  }
  const out: Json = {};
  for (const [k, v] of Object.entries(s)) {
    if (DROPPED.has(k) || k.startsWith('x-')) continue;
    if (!KEPT.has(k))
      throw new Error(`${where}: keyword "${k}" has no draft-07 equivalent for the Postman sandbox (Ajv 6)`);
    if (k === 'format' && !AJV6_FORMATS.has(String(v))) continue;
    if (SCHEMA_MAP.has(k))
      out[k] = Object.fromEntries(
        Object.entries(v as Json).map(([p, sub]) => [p, convert(bundle, sub, `${where}/${k}/${p}`, refs)]),
      );
    else if (SCHEMA_LIST.has(k))
      out[k] = (v as unknown[]).map((sub, i) => convert(bundle, sub, `${where}/${k}/${i}`, refs));
    else if (SCHEMA_ONE.has(k))
      out[k] = Array.isArray(v)
        ? v.map((sub, i) => convert(bundle, sub, `${where}/${k}/${i}`, refs))
        : convert(bundle, v, `${where}/${k}`, refs);
    else out[k] = structuredClone(v);
  }
  return out;
}
