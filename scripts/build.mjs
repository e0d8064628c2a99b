// `node scripts/build.mjs [out dir]`: the compiled build of src/ (default out dir: dist/).
// The web console (console/, Vite) is built into `<build>/console/` (see buildConsole below).
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
// - A running process never loses a file (`npm run worker` beside `npm start` builds again in
//   the same checkout): the bundles go to `<out>/b-<hash of the sources>/`, built in a
//   temporary folder and renamed into place, and `<out>/main.js`, `worker.js` and `cli.js` are
//   small entries, each replaced by a rename, that record their process in the build's `live/`
//   and import it. A build whose sources are those of the current one does nothing; an older
//   build is removed once no process recorded in its `live/` is alive.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { cp, mkdir, readFile, rename, rm, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const out = path.resolve(ROOT, process.argv[2] ?? 'dist');
const fromRoot = path.relative(ROOT, out);
if (fromRoot === '' || fromRoot.startsWith('..') || path.isAbsolute(fromRoot)) {
  process.stderr.write(`build: the out dir must be a folder inside ${ROOT}, got ${out}\n`);
  process.exit(2);
}
const posix = (p) => p.split(path.sep).join('/');

/** Everything the bundles are made of: our sources, the generated code, this script and the manifests. */
async function sourcesHash() {
  const hash = createHash('sha256');
  const files = [];
  for (const dir of ['src', 'generated', 'console'].filter((d) => existsSync(path.join(ROOT, d))))
    for (const e of readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true }))
      if (e.isFile()) files.push(path.relative(ROOT, path.join(e.parentPath, e.name)));
  files.push('scripts/build.mjs', 'package.json', 'tsconfig.json');
  for (const file of files.sort()) {
    hash.update(`${posix(file)}\0`);
    hash.update(await readFile(path.join(ROOT, file)).catch(() => Buffer.alloc(0)));
    hash.update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

/**
 * What the console is built from: its folder, the generated client and types it imports, the
 * workflow definition's schema (the editor's completion and validators), this
 * script and the manifests. A build whose console sources are those of the current build's
 * console copies that console instead of running Vite again.
 */
async function consoleHash() {
  const hash = createHash('sha256');
  const files = readdirSync(path.join(ROOT, 'console'), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)));
  files.push(
    'generated/openapi/types.ts',
    'generated/openapi/client.ts',
    'schemas/workflow/definition.schema.json',
    'scripts/build.mjs',
    'package-lock.json',
  );
  for (const file of files.sort()) {
    hash.update(`${posix(file)}\0`);
    hash.update(await readFile(path.join(ROOT, file)).catch(() => Buffer.alloc(0)));
    hash.update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

/**
 * The console into `<dir>/console/`: copied from an earlier build of the same console sources
 * (`candidates`: the build this out dir had, and the one of the checkout's dist/, which test
 * builds into other out dirs reuse), else built by Vite (console/vite.config.ts), with its stamp
 * `console/BUILD`. A copy of the package without console/ builds no console (the service then
 * answers that it is not built).
 */
async function buildConsole(dir, candidates) {
  if (!existsSync(path.join(ROOT, 'console'))) return;
  const target = path.join(dir, 'console');
  const sources = await consoleHash();
  for (const build of candidates) {
    const before = build && path.join(build, 'console');
    if (before && (await readJson(path.join(before, 'BUILD')))?.sources === sources) {
      await cp(before, target, { recursive: true });
      return;
    }
  }
  const vite = await import('vite');
  await vite.build({
    configFile: path.join(ROOT, 'console', 'vite.config.ts'),
    build: { outDir: target, emptyOutDir: true },
    logLevel: 'warn',
  });
  await writeFile(path.join(target, 'BUILD'), `${JSON.stringify({ sources })}\n`);
}

const readJson = (file) =>
  readFile(file, 'utf8').then(
    (t) => JSON.parse(t),
    () => undefined,
  );

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/**
 * A build that stopped being current (or was made) within this time is kept whatever its `live/`
 * says: a process may have read an entry naming it and not yet recorded itself, and a build of
 * other sources under way at the same time has just renamed its folder.
 */
const RECENT_MS = 60_000;

/**
 * Removes builds other than `keep` and the one the entries name now that no live process
 * recorded in their `live/`, and the bundles of the flat layout `<out>/` had before.
 */
async function prune(keep) {
  const named = (await readJson(stampFile))?.sources;
  for (const e of readdirSync(out, { withFileTypes: true })) {
    if (e.isFile() && /^(chunk-\w+\.js|(delivery|export)-thread\.js|\w[\w-]*\.js\.map)$/.test(e.name)) {
      await rm(path.join(out, e.name), { force: true });
      continue;
    }
    if (!e.isDirectory() || !/^(b-[0-9a-f]+|\.tmp-\d+)$/.test(e.name) || e.name === keep || e.name === `b-${named}`)
      continue;
    const dir = path.join(out, e.name);
    if (Date.now() - statSync(dir).mtimeMs < RECENT_MS) continue;
    const tmpOwner = e.name.startsWith('.tmp-') ? Number(e.name.slice(5)) : undefined;
    if (tmpOwner !== undefined ? alive(tmpOwner) : liveProcesses(dir).length > 0) continue;
    await rm(dir, { recursive: true, force: true });
  }
}

/** The processes recorded in a build's `live/` that still run (the records of the others are removed). */
function liveProcesses(dir) {
  const live = path.join(dir, 'live');
  if (!existsSync(live)) return [];
  return readdirSync(live).filter((name) => {
    if (/^\d+$/.test(name) && alive(Number(name))) return true;
    void rm(path.join(live, name), { force: true });
    return false;
  });
}

/** A program entry of `<out>/`: records this process in the build's `live/`, then runs the build's file. */
const entry = (
  build,
  name,
) => `// Generated by scripts/build.mjs: runs ${build}/${name}.js (see the header of scripts/build.mjs).
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
const live = new URL('./${build}/live/', import.meta.url);
try {
  mkdirSync(live, { recursive: true });
  const mine = new URL(String(process.pid), live);
  writeFileSync(mine, '');
  process.once('exit', () => rmSync(mine, { force: true }));
} catch {
  // A read-only install: nothing rebuilds it, so nothing needs the record.
}
await import('./${build}/${name}.js');
`;

/** Writes a file by a rename, so a reader sees the old content or the new, never a part. */
async function replace(file, text) {
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, text);
  await rename(tmp, file);
}

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
      // From the bundle's folder (`<out>/b-…/`; the staging folder is at the same depth).
      const rel = JSON.stringify(posix(path.relative(staging, args.path)));
      return { contents: text.replaceAll('import.meta.url', `new URL(${rel}, import.meta.url).href`), loader };
    });
  },
};

const sources = await sourcesHash();
const buildName = `b-${sources}`;
await mkdir(out, { recursive: true });
const stampFile = path.join(out, 'BUILD');
const current = await readJson(stampFile);
if (current?.sources === sources && existsSync(path.join(out, buildName, 'BUILD'))) {
  // Up to date: touched, so tools that compare its time with the sources' see it fresh.
  const now = new Date();
  await utimes(stampFile, now, now);
  await prune(buildName);
  process.exit(0);
}
// Bundles are built beside the final folder (same depth: the relative source URLs hold) and renamed into place.
const staging = path.join(out, `.tmp-${process.pid}`);
const final = path.join(out, buildName);
await rm(staging, { recursive: true, force: true });
const common = {
  absWorkingDir: ROOT,
  outdir: staging,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  packages: 'external',
  sourcemap: 'linked',
  sourcesContent: false,
  chunkNames: 'chunk-[hash]',
  define: { SWITCHYARD_BUNDLE_DIR: JSON.stringify(posix(path.relative(ROOT, final))) },
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
const checkoutBuild = (await readJson(path.join(ROOT, 'dist', 'BUILD')))?.sources;
await buildConsole(staging, [
  current?.sources === undefined ? undefined : path.join(out, `b-${current.sources}`),
  checkoutBuild === undefined ? undefined : path.join(ROOT, 'dist', `b-${checkoutBuild}`),
]);
const stamp = `${JSON.stringify({ builtAt: new Date().toISOString(), sources })}\n`;
await writeFile(path.join(staging, 'BUILD'), stamp);
if (existsSync(path.join(final, 'BUILD'))) await rm(staging, { recursive: true, force: true });
else {
  // The rename is the build's last step: a folder `b-…` is always whole.
  await rename(staging, final).catch(async (err) => {
    // Another build of the same sources renamed its folder first: that one is used.
    if (!existsSync(path.join(final, 'BUILD'))) throw err;
    await rm(staging, { recursive: true, force: true });
  });
}
for (const name of ['main', 'worker', 'cli']) await replace(path.join(out, `${name}.js`), entry(buildName, name));
// The build the entries named until now stopped being current now (prune keeps it a while).
const previous = current?.sources === undefined ? undefined : path.join(out, `b-${current.sources}`);
if (previous !== undefined && previous !== final && existsSync(previous)) {
  const now = new Date();
  await utimes(previous, now, now);
}
// npm pack leaves out a folder without package files; this marks the build complete.
await replace(stampFile, stamp);
await prune(buildName);
