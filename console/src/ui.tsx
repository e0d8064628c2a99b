/** Shared pieces of every page: loading data, errors in the spec's shape, empty states, times. */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiFailure } from './api.ts';

export interface Loaded<T> {
  data: T | undefined;
  error: ApiFailure | undefined;
  loading: boolean;
  reload: () => void;
}

function asFailure(err: unknown): ApiFailure {
  return err instanceof ApiFailure
    ? err
    : new ApiFailure(0, 'console_error', err instanceof Error ? err.message : String(err));
}

/** Runs `load` when `deps` change (and on reload); an answer that arrives after a newer call is dropped. */
export function useApi<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: ApiFailure; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  const seq = useRef(0);
  useEffect(() => {
    const mine = ++seq.current;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => mine === seq.current && setState({ data, loading: false }),
      (err: unknown) => mine === seq.current && setState({ error: asFailure(err), loading: false }),
    );
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/** An API error as the service gave it: its message and its code. */
export function ErrorBox({ error, title }: { error: unknown; title?: string }) {
  const f = asFailure(error);
  return (
    <div class="error" role="alert">
      <strong>{title ?? 'The request failed'}</strong>
      <p>
        {f.message} <code class="code">{f.code}</code>
        {f.status > 0 && <span class="muted"> (HTTP {f.status})</span>}
      </p>
      {Array.isArray(f.details) && f.details.length > 0 && (
        <ul>
          {(f.details as { path?: string; instancePath?: string; message?: string }[]).map((d, i) => (
            <li key={i}>
              <code>{d.path ?? (d.instancePath || '/')}</code> {d.message ?? ''}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

export function Empty({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <div class="empty">
      <p>
        <strong>{title}</strong>
      </p>
      <p>{children}</p>
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="loading" role="status">
      Loading {what}…
    </p>
  );
}

/** Loading, then the error or the content. */
export function Show<T>({
  state,
  what,
  children,
}: {
  state: Loaded<T>;
  what: string;
  children: (data: T) => ComponentChildren;
}) {
  if (state.error) return <ErrorBox error={state.error} title={`Could not load ${what}`} />;
  if (state.data === undefined) return <Loading what={what} />;
  return <>{children(state.data)}</>;
}

const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span class="muted">—</span>;
  return <time dateTime={iso}>{timeFormat.format(new Date(iso))}</time>;
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge status-${status.toLowerCase()}`}>{status}</span>;
}

/** Copies `text`; says so to screen readers too. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      class="small"
      aria-label={label}
      onClick={async () => {
        await navigator.clipboard.writeText(text).catch(() => undefined);
        setDone(true);
        setTimeout(() => setDone(false), 1500);
      }}
    >
      {done ? 'Copied' : 'Copy'}
      <span class="visually-hidden" aria-live="polite">
        {done ? 'Copied to the clipboard' : ''}
      </span>
    </button>
  );
}

/** Sets the document title and moves focus to the page heading when the page changes. */
export function PageTitle({ children }: { children: string }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${children} · Switchyard console`;
    ref.current?.focus();
  }, [children]);
  return (
    <h1 tabIndex={-1} ref={ref}>
      {children}
    </h1>
  );
}

/** Where a cursor-paged list is: the cursor of the page shown and those of the pages before it. */
export interface CursorPages {
  cursor: string | undefined;
  hasPrevious: boolean;
  next(cursor: string): void;
  previous(): void;
  /** Back to the first page (the filters changed). */
  reset(): void;
}

export function useCursorPages(): CursorPages {
  const [at, setAt] = useState<{ cursor?: string | undefined; before: (string | undefined)[] }>({ before: [] });
  return {
    cursor: at.cursor,
    hasPrevious: at.before.length > 0,
    next: (cursor) => setAt((a) => ({ cursor, before: [...a.before, a.cursor] })),
    previous: () => setAt((a) => ({ cursor: a.before[a.before.length - 1], before: a.before.slice(0, -1) })),
    reset: () => setAt({ before: [] }),
  };
}

/** "Previous page" and "Next page" over a cursor-paged list. */
export function CursorPager({
  label,
  pages,
  nextCursor,
}: {
  label: string;
  pages: CursorPages;
  nextCursor: string | null | undefined;
}) {
  return (
    <nav class="pager" aria-label={label}>
      <button type="button" disabled={!pages.hasPrevious} onClick={pages.previous}>
        Previous page
      </button>
      <button type="button" disabled={!nextCursor} onClick={() => nextCursor && pages.next(nextCursor)}>
        Next page
      </button>
    </nav>
  );
}

/**
 * Reads `state` again every `everyMs` while its data is `live`; an error stops it. Returns
 * whether it is reading again.
 */
export function useReloadWhile<T>(state: Loaded<T>, live: (data: T) => boolean, everyMs: number): boolean {
  const on = state.error === undefined && state.data !== undefined && live(state.data);
  useEffect(() => {
    if (!on || state.loading) return;
    const timer = setTimeout(state.reload, everyMs);
    return () => clearTimeout(timer);
  }, [on, state.loading, state.data]);
  return on;
}

/**
 * A value read with `load` and read again every `everyMs` while `live(value)` holds; an error
 * keeps the last answer on screen. Read afresh when `key` changes: an answer for another key
 * is never shown.
 */
export function usePolled<T>(
  key: string,
  load: () => Promise<T>,
  { live, everyMs }: { live: (value: T) => boolean; everyMs: number },
): { value: T | undefined; error: ApiFailure | undefined } {
  const state = useApi(async () => ({ key, value: await load() }), [key]);
  const last = useRef<{ key: string; value: T } | undefined>(undefined);
  if (state.data?.key === key) last.current = state.data;
  useReloadWhile(state, (d) => d.key === key && live(d.value), everyMs);
  return { value: last.current?.key === key ? last.current.value : undefined, error: state.error };
}
