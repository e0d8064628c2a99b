/**
 * The module the runner programs of tenant code share (runner-common.cjs, README.md "Runner
 * programs"): each launch grants this one file to Node's permission model and binds it into the
 * runner's view, read-only, next to the runner itself.
 */
import { fileURLToPath } from 'node:url';

/** runner-common.cjs: plain JavaScript, loaded by the runners without tsx or a loader. */
export const RUNNER_COMMON_PATH = fileURLToPath(new URL('./runner-common.cjs', import.meta.url));

/** A runner's one argument (runner-common.cjs startOptions): its start options as JSON. */
export function runnerOptionsArg(options: object): string {
  return JSON.stringify(options);
}
