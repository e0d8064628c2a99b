/**
 * One run: its summary (listRuns), and its steps, results and files from the polling endpoints
 * (spec 3 and 4), read with a trigger API key of the organisation the user types (kept in
 * memory only). While the run is PENDING or RUNNING the page polls its status every 2 seconds
 * (spec "Limits": 2 to 5 seconds) and reads the results when it ends.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, unwrap } from '../api.ts';
import { rememberKey, rememberedKey } from '../keys.ts';
import { Link } from '../router.tsx';
import { ErrorBox, PageTitle, Show, StatusBadge, Time, duration, useApi, Loading } from '../ui.tsx';
import { seenRuns } from './runs.tsx';
import type { RunResults, RunStatus, RunSummary } from '../../../generated/openapi/client.ts';

const POLL_MS = 2000;
const LIVE = new Set(['PENDING', 'RUNNING']);

/** The summary of a run not seen in a list: the workflow's runs are searched, newest first. */
async function findSummary(automationId: string, runId: string): Promise<RunSummary | null> {
  const known = seenRuns.get(runId);
  if (known) return known;
  let cursor: string | undefined;
  for (let page = 0; page < 5; page++) {
    const data = await unwrap(api.GET('/v1/runs', { params: { query: { automationId, limit: 200, cursor } } }));
    const hit = data.items.find((r) => r.runId === runId);
    if (hit) return hit;
    if (!data.nextCursor) return null;
    cursor = data.nextCursor;
  }
  return null;
}

function KeyForm({ onKey }: { onKey: (k: string) => void }) {
  return (
    <form
      class="inline-form"
      onSubmit={(e) => {
        e.preventDefault();
        const v = String(new FormData(e.currentTarget).get('apiKey') ?? '').trim();
        if (v) onKey(v);
      }}
    >
      <div class="field">
        <label for="run-key">Trigger API key</label>
        <input id="run-key" name="apiKey" type="password" autocomplete="off" required aria-describedby="run-key-help" />
        <p class="help" id="run-key-help">
          Steps, results and files are read through the polling endpoints, which take an API key of the organisation (
          <code>switchyard keys create</code>). It stays in this tab's memory only.
        </p>
      </div>
      <button type="submit" class="primary">
        Show steps and results
      </button>
    </form>
  );
}

function Timeline({ status, results }: { status: RunStatus; results: RunResults | undefined }) {
  const steps = Object.entries(status.stepInfo ?? {})
    .map(([index, info]) => ({ index: Number(index), ...info }))
    .sort((a, b) => (a.executionOrder || 1e9) - (b.executionOrder || 1e9) || a.index - b.index);
  const byIndex = new Map((results?.results ?? []).map((r) => [r.stepIndex, r]));
  const longest = Math.max(1, ...[...byIndex.values()].map((r) => r.duration));
  return (
    <ol class="timeline">
      {steps.map((s) => {
        const r = byIndex.get(s.index);
        return (
          <li key={s.index}>
            <div class="step-head">
              <span class="step-name">
                {s.index}. {s.name}
              </span>
              <StatusBadge status={s.status} />
              <span>{r ? duration(r.duration) : ''}</span>
              {r && <span class="muted">exit code {r.exitCode}</span>}
            </div>
            {r && (
              <div class="bar" aria-hidden="true">
                <span
                  ref={(el) => {
                    if (el) el.style.width = `${Math.max(1, (r.duration / longest) * 100)}%`;
                  }}
                />
              </div>
            )}
            {r && Object.keys(r.resultUrls).length > 0 && (
              <ul class="files">
                {Object.entries(r.resultUrls).map(([name, f]) => (
                  <li key={name}>
                    <a href={f.url} download={name}>
                      {name}
                    </a>{' '}
                    <span class="muted">
                      {f.mimeType}, {f.size} bytes
                    </span>
                  </li>
                ))}
              </ul>
            )}
          </li>
        );
      })}
    </ol>
  );
}

function Steps({ automationId, runId, apiKey }: { automationId: string; runId: string; apiKey: string }) {
  const [status, setStatus] = useState<RunStatus>();
  const [results, setResults] = useState<RunResults>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    let stop = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const path = { apiKey, automationId, runId };
    const poll = async () => {
      try {
        const s = await unwrap(
          api.GET('/ext/webhook/{apiKey}/runs/{automationId}/{runId}/status', { params: { path } }),
        );
        if (stop) return;
        setStatus(s);
        setError(undefined);
        if (!LIVE.has(s.status) || Object.values(s.stepStatus ?? {}).some((v) => v !== 'PENDING' && v !== 'RUNNING')) {
          const r = await unwrap(
            api.GET('/ext/webhook/{apiKey}/runs/{automationId}/{runId}/results', { params: { path } }),
          );
          if (!stop) setResults(r);
        }
        if (LIVE.has(s.status) && !stop) timer = setTimeout(poll, POLL_MS);
      } catch (err) {
        if (!stop) setError(err);
      }
    };
    void poll();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [automationId, runId, apiKey]);
  if (error) return <ErrorBox error={error} title="Could not read the run's steps" />;
  if (!status) return <Loading what="the steps" />;
  return (
    <>
      <p aria-live="polite">
        Status <StatusBadge status={status.status} />
        {LIVE.has(status.status) && <span class="muted"> — updating every {POLL_MS / 1000} s</span>}
      </p>
      <h2>Steps</h2>
      <Timeline status={status} results={results} />
      {results?.designatedOutput && (
        <>
          <h2>Designated output</h2>
          <p>
            <a href={results.designatedOutput.url} download={results.designatedOutput.fileName}>
              {results.designatedOutput.fileName}
            </a>{' '}
            <span class="muted">
              {results.designatedOutput.mimeType}, {results.designatedOutput.size} bytes
            </span>
          </p>
        </>
      )}
    </>
  );
}

export function RunDetailPage({ automationId, runId }: { automationId: string; runId: string }) {
  const summary = useApi(() => findSummary(automationId, runId), [automationId, runId]);
  const [apiKey, setApiKey] = useState(rememberedKey());
  return (
    <>
      <PageTitle>{`Run ${runId}`}</PageTitle>
      <p>
        <Link to="/runs">All runs</Link> · workflow <Link to={`/workflows/${automationId}`}>{automationId}</Link>
      </p>
      <Show state={summary} what="the run">
        {(r) =>
          r === null ? (
            <p class="muted">This run is not among the workflow's recent runs; its steps can still be read below.</p>
          ) : (
            <dl class="facts">
              <dt>Status</dt>
              <dd>
                <StatusBadge status={r.status} />
              </dd>
              <dt>Version</dt>
              <dd>{r.automationVersion}</dd>
              <dt>Trigger</dt>
              <dd>{r.triggerId ?? '—'}</dd>
              <dt>Started by</dt>
              <dd>{r.startedBy}</dd>
              <dt>Created</dt>
              <dd>
                <Time iso={r.createdAt} />
              </dd>
              <dt>Started</dt>
              <dd>
                <Time iso={r.startedAt} />
              </dd>
              <dt>Finished</dt>
              <dd>
                <Time iso={r.finishedAt} />
              </dd>
              {r.error && (
                <>
                  <dt>Error</dt>
                  <dd class="wrap">{r.error}</dd>
                </>
              )}
            </dl>
          )
        }
      </Show>
      {apiKey ? (
        <>
          <Steps automationId={automationId} runId={runId} apiKey={apiKey} />
          <button type="button" class="link" onClick={() => (rememberKey(''), setApiKey(undefined))}>
            Forget the API key
          </button>
        </>
      ) : (
        <KeyForm onKey={(k) => (rememberKey(k), setApiKey(k))} />
      )}
    </>
  );
}
