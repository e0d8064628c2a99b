/**
 * Where the package's own files are, the same from source (tsx) and from a compiled build.
 *
 * `scripts/build.mjs` bundles the code and rewrites every `import.meta.url` to the URL its source
 * file would have in the package, so paths computed from it (the runner programs, generated/,
 * skills/) resolve alike in both forms; it also defines `SWITCHYARD_BUNDLE_DIR`, the build's
 * folder relative to the package root, for the files that exist only in a build (the delivery
 * thread, the service and worker entries).
 */
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

declare const SWITCHYARD_BUNDLE_DIR: string | undefined;

/** The package root: the folder that holds package.json, src/, generated/ and dist/. */
export const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The compiled build this code runs from, relative to PACKAGE_ROOT; undefined when it runs from source. */
export const BUNDLE_DIR: string | undefined =
  typeof SWITCHYARD_BUNDLE_DIR === 'string' ? SWITCHYARD_BUNDLE_DIR : undefined;

/**
 * A program entry (`main`, `worker`, `delivery-thread`, `export-thread`): the build's file when this runs
 * compiled, else `fromSource` (a module URL of src/).
 */
export function entryUrl(name: string, fromSource: URL): URL {
  return BUNDLE_DIR === undefined ? fromSource : pathToFileURL(path.join(PACKAGE_ROOT, BUNDLE_DIR, `${name}.js`));
}
