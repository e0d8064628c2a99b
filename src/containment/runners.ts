/**
 * The module the runner programs of tenant code share (runner-common.cjs, README.md "Runner
 * programs"): each launch grants this one file to Node's permission model and binds it into the
 * runner's view, read-only, next to the runner itself.
 */
import { fileURLToPath } from 'node:url';
import common from './runner-common.cjs';

/** runner-common.cjs: plain JavaScript, loaded by the runners without tsx or a loader. */
export const RUNNER_COMMON_PATH = fileURLToPath(new URL('./runner-common.cjs', import.meta.url));

/** Versions of the runners' messages (runner-common.cjs PROTOCOL): the runners read the same object. */
export const RUNNER_PROTOCOL = common.PROTOCOL;

/** Message types both sides of the runners' channels use (runner-common.cjs MESSAGE). */
export const RUNNER_MESSAGE = common.MESSAGE;

/** Exit codes of a runner that ends itself (runner-common.cjs EXIT). */
export const RUNNER_EXIT = common.EXIT;

/** A runner's one argument (runner-common.cjs startOptions): its start options as JSON. */
export function runnerOptionsArg(options: object): string {
  return JSON.stringify(options);
}
