/**
 * Overview: runs per minute by status over the last hour, the failures of that hour grouped by
 * workflow with their first error, queue backlogs, application servers whose upstream is stale
 * or failing, and the failed or dropped event deliveries.
 */
import { api, unwrap } from '../api.ts';
import { RunsChart, type Series } from '../chart.tsx';
import { Link } from '../router.tsx';
import { Empty, Show, StatusBadge, Time, useApi } from '../ui.tsx';
import { appServers, HealthCell } from '../server-health.tsx';
import type { Delivery, Queue, QueueBatch, RunSummary } from '../../../generated/openapi/client.ts';
import { PageTitle } from '../ui.tsx';

const HOUR_MS = 3_600_000;
/** At most this many runs of the last hour are read for the chart (pages of 200). */
const MAX_PAGES = 10;

async function lastHourRuns(): Promise<{ runs: RunSummary[]; complete: boolean; since: number }> {
  const since = Math.floor((Date.now() - HOUR_MS) / 60_000) * 60_000;
  const runs: RunSummary[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const data = await unwrap(
      api.GET('/v1/runs', { params: { query: { createdAfter: new Date(since).toISOString(), limit: 200, cursor } } }),
    );
    runs.push(...data.items);
    if (!data.nextCursor) return { runs, complete: true, since };
    cursor = data.nextCursor;
  }
  return { runs, complete: false, since };
}

const STATUSES = ['COMPLETE', 'FAILED', 'TIMEOUT', 'RUNNING', 'PENDING'] as const;

function perMinute(runs: RunSummary[], since: number): { minutes: number[]; series: Series[] } {
  const minutes = Array.from({ length: 61 }, (_, i) => (since + i * 60_000) / 1000);
  const series = STATUSES.map((status) => ({
    label: status,
    colorClass: `status-${status.toLowerCase()}`,
    values: minutes.map(() => 0),
  }));
  for (const r of runs) {
    const i = Math.floor((Date.parse(r.createdAt) - since) / 60_000);
    const s = series.find((x) => x.label === r.status);
    if (s && i >= 0 && i < minutes.length) s.values[i]! += 1;
  }
  return { minutes, series };
}

function Failures({ runs }: { runs: RunSummary[] }) {
  const failed = runs.filter((r) => r.status === 'FAILED' || r.status === 'TIMEOUT');
  if (failed.length === 0)
    return <Empty title="No failures in the last hour.">Failed and timed-out runs will be listed here.</Empty>;
  const byWorkflow = new Map<string, RunSummary[]>();
  for (const r of failed) byWorkflow.set(r.automationId, [...(byWorkflow.get(r.automationId) ?? []), r]);
  return (
    <table>
      <thead>
        <tr>
          <th scope="col">Workflow</th>
          <th scope="col">Failures</th>
          <th scope="col">First error</th>
          <th scope="col">First run</th>
        </tr>
      </thead>
      <tbody>
        {[...byWorkflow].map(([automationId, list]) => {
          // Runs come newest first: the first failure of the hour is the last one.
          const first = list[list.length - 1]!;
          return (
            <tr key={automationId}>
              <td>
                <Link to={`/runs?automationId=${encodeURIComponent(automationId)}&status=FAILED`}>{automationId}</Link>
              </td>
              <td>{list.length}</td>
              <td class="wrap">{first.error ?? '—'}</td>
              <td>
                <Link to={`/runs/${first.automationId}/${first.runId}`}>
                  <Time iso={first.createdAt} />
                </Link>
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

async function queueBacklogs(): Promise<{ queue: Queue; batch: QueueBatch | undefined }[]> {
  const queues = await unwrap(api.GET('/v1/queues', { params: { query: { limit: 20 } } }));
  return Promise.all(
    queues.items.map(async (queue) => {
      const batches = await unwrap(
        api.GET('/v1/queues/{queueId}/batches', { params: { path: { queueId: queue.queueId }, query: { limit: 1 } } }),
      );
      return { queue, batch: batches.items[0] };
    }),
  );
}

function Backlogs() {
  const state = useApi(queueBacklogs, []);
  return (
    <Show state={state} what="the queues">
      {(rows) =>
        rows.length === 0 ? (
          <Empty title="No queues yet.">Create a queue (POST /v1/queues) to feed a trigger from CSV files.</Empty>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">Queue</th>
                <th scope="col">Waiting (latest batch)</th>
                <th scope="col">Running (latest batch)</th>
                <th scope="col">Latest batch</th>
              </tr>
            </thead>
            <tbody>
              {rows.map(({ queue, batch }) => (
                <tr key={queue.queueId}>
                  <td>
                    {queue.name} {queue.paused && <span class="badge">paused</span>}
                  </td>
                  <td>{batch ? batch.runsPending : 0}</td>
                  <td>{batch ? batch.runsRunning : 0}</td>
                  <td>{batch ? <StatusBadge status={batch.status} /> : <span class="muted">none</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      }
    </Show>
  );
}

async function badDeliveries(): Promise<{ collection: string; delivery: Delivery }[]> {
  const collections = await unwrap(api.GET('/v1/collections', { params: { query: { limit: 20 } } }));
  const lists = await Promise.all(
    collections.items.flatMap((c) =>
      (['failed', 'dropped'] as const).map(async (status) => {
        const page = await unwrap(
          api.GET('/v1/collections/{collectionId}/deliveries', {
            params: { path: { collectionId: c.collectionId }, query: { status, limit: 5 } },
          }),
        );
        return page.items.map((delivery) => ({ collection: c.name, delivery }));
      }),
    ),
  );
  return lists.flat().sort((a, b) => b.delivery.createdAt.localeCompare(a.delivery.createdAt));
}

function Deliveries() {
  const state = useApi(badDeliveries, []);
  return (
    <Show state={state} what="the event deliveries">
      {(rows) =>
        rows.length === 0 ? (
          <Empty title="No failed or dropped event deliveries.">
            Deliveries to collection trigger URLs that fail will be listed here.
          </Empty>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">Collection</th>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col">Error</th>
                <th scope="col">When</th>
              </tr>
            </thead>
            <tbody>
              {rows.map(({ collection, delivery }) => (
                <tr key={delivery.eventId + delivery.url}>
                  <td>{collection}</td>
                  <td>{delivery.event}</td>
                  <td>
                    <StatusBadge status={delivery.status} />
                  </td>
                  <td class="wrap">{delivery.error ?? '—'}</td>
                  <td>
                    <Time iso={delivery.createdAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      }
    </Show>
  );
}

/** Application servers whose last tool listing failed or is out of date (GET /v1/servers `health`). */
function Upstreams() {
  const state = useApi(appServers, []);
  return (
    <Show state={state} what="the application servers">
      {(all) => {
        const bad = all.filter((s) => s.health.status === 'failing' || s.health.status === 'stale');
        if (bad.length === 0)
          return (
            <Empty title="No stale or failing upstream.">
              {all.length === 0
                ? 'No application server is registered.'
                : `The ${all.length} application servers answered their last tool listing (servers not listed since the service started are not counted).`}{' '}
              See the <Link to="/gateway">Gateway</Link> page.
            </Empty>
          );
        return (
          <table>
            <thead>
              <tr>
                <th scope="col">Server</th>
                <th scope="col">Path</th>
                <th scope="col">Upstream</th>
              </tr>
            </thead>
            <tbody>
              {bad.map((s) => (
                <tr key={s.serverId}>
                  <td>{s.name}</td>
                  <td>
                    <code>/mcp/{s.path}</code>
                  </td>
                  <td class="wrap">
                    <HealthCell health={s.health} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        );
      }}
    </Show>
  );
}

export function OverviewPage() {
  const runs = useApi(lastHourRuns, []);
  return (
    <>
      <PageTitle>Overview</PageTitle>
      <section aria-labelledby="ov-runs">
        <h2 id="ov-runs">Runs per minute, last hour</h2>
        <Show state={runs} what="the runs of the last hour">
          {({ runs: list, complete, since }) =>
            list.length === 0 ? (
              <Empty title="No runs in the last hour.">
                Call a trigger (see <Link to="/workflows">Workflows &amp; triggers</Link>, “Try it”) to start one.
              </Empty>
            ) : (
              <>
                <RunsChart
                  {...perMinute(list, since)}
                  title={`Runs in the last hour by status (${list.length} runs)`}
                />
                {!complete && <p class="muted">Only the newest {list.length} runs of the hour are counted.</p>}
              </>
            )
          }
        </Show>
      </section>
      <section aria-labelledby="ov-failures">
        <h2 id="ov-failures">Failures in the last hour</h2>
        <Show state={runs} what="the failures">
          {({ runs: list }) => <Failures runs={list} />}
        </Show>
      </section>
      <section aria-labelledby="ov-queues">
        <h2 id="ov-queues">Queue backlogs</h2>
        <Backlogs />
      </section>
      <section aria-labelledby="ov-upstreams">
        <h2 id="ov-upstreams">Upstream servers that are stale or failing</h2>
        <Upstreams />
      </section>
      <section aria-labelledby="ov-deliveries">
        <h2 id="ov-deliveries">Failed and dropped event deliveries</h2>
        <Deliveries />
      </section>
    </>
  );
}
