// `node scripts/bundle-entries.mjs <out dir>`: the service (src/main.ts), the worker
// (src/worker.ts) and the CLI (src/cli/main.ts) as three ESM bundles of our own code, for the
// process tests (test/helpers/process.ts). The same source as `npm start` and bin/switchyard.js,
// without tsx's loader: a start is about 1.3 s shorter, a CLI call about 0.6 s.
// - Packages stay imports (resolved from node_modules), so <out dir> must be inside the checkout.
// - Every `import.meta.url` is replaced by the URL of the file it is written in, so the paths our
//   modules compute from it (the sandbox runner, generated/, skills/, worker-thread entries) stay
//   those of the checkout.
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const out = process.argv[2];
if (!out) {
  process.stderr.write('usage: node scripts/bundle-entries.mjs <out dir inside the checkout>\n');
  process.exit(2);
}

const ownImportMeta = {
  name: 'own-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\.(ts|js)$/ }, async (args) => {
      const text = await readFile(args.path, 'utf8');
      const url = JSON.stringify(pathToFileURL(args.path).href);
      return { contents: text.replaceAll('import.meta.url', url), loader: args.path.endsWith('.ts') ? 'ts' : 'js' };
    });
  },
};

await rm(path.resolve(out), { recursive: true, force: true });
const common = {
  absWorkingDir: ROOT,
  outdir: path.resolve(out),
  outExtension: { '.js': '.mjs' },
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  packages: 'external',
  plugins: [ownImportMeta],
  logLevel: 'warning',
};
// The service and the worker share their chunks. The CLI is built on its own: it imports a few
// functions of each context through the context's index.ts, and only a build of its own lets
// esbuild leave out the rest of those contexts (package.json `sideEffects: false`), so that a CLI
// call does not load the model providers, the MCP SDK and the services it never uses.
await build({ ...common, entryPoints: { main: 'src/main.ts', worker: 'src/worker.ts' } });
await build({ ...common, entryPoints: { cli: 'src/cli/main.ts' } });
