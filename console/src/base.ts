/**
 * Where the service is, seen from the page. The console's scripts are served from
 * `<service>/console/assets/` (the sources from `<service>/console/src/` by Vite's dev
 * server), so the console's own path is one level above this module's URL, and the service's
 * prefix is that path without `/console`: empty when the service runs on its own, the mount
 * path when a host application mounts it (src/embed.ts).
 */
const here = import.meta.url;

/** The console's path, `/console` or `<prefix>/console`. */
export const CONSOLE_BASE = new URL('..', here).pathname.replace(/\/+$/, '');

/** The service's path prefix: '' or the host's mount path. */
export const SERVICE_BASE = CONSOLE_BASE.replace(/\/console$/, '');

/** The service's URL on this page's origin, which the Content-Security-Policy admits. */
export const SERVICE_URL = location.origin + SERVICE_BASE;

/** A path on this page's origin as the service names it (`/v1/runs` for `<prefix>/v1/runs`). */
export function servicePath(pathname: string): string {
  return SERVICE_BASE !== '' && pathname.startsWith(`${SERVICE_BASE}/`)
    ? pathname.slice(SERVICE_BASE.length)
    : pathname;
}
