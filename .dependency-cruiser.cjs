'use strict';
/**
 * The layering of src/, checked by `npm run lint` (depcruise src --config .dependency-cruiser.cjs)
 * and by test/unit/architecture/boundaries.test.ts.
 *
 *   top        app.ts, services.ts, main.ts, worker.ts, shutdown.ts, embed.ts, cli/, console/
 *   contexts   agents, auth, bootstrap, browser, connections, containment, engine, events, files, gateway,
 *              health, observability, queues, runs, triggers, and each servers/<name> as a context of its own
 *   bottom     kernel/, http/, storage/, config/, errors/ (and generated/, outside src/)
 *
 * A context imports its own files freely, the bottom freely, and another context only through
 * that context's index.ts (its public surface). Handlers are not part of that surface: the top
 * (the composition root) imports them from <context>/handlers/index.ts, and no context imports
 * another's handlers. The bottom never imports a context or the top.
 * Type-only imports count: `tsPreCompilationDeps` keeps them in the graph.
 *
 * The contexts are layered with no loop (`context-layers`, `no-circular`): the layers are the
 * numbered lines of the diagram in src/README.md, read here, so the diagram is the one checked.
 */

const fs = require('node:fs');
const path = require('node:path');

const CONTEXT =
  '(agents|auth|bootstrap|browser|connections|containment|engine|events|files|gateway|health|observability|queues|runs|triggers|servers/[^/]+)';
const BOTTOM = '^src/(kernel|http|storage|config|errors)/';

/**
 * The context layers, bottom first, from the fenced diagram under "## Layers" in src/README.md:
 * each line `<number>  <context>, <context>, …` is a layer (`servers/*` is every embedded server).
 * Every context of CONTEXT must be on exactly one line.
 */
function readLayers() {
  const readme = fs.readFileSync(path.join(__dirname, 'src/README.md'), 'utf8');
  const section = readme.split(/^## Layers$/m)[1];
  const block = section && /```text\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('src/README.md: no ```text diagram under "## Layers"');
  const layers = [];
  for (const line of block[1].split('\n')) {
    const m = /^(\d+)\s+(.+)$/.exec(line.trim());
    if (m) layers.push({ n: Number(m[1]), contexts: m[2].split(',').map((c) => c.trim().replace(/\*$/, '[^/]+')) });
  }
  layers.sort((a, b) => a.n - b.n);
  const known = CONTEXT.slice(1, -1).split('|');
  const placed = layers.flatMap((l) => l.contexts);
  for (const c of known)
    if (placed.filter((p) => p === c).length !== 1)
      throw new Error(`src/README.md: context ${c} must be on exactly one line of the layer diagram`);
  for (const c of placed) if (!known.includes(c)) throw new Error(`src/README.md: ${c} is not a context`);
  return layers.map((l) => l.contexts);
}
const LAYERS = readLayers();

/**
 * One rule per layer: its contexts import, by value, no context of their own layer or above
 * (their own files they import freely). Type-only imports are not checked: they leave no import
 * at run time and so no loop at start.
 */
const layerRules = LAYERS.map((contexts, i) => ({
  name: 'context-layers',
  comment:
    `Layer ${i + 1} (${contexts.join(', ')}) imports by value only contexts of lower layers ` +
    '(src/README.md, "Layers").',
  severity: 'error',
  from: { path: `^src/(${contexts.join('|')})/` },
  to: {
    path: `^src/(${LAYERS.slice(i).flat().join('|')})/`,
    pathNot: '^src/$1/',
    dependencyTypesNot: ['type-only'],
  },
}));
const SERVICES = '^src/services\\.ts$';
/**
 * The runner programs: separate processes started inside the sandbox (src/containment), which
 * load the shared runner module by its path, not through a context's surface. The browser box's
 * program (src/browser/box-server.cjs) is one of them.
 */
const RUNNER_PROGRAMS = '^src/(engine/sandbox/runner|browser/script-runner|browser/box-server)\\.cjs$';
const RUNNER_COMMON = '^src/containment/runner-common\\.cjs$';
const TOP = '^src/(app|services|main|worker|embed|shutdown)\\.ts$|^src/(cli|console)/';

/**
 * Files outside a handlers/ folder that are handler edge too and so may import the composition
 * types (src/services.ts): the agent channel's operation handler lives beside the channel's
 * domain code. Every other file of a context receives the narrow interfaces it uses.
 */
const SERVICES_BAG_EDGE = ['^src/agents/channel-call\\.ts$'];

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'no-circular',
      comment:
        'No module loop through value imports: a loop makes the start order depend on which module ' +
        'is loaded first (type-only imports are left out; they vanish at run time).',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'bottom-imports-no-context',
      comment:
        'kernel/, http/, storage/, config/ and errors/ are the bottom layer: they import each other, ' +
        'Node and npm packages, never a context, servers/ or the top (app.ts, services.ts, entry points, cli/).',
      severity: 'error',
      from: { path: BOTTOM },
      to: { path: '^src/', pathNot: BOTTOM },
    },
    {
      name: 'generated-imports-no-src',
      comment: 'Types flow one way, spec -> generated -> src: generated/ imports nothing from src/.',
      severity: 'error',
      from: { path: '^generated/' },
      to: { path: '^src/' },
    },
    {
      name: 'context-through-index',
      comment:
        'A context uses another context only through its index.ts (its public surface); its own ' +
        'files it imports freely. servers/<name> is a context of its own.',
      severity: 'error',
      from: { path: `^src/${CONTEXT}/`, pathNot: RUNNER_PROGRAMS },
      to: {
        path: `^src/${CONTEXT}/`,
        pathNot: ['^src/$1/', `^src/${CONTEXT}/index\\.ts$`],
      },
    },
    {
      name: 'runner-programs-self-contained',
      comment:
        'The runner programs run inside the sandbox, where only their own file and ' +
        'src/containment/runner-common.cjs are bound: they require nothing else of src/.',
      severity: 'error',
      from: { path: RUNNER_PROGRAMS },
      to: { path: '^src/', pathNot: RUNNER_COMMON },
    },
    {
      name: 'top-through-index',
      comment:
        'The composition root, the entry points and cli/ import a context only through its index.ts, ' +
        'and its handlers through <context>/handlers/index.ts.',
      severity: 'error',
      from: { path: TOP },
      to: { path: `^src/${CONTEXT}/`, pathNot: `^src/${CONTEXT}/(handlers/)?index\\.ts$` },
    },
    {
      name: 'context-imports-no-top',
      comment:
        'Contexts never import the top (app.ts, the entry points, cli/); for src/services.ts see ' +
        'services-type-at-handler-edge.',
      severity: 'error',
      from: { path: `^src/${CONTEXT}/` },
      to: { path: TOP, pathNot: SERVICES },
    },
    {
      name: 'services-type-at-handler-edge',
      comment:
        'A context may import the composition type `Services` (src/services.ts) only at the handler ' +
        'edge: files under <context>/handlers/, and the files in SERVICES_BAG_EDGE that take the whole ' +
        'bag outside a handlers/ folder. Domain code receives the narrow interfaces it uses.',
      severity: 'error',
      from: { path: `^src/${CONTEXT}/`, pathNot: [`^src/${CONTEXT}/handlers/`, ...SERVICES_BAG_EDGE] },
      to: { path: SERVICES },
    },
    {
      name: 'services-type-only',
      comment: 'The handler edge imports `Services` as a type only (`import type`): never a value of the top.',
      severity: 'error',
      from: { path: `^src/${CONTEXT}/` },
      to: { path: SERVICES, dependencyTypesNot: ['type-only'] },
    },
  ],
  allowed: [],
  options: {
    doNotFollow: { path: ['node_modules'] },
    tsPreCompilationDeps: true,
    skipAnalysisNotInRules: true,
    moduleSystems: ['es6', 'cjs'],
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.d.ts'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
