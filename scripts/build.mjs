// `node scripts/build.mjs [out dir]`: the compiled build of src/ (default out dir: dist/).
// Five ESM bundles of our own code with source maps: main.js (the service, `npm start`),
// worker.js (`npm run worker`), cli.js (bin/switchyard.js), delivery-thread.js (the event
// delivery thread) and export-thread.js (the trace export thread), plus their shared chunks, all
// in the out dir itself. npm packages stay imports, resolved from node_modules, so the out dir
// must be inside the package.
// - Every `import.meta.url` becomes the URL of the source file it is written in, expressed from
//   the bundle's own URL (`new URL("../src/…/x.ts", import.meta.url)`): paths our modules compute
//   from it (the runner programs, generated/, skills/) are those of the package, wherever it is
//   installed. `SWITCHYARD_BUNDLE_DIR` is the out dir relative to the package root
//   (src/kernel/package-files.ts).
// - The CLI is built on its own: it imports a few functions of each context through the
//   context's index.ts, and only a build of its own lets esbuild leave out the rest of those
//   contexts (package.json `sideEffects: false`), so a CLI call does not load the model
//   providers, the MCP SDK and the services it never uses.
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const out = path.resolve(ROOT, process.argv[2] ?? 'dist');
const fromRoot = path.relative(ROOT, out);
if (fromRoot === '' || fromRoot.startsWith('..') || path.isAbsolute(fromRoot)) {
  process.stderr.write(`build: the out dir must be a folder inside ${ROOT}, got ${out}\n`);
  process.exit(2);
}
const posix = (p) => p.split(path.sep).join('/');

// esbuild is a development dependency: a checkout installed with --omit=dev keeps the build it has.
let build;
try {
  ({ build } = await import('esbuild'));
} catch {
  if (existsSync(path.join(out, 'BUILD'))) {
    process.stderr.write(`build: esbuild is not installed (--omit=dev); ${fromRoot}/ is kept as it is\n`);
    process.exit(0);
  }
  process.stderr.write('build: esbuild is not installed: run `npm ci` (with development dependencies) first\n');
  process.exit(1);
}

const sourceImportMeta = {
  name: 'source-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\.(ts|js|mjs)$/ }, async (args) => {
      const text = await readFile(args.path, 'utf8');
      const loader = args.path.endsWith('.ts') ? 'ts' : 'js';
      if (!text.includes('import.meta.url')) return { contents: text, loader };
      const rel = JSON.stringify(posix(path.relative(out, args.path)));
      return { contents: text.replaceAll('import.meta.url', `new URL(${rel}, import.meta.url).href`), loader };
    });
  },
};

await rm(out, { recursive: true, force: true });
const common = {
  absWorkingDir: ROOT,
  outdir: out,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  packages: 'external',
  sourcemap: 'linked',
  sourcesContent: false,
  chunkNames: 'chunk-[hash]',
  define: { SWITCHYARD_BUNDLE_DIR: JSON.stringify(posix(fromRoot)) },
  plugins: [sourceImportMeta],
  logLevel: 'warning',
};
await build({
  ...common,
  entryPoints: {
    main: 'src/main.ts',
    worker: 'src/worker.ts',
    'delivery-thread': 'src/events/delivery-thread.ts',
    'export-thread': 'src/observability/export-thread.ts',
  },
});
await build({ ...common, entryPoints: { cli: 'src/cli/main.ts' } });
// npm pack leaves out a folder without package files; this marks the build complete.
await writeFile(path.join(out, 'BUILD'), `${JSON.stringify({ builtAt: new Date().toISOString() })}\n`);
