/**
 * One run (getRun, read with the signed-in token): its summary, inputs, every step with its
 * status, duration, result and files, and the designated output. While the run is PENDING or
 * RUNNING the page reads it again every 2 seconds (spec "Limits": 2 to 5 seconds).
 */
import { api, unwrap } from '../api.ts';
import { Link } from '../router.tsx';
import { ErrorBox, PageTitle, StatusBadge, Time, duration, Loading, usePolled } from '../ui.tsx';
import type { RunDetail, RunDetailStep } from '../../../generated/openapi/client.ts';

const POLL_MS = 2000;
const LIVE = new Set(['PENDING', 'RUNNING']);

function Step({ step, longest }: { step: RunDetailStep; longest: number }) {
  return (
    <li>
      <div class="step-head">
        <span class="step-name">
          {step.stepIndex}. {step.name}
        </span>
        <StatusBadge status={step.status} />
        <span>{step.durationMs !== null ? duration(step.durationMs) : ''}</span>
        {step.exitCode !== null && <span class="muted">exit code {step.exitCode}</span>}
        <span class="muted">step version {step.stepVersion}</span>
      </div>
      {step.durationMs !== null && (
        <div class="bar" aria-hidden="true">
          <span
            ref={(el) => {
              if (el) el.style.width = `${Math.max(1, ((step.durationMs ?? 0) / longest) * 100)}%`;
            }}
          />
        </div>
      )}
      {step.result !== null && step.result !== '' && (
        <details>
          <summary>Result ({step.resultType ?? 'plaintext'})</summary>
          <pre class="wrap">{step.result}</pre>
        </details>
      )}
      {step.files.length > 0 && (
        <ul class="files">
          {step.files.map((f) => (
            <li key={f.fileName}>
              <a href={f.url} download={f.fileName}>
                {f.fileName}
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
}

function Facts({ run }: { run: RunDetail }) {
  return (
    <dl class="facts">
      <dt>Status</dt>
      <dd>
        <StatusBadge status={run.status} />
        {LIVE.has(run.status) && <span class="muted"> — updating every {POLL_MS / 1000} s</span>}
      </dd>
      <dt>Workflow</dt>
      <dd>
        <Link to={`/workflows/${run.automationId}`}>{run.automationName || run.automationId}</Link> (version{' '}
        {run.automationVersion})
      </dd>
      <dt>Trigger</dt>
      <dd>{run.triggerId ?? '—'}</dd>
      <dt>Started by</dt>
      <dd>{run.startedBy}</dd>
      <dt>Created</dt>
      <dd>
        <Time iso={run.createdAt} />
      </dd>
      <dt>Started</dt>
      <dd>
        <Time iso={run.startedAt} />
      </dd>
      <dt>Finished</dt>
      <dd>
        <Time iso={run.finishedAt} />
      </dd>
      {run.error && (
        <>
          <dt>Error</dt>
          <dd class="wrap">{run.error}</dd>
        </>
      )}
    </dl>
  );
}

/** The run, read again while it is live; an error keeps the last answer on screen. */
function useRun(runId: string): { run: RunDetail | undefined; error: unknown } {
  const { value, error } = usePolled(
    runId,
    () => unwrap(api.GET('/v1/runs/{runId}', { params: { path: { runId } } })),
    {
      live: (r) => LIVE.has(r.status),
      everyMs: POLL_MS,
    },
  );
  return { run: value, error };
}

export function RunDetailPage({ automationId, runId }: { automationId: string; runId: string }) {
  const { run, error } = useRun(runId);
  const longest = Math.max(1, ...(run?.steps ?? []).map((s) => s.durationMs ?? 0));
  return (
    <>
      <PageTitle>{`Run ${runId}`}</PageTitle>
      <p>
        <Link to="/runs">All runs</Link> · workflow <Link to={`/workflows/${automationId}`}>{automationId}</Link>
      </p>
      {error !== undefined && <ErrorBox error={error} title="Could not read the run" />}
      {!run && error === undefined && <Loading what="the run" />}
      {run && (
        <>
          <div aria-live="polite">
            <Facts run={run} />
          </div>
          <h2>Steps</h2>
          <ol class="timeline">
            {run.steps.map((s) => (
              <Step key={s.stepIndex} step={s} longest={longest} />
            ))}
          </ol>
          {run.designatedOutput && (
            <>
              <h2>Designated output</h2>
              <p>
                <a href={run.designatedOutput.url} download={run.designatedOutput.fileName}>
                  {run.designatedOutput.fileName}
                </a>{' '}
                <span class="muted">
                  {run.designatedOutput.mimeType}, {run.designatedOutput.size} bytes
                </span>
              </p>
            </>
          )}
          <h2>Inputs</h2>
          <pre class="wrap">{JSON.stringify(run.inputs, null, 2)}</pre>
        </>
      )}
    </>
  );
}
