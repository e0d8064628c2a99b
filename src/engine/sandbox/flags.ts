/**
 * How a code runner process is started (README.md "Process layer"): its Node options, its
 * arguments, and the view of the file system it gets inside the operating-system layer
 * (src/containment). Exported so tests can start a runner with exactly these options.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  parentDirs,
  programBinds,
  programPath,
  RUNNER_COMMON_PATH,
  runnerOptionsArg,
  type ContainSpec,
} from '../../containment/index.js';
import type { SandboxLimits } from './limits.js';

/** The runner is plain JavaScript next to this file, so it starts without tsx or a loader. */
export const RUNNER_PATH = fileURLToPath(new URL('./runner.cjs', import.meta.url));

const requireHere = createRequire(import.meta.url);

let addon: string | undefined;

/**
 * The isolated-vm addon built for this Node (its prebuilt binary for Node 22 and 24), loaded by
 * the runner directly: the package's own loader probes files the permission model refuses.
 */
export function addonPath(): string {
  if (addon) return addon;
  const gypBuild = requireHere('node-gyp-build') as { path(dir: string): string };
  addon = gypBuild.path(path.dirname(requireHere.resolve('isolated-vm')));
  return addon;
}

/** Heap of the runner's own (host) isolate: it holds no step data beyond one result and its files' handles. */
const HOST_HEAP_MB = 96;

/**
 * Tests only (README.md "Testing the outer layers"): `process` hands the runner's own process
 * to steps, as if the language layer were broken; `unrestricted` also starts the runner without
 * Node's permission model, so that only its user and the operating-system layer hold.
 */
export type Breach = 'off' | 'process' | 'unrestricted';

/** The runner's own program: Node, the runner, the runners' shared module and the addon. */
function program(): [node: string, runner: string, common: string, addon: string] {
  return [process.execPath, RUNNER_PATH, RUNNER_COMMON_PATH, addonPath()];
}

export interface RunnerArgs {
  limits: SandboxLimits;
  /** Contexts kept per isolate for reuse (0: none). */
  contexts: number;
  /** The user the runner switches to (a root service), or undefined. */
  uid: number | undefined;
  /** The memory class whose isolate and context are made before `ready`. */
  warmMemoryMb: number;
  /** Tests only: steps get the runner's own `process` unless `off`. */
  breach: Breach;
}

/**
 * A runner's whole command line: Node, its options, the runner and its one argument (its
 * settings as JSON, src/containment/runner-common.cjs startOptions), with every path as the
 * runner sees it: at its neutral path in the view when `contained` (src/containment
 * programPath), else the host's.
 *
 * Node options: the permission model denies by default what is not granted: file writes, child
 * processes, worker threads, WASI and the inspector; reads are granted for the runner, the
 * runners' shared module and the addon alone, and addons (isolated-vm) are allowed.
 * - `--disallow-code-generation-from-strings`: the runner's own realm cannot compile strings.
 * - `--no-warnings`: the permission model's warnings would only fill the stderr tail we keep.
 * Under a test breach the realm must compile the step, so that flag is left out.
 */
export function runnerCommand(args: RunnerArgs, { contained }: { contained: boolean }): string[] {
  const [node, runner, common, addon] = contained
    ? (program().map(programPath) as ReturnType<typeof program>)
    : program();
  const permission = [
    '--permission',
    `--allow-fs-read=${runner}`,
    `--allow-fs-read=${common}`,
    `--allow-fs-read=${addon}`,
    '--allow-addons',
  ];
  return [
    node,
    ...(args.breach === 'unrestricted' ? [] : permission),
    `--max-old-space-size=${HOST_HEAP_MB}`,
    ...(args.breach === 'off' ? ['--disallow-code-generation-from-strings'] : []),
    '--no-warnings',
    runner,
    runnerOptionsArg({ ...args, addon }),
  ];
}

/**
 * What a runner sees inside the operating-system layer: its program (Node, the runner, the
 * runners' shared module and the addon) bound alone, read-only, at neutral paths; a private
 * /tmp; no network. Threads count against `maxProcesses`: Node and isolated-vm use about 15.
 */
export function runnerView(): ContainSpec {
  const binds = programBinds(program());
  return {
    readOnly: [],
    binds,
    dirs: parentDirs(binds.map((b) => b.target)),
    maxProcesses: 64,
  };
}
