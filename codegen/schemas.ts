import path from 'node:path';
import { existsSync } from 'node:fs';
import standaloneModule from 'ajv/dist/standalone/index.js';
import { ROOT, TS_HEADER, listFiles, readYamlOrJson, rel } from './lib.js';
import { newAjv, shim, validatorDts } from './validators.js';
import type { Ajv2020 } from 'ajv/dist/2020.js';

type Json = Record<string, unknown>;
// The CJS module's default export arrives as the function or as `{default}` depending on the loader.
const standaloneCode = ((standaloneModule as unknown as { default?: unknown }).default ?? standaloneModule) as (
  ajv: Ajv2020,
  map: Record<string, string>,
) => string;

export interface SchemaFile {
  file: string;
  title: string;
  schema: Json;
}

export function loadSchemas(): SchemaFile[] {
  const dir = path.join(ROOT, 'schemas');
  if (!existsSync(dir)) return [];
  const out: SchemaFile[] = [];
  for (const file of listFiles(dir, (f) => f.endsWith('.schema.json'))) {
    const schema = readYamlOrJson(file) as Json;
    const title = schema.title;
    if (typeof title !== 'string' || !/^[A-Z][A-Za-z0-9]*$/.test(title))
      throw new Error(`${rel(file)}: title must be PascalCase`);
    if (out.some((s) => s.title === title)) throw new Error(`${rel(file)}: duplicate title ${title}`);
    out.push({ file, title, schema });
  }
  return out;
}

/** Every property with a `default`, at any depth of `schema`, is also `required` by its object. */
function defaultsRequired(schema: unknown): boolean {
  if (Array.isArray(schema)) return schema.every(defaultsRequired);
  if (!schema || typeof schema !== 'object') return true;
  const o = schema as Json;
  const required = new Set(Array.isArray(o.required) ? (o.required as string[]) : []);
  const props = (o.properties ?? {}) as Record<string, Json>;
  if (Object.entries(props).some(([name, p]) => p && typeof p === 'object' && 'default' in p && !required.has(name)))
    return false;
  return Object.entries(o).every(([k, v]) => k === 'examples' || k === 'default' || defaultsRequired(v));
}

/** Standalone validators for every schema in schemas/, exported by title. */
export function generateSchemaValidators(schemas: SchemaFile[]): { js: string; dts: string } {
  const ajv = newAjv(false);
  const map: Record<string, string> = {};
  for (const s of schemas) {
    ajv.addSchema(s.schema);
    map[s.title] = s.schema.$id as string;
    // Each named definition too (e.g. WorkflowDefinitionCodeStep), for precise error reports.
    for (const def of Object.keys((s.schema.$defs as Json | undefined) ?? {})) {
      map[`${s.title}${def[0]!.toUpperCase()}${def.slice(1)}`] = `${s.schema.$id as string}#/$defs/${def}`;
    }
  }
  const code = schemas.length ? standaloneCode(ajv, map) : 'export {};';
  // A schema's own validator is a type guard of its generated type (generated/schemas/types.ts)
  // where that type is what the validator admits: the validators fill no defaults, and the type
  // makes a property with a default present, so only schemas that require each such property;
  // and the type of a schema with `$defs` holds them as a member, so only schemas without.
  const titles = new Set(
    schemas.filter((s) => s.schema.$defs === undefined && defaultsRequired(s.schema)).map((s) => s.title),
  );
  const dts = validatorDts(Object.keys(map), {
    from: '../schemas/types.js',
    names: Object.keys(map).filter((n) => titles.has(n)),
  });
  return { js: shim(code), dts };
}

/** A synthetic OpenAPI document so openapi-typescript can type the JSON Schemas. */
export function schemasAsOpenapi(schemas: SchemaFile[]): Json {
  const rewrite = (v: unknown, title: string): unknown => {
    if (Array.isArray(v)) return v.map((x) => rewrite(x, title));
    if (v && typeof v === 'object') {
      const o: Json = {};
      for (const [k, x] of Object.entries(v)) {
        if (k === '$ref' && typeof x === 'string' && x.startsWith('#/$defs/'))
          o[k] = `#/components/schemas/${title}/$defs/${x.slice(8)}`;
        else if (k === '$id' || k === '$schema') continue;
        else o[k] = rewrite(x, title);
      }
      return o;
    }
    return v;
  };
  return {
    openapi: '3.1.0',
    info: { title: 'Switchyard schemas', version: '1.0.0' },
    paths: {},
    components: { schemas: Object.fromEntries(schemas.map((s) => [s.title, rewrite(s.schema, s.title)])) },
  };
}

export interface ToolServerDescriptor {
  name: string;
  path: string;
  description: string;
  embedded: boolean;
  tools: {
    name: string;
    title?: string;
    description: string;
    annotations?: Json;
    inputSchema: Json;
    outputSchema: Json;
    inputTitle: string;
    outputTitle: string;
  }[];
}

/** Tool tables from schemas/tools/<server>/server.json and the per-tool schemas. */
export function loadToolServers(schemas: SchemaFile[]): ToolServerDescriptor[] {
  const dir = path.join(ROOT, 'schemas', 'tools');
  if (!existsSync(dir)) return [];
  const byFile = new Map(schemas.map((s) => [s.file, s]));
  const servers: ToolServerDescriptor[] = [];
  for (const file of listFiles(dir, (f) => path.basename(f) === 'server.json')) {
    const desc = readYamlOrJson(file) as Json;
    const folder = path.dirname(file);
    const tools = ((desc.tools as Json[]) ?? []).map((t) => {
      const input = byFile.get(path.join(folder, `${t.name}.input.schema.json`));
      const output = byFile.get(path.join(folder, `${t.name}.output.schema.json`));
      if (!input || !output) throw new Error(`${rel(file)}: tool ${t.name} lacks its input or output schema`);
      const strip = (s: Json) =>
        Object.fromEntries(Object.entries(s).filter(([k]) => !['$id', '$schema', 'examples', 'title'].includes(k)));
      return {
        name: t.name as string,
        ...(t.title ? { title: t.title as string } : {}),
        description: t.description as string,
        ...(t.annotations ? { annotations: t.annotations as Json } : {}),
        inputSchema: strip(input.schema),
        outputSchema: strip(output.schema),
        inputTitle: input.title,
        outputTitle: output.title,
      };
    });
    servers.push({
      name: desc.name as string,
      path: desc.path as string,
      description: desc.description as string,
      embedded: Boolean(desc.embedded),
      tools,
    });
  }
  return servers.sort((a, b) => a.path.localeCompare(b.path));
}

/**
 * The tool schemas as a synthetic OpenAPI document for openapi-typescript, typed as a handler
 * sees its arguments: each schema's `$defs` become components of their own (`<Title>_<def>`), so
 * no `$defs` member appears in the typed value.
 */
export function toolSchemasAsOpenapi(schemas: SchemaFile[], servers: ToolServerDescriptor[]): Json {
  const titles = new Set(servers.flatMap((s) => s.tools.flatMap((t) => [t.inputTitle, t.outputTitle])));
  const components: Json = {};
  const rewrite = (v: unknown, title: string): unknown => {
    if (Array.isArray(v)) return v.map((x) => rewrite(x, title));
    if (v && typeof v === 'object') {
      const o: Json = {};
      for (const [k, x] of Object.entries(v)) {
        if (k === '$ref' && typeof x === 'string' && x.startsWith('#/$defs/'))
          o[k] = `#/components/schemas/${title}_${x.slice(8)}`;
        else if (['$id', '$schema', '$defs', 'examples'].includes(k)) continue;
        else o[k] = rewrite(x, title);
      }
      return o;
    }
    return v;
  };
  for (const s of schemas.filter((x) => titles.has(x.title))) {
    components[s.title] = rewrite(s.schema, s.title);
    for (const [name, def] of Object.entries((s.schema.$defs as Json | undefined) ?? {}))
      components[`${s.title}_${name}`] = rewrite(def, s.title);
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Switchyard tool schemas', version: '1.0.0' },
    paths: {},
    components: { schemas: components },
  };
}

/**
 * openapi-typescript's options for tool types: the generated validators fill no defaults
 * (validators.ts `newAjv`), so a property with a `default` stays optional in the type, and an
 * object schema without properties is `Record<string, unknown>`.
 */
export const TOOL_TYPE_OPTIONS = { alphabetize: true, defaultNonNullable: false, emptyObjectsUnknown: true } as const;

export function generateToolTables(servers: ToolServerDescriptor[]): string {
  const embedded = servers.filter((s) => s.embedded);
  const pascal = (p: string) =>
    p
      .split(/[^A-Za-z0-9]+/)
      .filter(Boolean)
      .map((w) => w[0]!.toUpperCase() + w.slice(1))
      .join('');
  return [
    TS_HEADER,
    `import type { components } from './types.js';`,
    ``,
    `type C = components['schemas'];`,
    ``,
    `/** Tool servers described in schemas/tools (embedded servers and application-server templates). */`,
    `export const toolServers = ${JSON.stringify(servers, null, 2)} as const;`,
    ``,
    `/**`,
    ` * Typed input/output of every tool, by server path and tool name, as the generated validator`,
    ` * admits them (generated/tools/types.ts: no defaults filled, so a defaulted property is optional).`,
    ` */`,
    `export interface ToolTypes {`,
    ...servers.flatMap((s) => [
      `  ${JSON.stringify(s.path)}: {`,
      ...s.tools.map(
        (t) =>
          `    ${JSON.stringify(t.name)}: { input: C[${JSON.stringify(t.inputTitle)}]; output: C[${JSON.stringify(t.outputTitle)}] };`,
      ),
      `  };`,
    ]),
    `}`,
    ``,
    `/** Paths of the servers served in-process (server.json \`embedded: true\`). */`,
    `export type EmbeddedServerPath = ${embedded.map((s) => JSON.stringify(s.path)).join(' | ')};`,
    ``,
    `/** A content block of a tool result (MCP CallToolResult \`content\`). */`,
    `export type ToolContentBlock = { type: string; [k: string]: unknown };`,
    ``,
    `/**`,
    ` * What a tool handler answers: its output as \`structuredContent\` (with the same JSON as text),`,
    ` * or the tool's own failure (\`isError: true\`, any body).`,
    ` */`,
    `export type ToolAnswer<O> =`,
    `  | { content: ToolContentBlock[]; structuredContent: O; isError?: false | undefined; [k: string]: unknown }`,
    `  | { content: ToolContentBlock[]; structuredContent?: Record<string, unknown> | undefined; isError: true; [k: string]: unknown };`,
    ``,
    `/**`,
    ` * The handlers of one embedded server: one per tool of schemas/tools/<P>, none missing, none`,
    ` * extra; each gets the tool's validated input and answers its output.`,
    ` */`,
    `export type ToolHandlers<P extends EmbeddedServerPath, Ctx> = {`,
    `  readonly [T in keyof ToolTypes[P]]: (`,
    `    args: ToolTypes[P][T] extends { input: infer I } ? I : never,`,
    `    ctx: Ctx,`,
    `  ) => Promise<ToolAnswer<ToolTypes[P][T] extends { output: infer O } ? O : never>>;`,
    `};`,
    ``,
    ...embedded.flatMap((s) => [
      `/** Handlers of the embedded server \`${s.path}\`. */`,
      `export type ${pascal(s.path)}Handlers<Ctx> = ToolHandlers<${JSON.stringify(s.path)}, Ctx>;`,
    ]),
  ].join('\n');
}
