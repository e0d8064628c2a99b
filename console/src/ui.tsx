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

/** "Previous page" and "Next page" over a cursor-paged list: `cursors` holds the pages before this one. */
export function CursorPager({
  label,
  cursor,
  cursors,
  nextCursor,
  setCursor,
  setCursors,
}: {
  label: string;
  cursor: string | undefined;
  cursors: (string | undefined)[];
  nextCursor: string | null | undefined;
  setCursor: (c: string | undefined) => void;
  setCursors: (c: (string | undefined)[]) => void;
}) {
  return (
    <nav class="pager" aria-label={label}>
      <button
        type="button"
        disabled={cursors.length === 0}
        onClick={() => (setCursor(cursors[cursors.length - 1]), setCursors(cursors.slice(0, -1)))}
      >
        Previous page
      </button>
      <button
        type="button"
        disabled={!nextCursor}
        onClick={() => (setCursors([...cursors, cursor]), setCursor(nextCursor ?? undefined))}
      >
        Next page
      </button>
    </nav>
  );
}

/**
 * A value read with `load` and read again every `everyMs` while `live(value)` holds; an error
 * keeps the last answer on screen. Read afresh when `key` changes.
 */
export function usePolled<T>(
  key: string,
  load: () => Promise<T>,
  { live, everyMs }: { live: (value: T) => boolean; everyMs: number },
): { value: T | undefined; error: unknown } {
  const [value, setValue] = useState<T>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    let stop = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    setValue(undefined);
    const read = async () => {
      try {
        const v = await load();
        if (stop) return;
        setValue(v);
        setError(undefined);
        if (live(v)) timer = setTimeout(read, everyMs);
      } catch (err) {
        if (!stop) setError(err);
      }
    };
    void read();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [key]);
  return { value, error };
}
