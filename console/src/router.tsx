/**
 * Client-side routes under the console's path (`/console`) with the History API: a route is a path pattern with
 * `:name` segments; the service answers index.html for every such path (src/console).
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { CONSOLE_BASE } from './base.ts';

/** The console's path, under the service's mount prefix when it has one (base.ts). */
export const BASE = CONSOLE_BASE;

const listeners = new Set<() => void>();
window.addEventListener('popstate', () => listeners.forEach((fn) => fn()));

/** The path inside the console (`/runs`), and its query. */
export interface Location {
  path: string;
  query: URLSearchParams;
}

function read(): Location {
  const p = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname;
  return { path: p === '' ? '/' : p, query: new URLSearchParams(location.search) };
}

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  const url = BASE + (to === '/' ? '/' : to);
  if (opts.replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  listeners.forEach((fn) => fn());
}

export function useLocation(): Location {
  const [loc, setLoc] = useState(read);
  useEffect(() => {
    const fn = () => setLoc(read());
    listeners.add(fn);
    return () => void listeners.delete(fn);
  }, []);
  return loc;
}

/** The named segments of `path` when it matches `pattern`, else undefined. */
export function match(pattern: string, path: string): Record<string, string> | undefined {
  const a = pattern.split('/').filter(Boolean);
  const b = path.split('/').filter(Boolean);
  if (a.length !== b.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    const seg = a[i]!;
    if (seg.startsWith(':')) params[seg.slice(1)] = decodeURIComponent(b[i]!);
    else if (seg !== b[i]) return undefined;
  }
  return params;
}

interface LinkProps {
  to: string;
  children: ComponentChildren;
  class?: string;
  'aria-current'?: 'page' | undefined;
  'aria-label'?: string;
}

/** An ordinary link (opens in a new tab, copies) that moves inside the app on a plain click. */
export function Link({ to, children, ...rest }: LinkProps) {
  return (
    <a
      {...rest}
      href={BASE + to}
      onClick={(e) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(to);
      }}
    >
      {children}
    </a>
  );
}
