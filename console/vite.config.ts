// Vite build of the web console (console/README.md); scripts/build.mjs runs it into the build's
// console/ folder, which the service serves at /console (src/console/index.ts).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import standaloneCode from 'ajv/dist/standalone/index.js';
import { defineConfig, type Plugin } from 'vite';

const VALIDATOR_ID = 'virtual:workflow-definition-validator';

/**
 * The workflow definition's JSON Schema (schemas/workflow/definition.schema.json) compiled at
 * build time into standalone validators, as codegen compiles it for the service: the whole
 * definition and each step type's branch. Compiling in the browser would need `eval`, which
 * the console's Content-Security-Policy refuses.
 */
function definitionValidator(): Plugin {
  const schemaFile = fileURLToPath(new URL('../schemas/workflow/definition.schema.json', import.meta.url));
  return {
    name: 'workflow-definition-validator',
    resolveId: (id) => (id === VALIDATOR_ID ? `\0${VALIDATOR_ID}` : undefined),
    load(id) {
      if (id !== `\0${VALIDATOR_ID}`) return undefined;
      this.addWatchFile(schemaFile);
      const schema = JSON.parse(readFileSync(schemaFile, 'utf8')) as { $id: string };
      const ajv = new Ajv2020({
        strict: true,
        strictTypes: false,
        strictRequired: false,
        allErrors: true,
        code: { source: true, esm: true },
      });
      ajv.addSchema(schema);
      const ref = (def: string) => `${schema.$id}#/$defs/${def}`;
      const code = standaloneCode(ajv, {
        whole: schema.$id,
        code: ref('codeStep'),
        http: ref('httpStep'),
        tool: ref('toolStep'),
        agent: ref('agentStep'),
      });
      // Ajv's runtime helpers are required as CommonJS; imported here so the bundler resolves them.
      let n = 0;
      const imports: string[] = [];
      const body = code.replace(/require\("([^"]+)"\)/g, (_, mod: string) => {
        imports.push(`import * as __ajv${n} from ${JSON.stringify(mod)};`);
        return `__cjs(__ajv${n++})`;
      });
      // The module object whichever way the bundler presents a CommonJS module's exports.
      const cjs = `function __cjs(ns) { const d = ns.default; return d && typeof d === 'object' && 'default' in d ? d : ns; }`;
      return `${imports.join('\n')}\n${cjs}\n${body.replace('"use strict";', '')}`;
    },
  };
}

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  // Relative: chunks import each other from their own URL, and the service roots index.html's
  // references at the console's path as it was asked for (src/console), so the console works
  // under a host application's mount prefix too.
  base: './',
  publicDir: false,
  plugins: [definitionValidator()],
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    target: 'es2022',
    // The policy admits no inline script: the module preload polyfill is left out (every
    // browser the console supports preloads modules itself), and no asset is inlined as data.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    reportCompressedSize: false,
    // The workflow editor's chunk (CodeMirror with its JSON and JavaScript languages, loaded
    // when the editor first opens) is about 570 KB minified; the first load stays small.
    chunkSizeWarningLimit: 700,
  },
});
