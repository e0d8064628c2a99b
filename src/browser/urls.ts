/**
 * Which URLs a browser task may open (src/browser/README.md "What a browser can reach"): pages,
 * new pages, frames and downloads are limited to http(s) and about:blank. Everything else
 * (`file:`, `view-source:`, `chrome:`, `devtools:`, other `about:` pages, `data:` and `blob:`
 * navigations, …) is refused where the service sees the request: by the relay for scripts, in
 * the operator's actions, and by Chromium's URL blocklist (CHROMIUM_POLICY) for what a page
 * starts itself.
 */

const MAX_SHOWN = 200;

/** The reason `raw` may not be opened, or undefined when it may (http, https, about:blank). */
export function navigationRefusal(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // Not an absolute URL: Playwright resolves relative ones against the page before sending them.
    return undefined;
  }
  if (url.protocol === 'http:' || url.protocol === 'https:') return undefined;
  if (url.protocol === 'about:' && url.pathname === 'blank') return undefined;
  const shown = raw.length > MAX_SHOWN ? `${raw.slice(0, MAX_SHOWN)}…` : raw;
  return `Opening ${shown} is refused: browser tasks may open http(s) pages and about:blank only (${url.protocol} URLs are not allowed).`;
}

/** Schemes a download may come from: the web, and what a page builds itself (blob:, data:). */
const DOWNLOAD_SCHEMES = new Set(['http:', 'https:', 'blob:', 'data:']);

/** The reason a download from `raw` is not saved, or undefined when it is. */
export function downloadRefusal(raw: string): string | undefined {
  try {
    if (DOWNLOAD_SCHEMES.has(new URL(raw).protocol)) return undefined;
  } catch {
    // fall through
  }
  return `downloads from ${raw.slice(0, MAX_SHOWN)} are refused (only http(s), blob: and data: downloads are saved)`;
}

/**
 * Chromium's managed policy (bound into its view at /etc/chromium/policies/managed when the
 * operating-system layer is in force): what a page navigates to by itself, a redirect, a frame
 * or a link, is checked by the browser too. `about:blank` stays allowed; other `about:` pages
 * are Chromium's own internal pages. WebRTC may not send UDP around the guarded proxy.
 */
export function chromiumPolicy(opts: { blockSchemes: boolean }): Record<string, unknown> {
  const webrtc = { WebRtcIPHandling: 'disable_non_proxied_udp' };
  if (!opts.blockSchemes) return webrtc;
  return {
    ...webrtc,
    URLBlocklist: ['file://*', 'chrome://*', 'chrome-untrusted://*', 'devtools://*', 'view-source:*', 'about:*'],
    URLAllowlist: ['about:blank'],
  };
}
