'use strict';
/**
 * The layering of src/, checked by `npm run lint` (depcruise src --config .dependency-cruiser.cjs)
 * and by test/unit/architecture/boundaries.test.ts.
 *
 *   top        app.ts, services.ts, main.ts, worker.ts, shutdown.ts, embed.ts, cli/
 *   contexts   agents, auth, bootstrap, browser, connections, containment, engine, events, gateway,
 *              health, observability, queues, runs, triggers, and each servers/<name> as a context of its own
 *   bottom     kernel/, http/, storage/, config/, errors/ (and generated/, outside src/)
 *
 * A context imports its own files freely, the bottom freely, and another context only through
 * that context's index.ts (its public surface). Handlers are not part of that surface: the top
 * (the composition root) imports them from <context>/handlers/index.ts, and no context imports
 * another's handlers. The bottom never imports a context or the top.
 * Type-only imports count: `tsPreCompilationDeps` keeps them in the graph.
 *
 * Cycles between contexts are not forbidden: gateway/gateway.ts registers the embedded servers
 * (servers/*), which use the gateway's tool-server contract, and servers/agent-management and
 * servers/browser-automation use the agents and the browser, which call tools through the gateway.
 */

const CONTEXT =
  '(agents|auth|bootstrap|browser|connections|containment|engine|events|files|gateway|health|observability|queues|runs|triggers|servers/[^/]+)';
const BOTTOM = '^src/(kernel|http|storage|config|errors)/';
const SERVICES = '^src/services\\.ts$';
/**
 * The runner programs: separate processes started inside the sandbox (src/containment), which
 * load the shared runner module by its path, not through a context's surface. The browser box's
 * program (src/browser/box-server.cjs) is one of them.
 */
const RUNNER_PROGRAMS = '^src/(engine/sandbox/runner|browser/script-runner|browser/box-server)\\.cjs$';
const RUNNER_COMMON = '^src/containment/runner-common\\.cjs$';
const TOP = '^src/(app|services|main|worker|embed|shutdown)\\.ts$|^src/cli/';

/**
 * Files outside a handlers/ folder that are handler edge too and so may import the composition
 * types (src/services.ts): the agent channel's operation handler lives beside the channel's
 * domain code. Every other file of a context receives the narrow interfaces it uses.
 */
const SERVICES_BAG_EDGE = ['^src/agents/channel-call\\.ts$'];

module.exports = {
  forbidden: [
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
