/**
 * Runs: the organisation's runs newest first (listRuns), filtered by workflow, trigger, status
 * and creation time, paged by cursor. The filters live in the address, so a filtered list can
 * be shared and the back button returns to it.
 */
import { useState } from 'preact/hooks';
import { api, unwrap } from '../api.ts';
import { Link, navigate } from '../router.tsx';
import { Empty, PageTitle, Show, StatusBadge, Time, duration, useApi, CursorPager, useCursorPages } from '../ui.tsx';
import type { RunStatusValue, RunSummary } from '../../../generated/openapi/client.ts';

const STATUSES: RunStatusValue[] = ['PENDING', 'RUNNING', 'COMPLETE', 'FAILED', 'TIMEOUT'];

function toIso(local: string | null): string | undefined {
  if (!local) return undefined;
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

async function filterChoices() {
  const [workflows, triggers] = await Promise.all([
    unwrap(api.GET('/v1/workflows', { params: { query: { limit: 200 } } })),
    unwrap(api.GET('/v1/triggers', { params: { query: { limit: 200 } } })),
  ]);
  return { workflows: workflows.items, triggers: triggers.items };
}

function Filters({ query, onApply }: { query: URLSearchParams; onApply: () => void }) {
  const choices = useApi(filterChoices, []);
  return (
    <form
      class="filters"
      aria-label="Filter runs"
      onSubmit={(e) => {
        e.preventDefault();
        const q = new URLSearchParams();
        for (const [k, v] of new FormData(e.currentTarget)) if (typeof v === 'string' && v !== '') q.set(k, v);
        navigate(`/runs${q.size ? `?${q}` : ''}`);
        // The same filters again read the list again.
        onApply();
      }}
    >
      <div class="field">
        <label for="f-workflow">Workflow</label>
        <select id="f-workflow" name="automationId" value={query.get('automationId') ?? ''}>
          <option value="">All workflows</option>
          {choices.data?.workflows.map((w) => (
            <option key={w.automationId} value={w.automationId}>
              {w.name}
            </option>
          ))}
          {query.get('automationId') &&
            !choices.data?.workflows.some((w) => w.automationId === query.get('automationId')) && (
              <option value={query.get('automationId')!}>{query.get('automationId')}</option>
            )}
        </select>
      </div>
      <div class="field">
        <label for="f-trigger">Trigger</label>
        <select id="f-trigger" name="triggerId" value={query.get('triggerId') ?? ''}>
          <option value="">All triggers</option>
          {choices.data?.triggers.map((t) => (
            <option key={t.triggerId} value={t.triggerId}>
              {t.name} ({t.kind})
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="f-status">Status</label>
        <select id="f-status" name="status" value={query.get('status') ?? ''}>
          <option value="">Any status</option>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="f-after">Created from</label>
        <input id="f-after" name="after" type="datetime-local" value={query.get('after') ?? ''} />
      </div>
      <div class="field">
        <label for="f-before">Created before</label>
        <input id="f-before" name="before" type="datetime-local" value={query.get('before') ?? ''} />
      </div>
      <button type="submit" class="primary">
        Apply filters
      </button>
      {choices.error && (
        <p class="muted">The workflow and trigger lists could not be loaded: {choices.error.message}</p>
      )}
    </form>
  );
}

function runTime(r: RunSummary): number | undefined {
  if (!r.startedAt || !r.finishedAt) return undefined;
  return Date.parse(r.finishedAt) - Date.parse(r.startedAt);
}

export function RunsPage({ query }: { query: URLSearchParams }) {
  const pages = useCursorPages();
  const { cursor } = pages;
  const key = query.toString();
  const [forKey, setForKey] = useState(key);
  if (forKey !== key) {
    setForKey(key);
    pages.reset();
  }
  const status = query.get('status') as RunStatusValue | null;
  const runs = useApi(
    () =>
      unwrap(
        api.GET('/v1/runs', {
          params: {
            query: {
              automationId: query.get('automationId') ?? undefined,
              triggerId: query.get('triggerId') ?? undefined,
              status: status && STATUSES.includes(status) ? status : undefined,
              createdAfter: toIso(query.get('after')),
              createdBefore: toIso(query.get('before')),
              limit: 25,
              cursor,
            },
          },
        }),
      ),
    [key, cursor],
  );
  const filtered = [...query.keys()].length > 0;
  return (
    <>
      <PageTitle>Runs</PageTitle>
      <Filters query={query} onApply={runs.reload} />
      <Show state={runs} what="the runs">
        {(page) => {
          return page.items.length === 0 ? (
            filtered ? (
              <Empty title="No run matches these filters.">
                Widen the time window or clear a filter: <Link to="/runs">show all runs</Link>.
              </Empty>
            ) : (
              <Empty title="No runs yet.">
                Runs appear when a trigger is called. Open a workflow under{' '}
                <Link to="/workflows">Workflows &amp; triggers</Link> and use “Try it”.
              </Empty>
            )
          ) : (
            <>
              <table aria-describedby="runs-caption">
                <caption id="runs-caption" class="visually-hidden">
                  Runs, newest first
                </caption>
                <thead>
                  <tr>
                    <th scope="col">Run</th>
                    <th scope="col">Status</th>
                    <th scope="col">Workflow</th>
                    <th scope="col">Started by</th>
                    <th scope="col">Created</th>
                    <th scope="col">Duration</th>
                    <th scope="col">Error</th>
                  </tr>
                </thead>
                <tbody>
                  {page.items.map((r) => (
                    <tr key={r.runId}>
                      <td>
                        <Link to={`/runs/${r.automationId}/${r.runId}`}>{r.runId}</Link>
                      </td>
                      <td>
                        <StatusBadge status={r.status} />
                      </td>
                      <td>
                        <Link to={`/workflows/${r.automationId}`}>{r.automationId}</Link> v{r.automationVersion}
                      </td>
                      <td>{r.startedBy}</td>
                      <td>
                        <Time iso={r.createdAt} />
                      </td>
                      <td>{duration(runTime(r))}</td>
                      <td class="wrap">{r.error ?? ''}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <CursorPager label="Pages of runs" pages={pages} nextCursor={page.nextCursor} />
            </>
          );
        }}
      </Show>
    </>
  );
}
