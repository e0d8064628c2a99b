/**
 * generated/config/types.ts: the type of the loaded configuration, `Config`, from
 * schemas/config/config.schema.json (title SwitchyardConfig), and one named type per object
 * member (`Config<Member>`, e.g. ConfigModels). A top-level string property with
 * `contentEncoding: base64` is validated as its text and held decoded, so it is a Buffer in
 * `Config`; nothing else differs from the schema's own type (generated/schemas/types.ts).
 */
import type { SchemaFile } from './schemas.js';
import { TS_HEADER } from './lib.js';

type Json = Record<string, unknown>;

const TITLE = 'SwitchyardConfig';

/** A description as the lines of a doc comment, indented by `indent`. */
function doc(description: unknown, indent: string): string[] {
  if (typeof description !== 'string' || description === '') return [];
  const words = description.replace(/\*\//g, '* /').split(/\s+/);
  const lines: string[] = [];
  let line = '';
  for (const w of words) {
    if (line && line.length + w.length + 1 > 100 - indent.length - 3) {
      lines.push(line);
      line = w;
    } else line = line ? `${line} ${w}` : w;
  }
  if (line) lines.push(line);
  return [`${indent}/**`, ...lines.map((l) => `${indent} * ${l}`), `${indent} */`];
}

const pascal = (name: string) => name[0]!.toUpperCase() + name.slice(1);

export function generateConfigTypes(schemas: SchemaFile[]): string {
  const config = schemas.find((s) => s.title === TITLE);
  if (!config) throw new Error(`schemas/: no schema titled ${TITLE} (schemas/config/config.schema.json)`);
  const properties = (config.schema.properties ?? {}) as Record<string, Json>;
  const required = new Set((config.schema.required ?? []) as string[]);
  const encoded = Object.entries(properties).filter(([, p]) => p.contentEncoding === 'base64');
  for (const [name, p] of encoded) {
    if (p.type !== 'string' || !required.has(name))
      throw new Error(`${TITLE}.${name}: a base64-encoded property must be a required string`);
  }
  const objects = Object.entries(properties).filter(([, p]) => p.type === 'object');
  const omitted = encoded.map(([name]) => JSON.stringify(name)).join(' | ');
  return [
    TS_HEADER,
    `import type { ${TITLE} } from '../schemas/types.js';`,
    ``,
    ...doc(
      `The loaded configuration: ${TITLE} (schemas/config/config.schema.json) as src/config/index.ts loadConfig returns it once the generated validator has checked it${
        encoded.length
          ? `, with ${encoded.map(([n]) => n).join(', ')} (base64 text in the schema) decoded to its bytes`
          : ''
      }.`,
      '',
    ),
    encoded.length
      ? [
          `export type Config = Omit<${TITLE}, ${omitted}> & {`,
          ...encoded.flatMap(([name, p]) => [...doc(p.description, '  '), `  ${name}: Buffer;`]),
          `};`,
        ].join('\n')
      : `export type Config = ${TITLE};`,
    ...objects.flatMap(([name, p]) => [
      ``,
      ...doc(p.description, ''),
      `export type Config${pascal(name)} = Config[${JSON.stringify(name)}];`,
    ]),
  ].join('\n');
}
