/**
 * How a sandbox process is started (src/engine/README.md: "no access to the service's own modules,
 * files or environment"). Exported so a test can start a process with exactly these flags
 * and check the process-level boundary on its own, independent of the vm boundary.
 */
import type { ForkOptions } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { SandboxLimits } from './limits.js';

/** The runner is plain JavaScript next to this file, so it starts without tsx or a loader. */
export const RUNNER_PATH = fileURLToPath(new URL('./runner.cjs', import.meta.url));

/**
 * The permission model's switch: `--experimental-permission` on Node 20 and early 22/23;
 * `--permission` from 22.13 and 23.5, where the feature became stable (Node 24 accepts only
 * `--permission`).
 */
export function permissionFlag(version: string = process.versions.node): string {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  const stable = major >= 24 || (major === 23 && minor >= 5) || (major === 22 && minor >= 13);
  return stable ? '--permission' : '--experimental-permission';
}

/**
 * Node options of a sandbox process. The permission model denies by default everything not
 * granted: fs writes, child processes, worker threads, native addons, WASI (and the inspector
 * on Node 24); reads are granted for the runner file alone.
 * - `--max-old-space-size`: the step's heap limit; an allocation beyond it kills the process.
 * - `--disallow-code-generation-from-strings`: the runner's own realm cannot compile strings,
 *   so the classic escape `x.constructor.constructor('return process')()` has nothing to run
 *   even if a host-realm object ever leaked into a step (steps keep eval in their context).
 * - `--experimental-vm-modules`: without it Node answers import() in a vm script with an error
 *   object of the runner's realm; with it our refusing callback runs instead (runner.cjs).
 * - `--no-warnings`: the experimental warnings would only fill the stderr tail we keep.
 */
export function sandboxExecArgv(memoryMb: number, version: string = process.versions.node): string[] {
  return [
    permissionFlag(version),
    `--allow-fs-read=${RUNNER_PATH}`,
    `--max-old-space-size=${memoryMb}`,
    '--disallow-code-generation-from-strings',
    '--experimental-vm-modules',
    '--no-warnings',
  ];
}

/**
 * fork() options: the service's environment never reaches the child (`env: {}`; Node removes
 * the IPC variables it adds itself), the service's execArgv (tsx loader) is not inherited,
 * the working directory is an empty folder, stdout is dropped (steps cannot print) and stderr
 * is piped so a fatal message (heap limit) can be reported. `advanced` serialization lets
 * Buffers cross without base64.
 */
export function sandboxForkOptions(memoryMb: number, cwd: string): ForkOptions {
  return {
    execPath: process.execPath,
    execArgv: sandboxExecArgv(memoryMb),
    env: {},
    cwd,
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  };
}

/** Arguments of the runner: its limits as JSON, then how many contexts it keeps for reuse (0: none). */
export function runnerArgs(limits: SandboxLimits, contexts = 0): string[] {
  return [JSON.stringify(limits), String(contexts)];
}
